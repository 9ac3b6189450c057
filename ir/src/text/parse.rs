//! The `.weft` parser: recursive descent over the lexer's tokens, building the graph through
//! the builder API statement by statement, so every check the API makes applies and its errors
//! are reported at the statement's position.
//!
//! Axis handles (`name` or `name@N`) and node handles (names or `%N` labels) are local to the
//! source: `%N` and `@N` need not match arena indices. Derived axes made by an op without a
//! declaration can be referred to by their generated names (e.g. `"H[1:3]"`).

use super::lexer::{tokenize, Tok, Token};
use super::{did_you_mean, ParseError, SourcePos, KEYWORDS};
use crate::axis::{Axis, AxisDef, AxisId, Role, SliceRange, WindowKernel, WindowStep};
use crate::dtype::DType;
use crate::graph::{
    AxisSlice, BinaryOp, CompareOp, ConvSpec, Graph, GraphError, NodeId, PoolKind, PoolSpec,
    ReduceOp, TensorInit, TensorKind, UnaryOp,
};
use crate::host::{ArrayData, Scalar};
use std::collections::{HashMap, HashSet};

/// Parses `.weft` source; `file` names it in error positions.
pub fn parse(source: &str, file: &str) -> Result<Graph, ParseError> {
    let toks = tokenize(source, file)?;
    let mut p = Parser {
        toks,
        at: 0,
        file,
        graph: Graph::new(),
        labels: HashMap::new(),
        axes: HashMap::new(),
        declared_axes: HashSet::new(),
        synced_axes: 0,
    };
    p.run()?;
    Ok(p.graph)
}

/// How source text names an axis-table entry: a name and an optional `@N` tag.
type AxisKey = (String, Option<u64>);

/// How source text names a node.
enum NodeHandle {
    Name(String),
    Label(u32),
}

impl NodeHandle {
    fn same(&self, other: &NodeHandle) -> bool {
        match (self, other) {
            (NodeHandle::Name(a), NodeHandle::Name(b)) => a == b,
            (NodeHandle::Label(a), NodeHandle::Label(b)) => a == b,
            _ => false,
        }
    }
}

struct Parser<'s> {
    toks: Vec<Token>,
    at: usize,
    file: &'s str,
    graph: Graph,
    labels: HashMap<u32, NodeId>,
    axes: HashMap<AxisKey, AxisId>,
    declared_axes: HashSet<AxisId>,
    synced_axes: usize,
}

/// The ops spelled by keyword rather than by an op enum's name (`op_call`'s match arms, and
/// `grad`, which `op_statement` reads because it may name several results;
/// `structural_ops_all_parse` in the tests keeps the two in step).
const STRUCTURAL_OPS: [&str; 18] = [
    "select",
    "convert",
    "dot",
    "broadcast",
    "axes_with_order",
    "cast_axes",
    "transpose",
    "slice",
    "flatten",
    "unflatten",
    "pad",
    "concat",
    "expand_dims",
    "assign",
    "convolution",
    "max_pool",
    "avg_pool",
    "grad",
];

type PResult<T> = Result<T, ParseError>;

/// The derivations an axis declaration may spell.
const DERIVATIONS: [&str; 6] = ["slice", "pad", "flatten", "concat", "window", "features"];

/// A convolution's or pool's argument after its operands.
enum WindowArg {
    /// `groups=N`.
    Groups(usize),
    /// `Role=(...)`: the role, a pool's window length, the step.
    Role(Role, Option<usize>, WindowStep),
}

impl Parser<'_> {
    // ---- tokens ----------------------------------------------------------------------------

    fn peek(&self) -> &Tok {
        &self.toks[self.at].tok
    }

    fn pos_of(&self, i: usize) -> SourcePos {
        let t = &self.toks[i.min(self.toks.len() - 1)];
        SourcePos {
            file: self.file.to_string(),
            line: t.line,
            col: t.col,
        }
    }

    fn next(&mut self) -> Tok {
        let t = self.toks[self.at].tok.clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn error_at<T>(&self, i: usize, expected: impl Into<String>, found: String) -> PResult<T> {
        self.error_with_help(i, expected, found, None)
    }

    fn error_with_help<T>(
        &self,
        i: usize,
        expected: impl Into<String>,
        found: String,
        help: Option<String>,
    ) -> PResult<T> {
        Err(ParseError::Expected {
            pos: self.pos_of(i),
            expected: expected.into(),
            found,
            help,
        })
    }

    /// The name token `i` holds, if it is one (for a "did you mean").
    fn name_at(&self, i: usize) -> Option<&str> {
        match &self.toks.get(i)?.tok {
            Tok::Ident(s) | Tok::Str(s) => Some(s),
            _ => None,
        }
    }

    fn expected<T>(&self, expected: impl Into<String>) -> PResult<T> {
        self.error_at(self.at, expected, self.peek().describe())
    }

    fn graph_err(&self, i: usize) -> impl Fn(GraphError) -> ParseError + '_ {
        move |source| ParseError::Graph {
            pos: self.pos_of(i),
            source: Box::new(source),
        }
    }

    fn is_punct(&self, c: char) -> bool {
        *self.peek() == Tok::Punct(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> PResult<()> {
        if self.eat(c) {
            Ok(())
        } else {
            self.expected(format!("`{c}`"))
        }
    }

    fn end_of_statement(&mut self) -> PResult<()> {
        match self.peek() {
            Tok::Newline => {
                self.next();
                Ok(())
            }
            Tok::Eof => Ok(()),
            _ => self.expected("end of line"),
        }
    }

    // ---- statements ------------------------------------------------------------------------

    fn run(&mut self) -> PResult<()> {
        loop {
            match self.peek().clone() {
                Tok::Eof => return Ok(()),
                Tok::Newline => {
                    self.next();
                    continue;
                }
                Tok::Ident(w) if w == "axis" => {
                    self.next();
                    self.axis_decl()?;
                }
                Tok::Ident(w) if w == "output" => {
                    self.next();
                    self.outputs()?;
                }
                Tok::Ident(w) if KEYWORDS.contains(&w.as_str()) => {
                    let kind = match w.as_str() {
                        "constant" => TensorKind::Constant,
                        "placeholder" => TensorKind::Placeholder,
                        "variable" => TensorKind::Variable,
                        _ => TensorKind::PersistentTensor,
                    };
                    self.next();
                    self.tensor_decl(kind)?;
                }
                _ => self.op_statement()?,
            }
            self.end_of_statement()?;
            self.sync_axes();
        }
    }

    /// Makes derived axes created by ops referable by their generated names.
    fn sync_axes(&mut self) {
        // Only the new entries, by index: skipping through the table's iterator would cost a
        // walk of the whole table per statement (quadratic parsing).
        let table: Vec<(AxisId, String)> = (self.synced_axes..self.graph.axis_table().len())
            .map(|i| {
                let id = AxisId::from_u32(i as u32);
                (id, self.graph.axis_data(id).name.clone())
            })
            .collect();
        self.synced_axes += table.len();
        for (id, name) in table {
            if !self.declared_axes.contains(&id) {
                self.axes.entry((name, None)).or_insert(id);
            }
        }
    }

    fn axis_decl(&mut self) -> PResult<()> {
        let handle_at = self.at;
        let key = self.axis_handle()?;
        if self.axes.contains_key(&key) {
            return self.error_at(
                handle_at,
                "a new axis name",
                format!(
                    "{}, which is already declared",
                    self.toks[handle_at].tok.describe()
                ),
            );
        }
        let mut len = None;
        let mut def = None;
        if self.eat('=') {
            match self.peek().clone() {
                Tok::Num(_) => len = Some(self.usize_lit("an axis length")?),
                Tok::Ident(w) if DERIVATIONS.contains(&w.as_str()) => {
                    def = Some(self.derivation()?)
                }
                _ => {
                    return self.expected(
                        "an axis length or a derivation (slice, pad, flatten, concat, window or features)",
                    )
                }
            }
        }
        let mut roles = Vec::new();
        if self.eat(':') {
            loop {
                let at = self.at;
                roles.push(match self.next() {
                    Tok::Ident(s) => Role::parse(&s),
                    Tok::Str(s) => Role::User(s),
                    other => return self.error_at(at, "a role", other.describe()),
                });
                if !self.eat(',') {
                    break;
                }
            }
        }
        let id = match def {
            None => self.graph.declare_axis(&key.0, len, roles).id,
            Some(def) => {
                let before = self.graph.axis_table().len();
                let axis = self.graph.derived_axis(def);
                if self.graph.axis_table().len() == before && self.declared_axes.contains(&axis.id)
                {
                    return self.error_at(
                        handle_at,
                        "an axis derived in a new way",
                        format!(
                            "the derivation of `{}`, declared before",
                            self.graph.axis_name(axis)
                        ),
                    );
                }
                self.graph.rename_axis(axis.id, &key.0);
                self.graph.add_roles(axis.id, &roles);
                axis.id
            }
        };
        self.declared_axes.insert(id);
        self.axes.insert(key, id);
        Ok(())
    }

    fn derivation(&mut self) -> PResult<AxisDef> {
        let at = self.at;
        let kind = match self.next() {
            Tok::Ident(k) => k,
            other => return self.error_at(at, "a derivation", other.describe()),
        };
        self.expect('(')?;
        let def = match kind.as_str() {
            "slice" => {
                let of = self.axis_ref()?;
                self.expect(',')?;
                AxisDef::Slice {
                    of,
                    range: self.range()?,
                }
            }
            "pad" => {
                let of = self.axis_ref()?;
                self.expect(',')?;
                let before = self.usize_lit("a padding width")?;
                self.expect(',')?;
                let after = self.usize_lit("a padding width")?;
                AxisDef::Pad { of, before, after }
            }
            "flatten" => AxisDef::Flatten(self.axis_seq(')', false)?),
            "window" => {
                let of = self.axis_ref()?;
                self.expect(',')?;
                let kernel = match self.peek() {
                    Tok::Num(_) => WindowKernel::Len(self.usize_lit("a window length")?),
                    _ => WindowKernel::Axis(self.axis_ref()?),
                };
                let mut n = [0usize; 4];
                for (v, what) in n.iter_mut().zip([
                    "a stride",
                    "a dilation",
                    "a padding width",
                    "a padding width",
                ]) {
                    self.expect(',')?;
                    *v = self.usize_lit(what)?;
                }
                let [stride, dilation, before, after] = n;
                AxisDef::Window {
                    of,
                    kernel,
                    step: WindowStep {
                        stride,
                        dilation,
                        before,
                        after,
                    },
                }
            }
            "features" => AxisDef::Features(self.axis_ref()?),
            _ => AxisDef::Concat(self.axis_seq(')', false)?),
        };
        self.expect(')')?;
        Ok(def)
    }

    fn tensor_decl(&mut self, kind: TensorKind) -> PResult<()> {
        let kw_at = self.at - 1;
        let (handle, handle_at) = self.new_node_handle()?;
        self.expect(':')?;
        let dtype = self.dtype()?;
        let axes = if self.eat('[') {
            let a = self.axis_seq(']', true)?;
            self.expect(']')?;
            a
        } else {
            Vec::new()
        };
        let name = match &handle {
            NodeHandle::Name(n) => Some(n.clone()),
            NodeHandle::Label(_) => None,
        };
        let init = if !self.eat('=') {
            None
        } else if matches!(self.peek(), Tok::Ident(w) if w == "npy") {
            let path = self.npy_path()?;
            let Some(name) = name else {
                return self.error_at(
                    handle_at,
                    "a name for a tensor read from a file",
                    "a label".into(),
                );
            };
            let id = self
                .graph
                .tensor_from_npy(kind, &name, &axes, dtype, &path)
                .map_err(self.graph_err(kw_at))?;
            return self.bind_handle(handle, id, handle_at);
        } else if matches!(self.peek(), Tok::Ident(w) if w == "uniform" || w == "normal") {
            Some(self.random_init(&axes, dtype)?)
        } else {
            Some(self.init(dtype)?)
        };
        let id = self
            .graph
            .tensor(kind, name.as_deref(), &axes, dtype, init)
            .map_err(self.graph_err(kw_at))?;
        self.bind_handle(handle, id, handle_at)
    }

    /// `npy("PATH")`: a `.npy` file, relative to the directory of the file being parsed.
    fn npy_path(&mut self) -> PResult<std::path::PathBuf> {
        self.next();
        self.expect('(')?;
        let at = self.at;
        let path = match self.next() {
            Tok::Str(p) => p,
            other => return self.error_at(at, "a quoted path", other.describe()),
        };
        self.expect(')')?;
        let dir = std::path::Path::new(self.file)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        Ok(dir.join(path))
    }

    /// `uniform(SEED, LO, HI)` or `normal(SEED, MEAN, STD)`: values drawn row-major over
    /// `axes`, whose lengths must be bound (`random::Random`).
    fn random_init(&mut self, axes: &[Axis], dtype: DType) -> PResult<TensorInit> {
        let at = self.at;
        let Tok::Ident(kind) = self.next() else {
            return self.expected("uniform or normal");
        };
        self.expect('(')?;
        let seed = self.usize_lit("a seed")? as u64;
        let mut params = [0.0; 2];
        for p in &mut params {
            self.expect(',')?;
            let p_at = self.at;
            let text = self.literal_text()?;
            *p = self.f64_of(&text, p_at)?;
        }
        self.expect(')')?;
        let random = match kind.as_str() {
            "uniform" => crate::random::Random::Uniform {
                lo: params[0],
                hi: params[1],
            },
            _ => crate::random::Random::Normal {
                mean: params[0],
                std: params[1],
            },
        };
        let lens = axes
            .iter()
            .map(|&a| self.graph.resolve_len(a))
            .collect::<Result<Vec<usize>, _>>()
            .map_err(self.graph_err(at))?;
        let size = crate::size::tensor_size(dtype, &lens)
            .filter(|size| crate::host::check_alloc(size.bytes).is_ok())
            .ok_or_else(|| ParseError::Graph {
                pos: self.pos_of(at),
                source: Box::new(GraphError::Argument {
                    op: kind.clone(),
                    message: format!("{lens:?} elements of {dtype} cannot be allocated"),
                }),
            })?;
        let data = random
            .values(seed, size.elements, dtype)
            .map_err(self.graph_err(at))?;
        Ok(TensorInit::data(data))
    }

    fn init(&mut self, dtype: DType) -> PResult<TensorInit> {
        if !self.eat('[') {
            return Ok(TensorInit::Fill(self.literal(dtype)?));
        }
        let mut data = match dtype {
            DType::F32 => ArrayData::F32(Vec::new()),
            DType::F64 => ArrayData::F64(Vec::new()),
            DType::I32 => ArrayData::I32(Vec::new()),
            DType::I64 => ArrayData::I64(Vec::new()),
            DType::Bool => ArrayData::Bool(Vec::new()),
        };
        while !self.is_punct(']') {
            let at = self.at;
            let text = self.literal_text()?;
            match &mut data {
                ArrayData::F32(v) => v.push(self.f32_of(&text, at)?),
                ArrayData::F64(v) => v.push(self.f64_of(&text, at)?),
                ArrayData::I32(v) => v.push(self.int_of(&text, at, DType::I32)? as i32),
                ArrayData::I64(v) => v.push(self.int_of(&text, at, DType::I64)?),
                ArrayData::Bool(v) => v.push(self.bool_of(&text, at)?),
            }
            if !self.eat(',') {
                break;
            }
        }
        self.expect(']')?;
        Ok(TensorInit::data(data))
    }

    fn outputs(&mut self) -> PResult<()> {
        loop {
            let at = self.at;
            let id = self.node_ref()?;
            self.graph.mark_output(id).map_err(self.graph_err(at))?;
            if !self.eat(',') {
                return Ok(());
            }
        }
    }

    fn op_statement(&mut self) -> PResult<()> {
        let (handle, handle_at) = self.new_node_handle()?;
        let mut more = Vec::new();
        while self.eat(',') {
            let at = self.at;
            let (h, h_at) = self.new_node_handle()?;
            let repeated = std::iter::once(&handle)
                .chain(more.iter().map(|(h, _)| h))
                .any(|o| o.same(&h));
            if repeated {
                return self.error_at(
                    at,
                    "a new tensor name",
                    format!(
                        "{}, which is already on the left",
                        self.toks[at].tok.describe()
                    ),
                );
            }
            more.push((h, h_at));
        }
        self.expect('=')?;
        let op_at = self.at;
        let op = match self.next() {
            Tok::Ident(op) => op,
            other => return self.error_at(op_at, "an op name", other.describe()),
        };
        self.expect('(')?;
        if op == "grad" {
            let ids = self.grad_call(1 + more.len(), op_at)?;
            self.expect(')')?;
            let handles = std::iter::once((handle, handle_at)).chain(more);
            for ((h, at), id) in handles.zip(ids) {
                self.bind_handle(h, id, at)?;
            }
            return Ok(());
        }
        if !more.is_empty() {
            return self.error_at(
                op_at,
                "`grad` (the only op with several results)",
                format!("`{op}`"),
            );
        }
        let id = self.op_call(&op, op_at)?;
        self.expect(')')?;
        self.bind_handle(handle, id, handle_at)
    }

    /// `grad(loss, x1, ..., xk)` after its `(`: the k gradients (`Graph::grad`), one per name
    /// on the left.
    fn grad_call(&mut self, k: usize, op_at: usize) -> PResult<Vec<NodeId>> {
        let loss = self.node_ref()?;
        let mut wrt = Vec::new();
        while self.eat(',') {
            wrt.push(self.node_ref()?);
        }
        if wrt.len() != k {
            let plural = if k == 1 { "tensor" } else { "tensors" };
            return self.error_at(
                op_at,
                format!(
                    "{k} {plural} after the loss, one per name before `=` (`dx, dy = grad(loss, x, y)`)"
                ),
                format!("{}", wrt.len()),
            );
        }
        self.graph.grad(loss, &wrt).map_err(self.graph_err(op_at))
    }

    fn op_call(&mut self, op: &str, op_at: usize) -> PResult<NodeId> {
        let built = if let Some(u) = UnaryOp::from_name(op) {
            let x = self.node_ref()?;
            self.graph.unary(u, x)
        } else if let Some(b) = BinaryOp::from_name(op) {
            let (x, y) = self.two_nodes(op)?;
            self.graph.binary(b, x, y)
        } else if let Some(c) = CompareOp::from_name(op) {
            let (x, y) = self.two_nodes(op)?;
            self.graph.compare(c, x, y)
        } else if let Some(r) = ReduceOp::from_name(op) {
            let x = self.node_ref()?;
            let axes = self.comma_axis_list()?;
            let out = if self.eat(',') {
                let at = self.at;
                match self.next() {
                    Tok::Ident(w) if w == "out" => {}
                    other => return self.error_at(at, "`out=[...]`", other.describe()),
                }
                self.expect('=')?;
                Some(self.axis_list()?)
            } else {
                None
            };
            self.graph.reduce(r, x, &axes, out.as_deref())
        } else {
            match op {
                "select" => {
                    let c = self.node_ref()?;
                    self.expect(',')?;
                    let (a, b) = self.two_nodes(op)?;
                    self.graph.select(c, a, b)
                }
                "convert" => {
                    let x = self.node_ref()?;
                    self.expect(',')?;
                    let d = self.dtype()?;
                    self.graph.convert(x, d)
                }
                "dot" => {
                    let (x, y) = self.two_nodes(op)?;
                    self.graph.dot(x, y)
                }
                "broadcast" => {
                    let x = self.node_ref()?;
                    let a = self.comma_axis_list()?;
                    self.graph.broadcast(x, &a)
                }
                "axes_with_order" => {
                    let x = self.node_ref()?;
                    let a = self.comma_axis_list()?;
                    self.graph.axes_with_order(x, &a)
                }
                "cast_axes" => {
                    let x = self.node_ref()?;
                    let a = self.comma_axis_list()?;
                    self.graph.cast_axes(x, &a)
                }
                "transpose" => {
                    let x = self.node_ref()?;
                    self.graph.transpose(x)
                }
                "slice" => {
                    let x = self.node_ref()?;
                    let mut slices = Vec::new();
                    while self.eat(',') {
                        let a = self.axis_ref()?;
                        self.expect('=')?;
                        slices.push((a, self.axis_slice()?));
                    }
                    self.graph.slice(x, &slices)
                }
                "flatten" => {
                    let x = self.node_ref()?;
                    let a = self.comma_axis_list()?;
                    self.graph.flatten(x, &a)
                }
                "unflatten" => {
                    let x = self.node_ref()?;
                    self.expect(',')?;
                    let a = self.axis_ref()?;
                    self.graph.unflatten(x, a)
                }
                "pad" => {
                    let x = self.node_ref()?;
                    let mut pads = Vec::new();
                    while self.eat(',') {
                        let a = self.axis_ref()?;
                        self.expect('=')?;
                        self.expect('(')?;
                        let before = self.usize_lit("a padding width")?;
                        self.expect(',')?;
                        let after = self.usize_lit("a padding width")?;
                        self.expect(')')?;
                        pads.push((a, before, after));
                    }
                    self.graph.pad(x, &pads)
                }
                "concat" => {
                    let mut parts = Vec::new();
                    loop {
                        let x = self.node_ref()?;
                        self.expect(':')?;
                        parts.push((x, self.axis_ref()?));
                        if !self.eat(',') {
                            break;
                        }
                    }
                    self.graph.concat(&parts)
                }
                "expand_dims" => {
                    let x = self.node_ref()?;
                    self.expect(',')?;
                    let a = self.axis_ref()?;
                    self.expect(',')?;
                    let pos = self.usize_lit("a position")?;
                    self.graph.expand_dims(x, a, pos)
                }
                "assign" => {
                    let (t, v) = self.two_nodes(op)?;
                    self.graph.assign(t, v)
                }
                "convolution" => {
                    let (x, f) = self.two_nodes(op)?;
                    let mut spec = ConvSpec::new();
                    while self.eat(',') {
                        match self.window_arg(false)? {
                            WindowArg::Groups(n) => spec.groups = n,
                            WindowArg::Role(role, _, step) => spec.steps.push((role, step)),
                        }
                    }
                    self.graph.convolution(x, f, &spec)
                }
                "max_pool" | "avg_pool" => {
                    let x = self.node_ref()?;
                    let kind = if op == "max_pool" {
                        PoolKind::Max
                    } else {
                        PoolKind::Avg
                    };
                    let mut spec = PoolSpec::new(kind);
                    while self.eat(',') {
                        let at = self.at;
                        match self.window_arg(true)? {
                            WindowArg::Role(role, Some(taps), step) => {
                                spec.windows.push((role, taps, step))
                            }
                            _ => {
                                return self.error_at(
                                    at,
                                    "a role's window: `Height=(window=2)`",
                                    "no window length".to_string(),
                                )
                            }
                        }
                    }
                    self.graph.pool(x, &spec)
                }
                _ => {
                    return self.error_with_help(
                        op_at,
                        "an op name (e.g. add, dot, sum, slice; see docs/text-format.md)",
                        format!("`{op}`"),
                        did_you_mean(op, op_names()),
                    );
                }
            }
        };
        built.map_err(self.graph_err(op_at))
    }

    // ---- nodes -----------------------------------------------------------------------------

    fn new_node_handle(&mut self) -> PResult<(NodeHandle, usize)> {
        let at = self.at;
        let handle = match self.next() {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => NodeHandle::Name(s),
            Tok::Str(s) => NodeHandle::Name(s),
            Tok::Label(n) => NodeHandle::Label(n),
            other => {
                return self.error_at(
                    at,
                    "a statement (axis, a tensor declaration, `name = op(...)` or output)",
                    other.describe(),
                )
            }
        };
        let taken = match &handle {
            NodeHandle::Name(n) => self.graph.find(n).is_some(),
            NodeHandle::Label(n) => self.labels.contains_key(n),
        };
        if taken {
            return self.error_at(
                at,
                "a new tensor name",
                format!(
                    "{}, which is already declared",
                    self.toks[at].tok.describe()
                ),
            );
        }
        Ok((handle, at))
    }

    fn bind_handle(&mut self, handle: NodeHandle, id: NodeId, at: usize) -> PResult<()> {
        match handle {
            NodeHandle::Name(n) => {
                if self.graph.node(id).name.as_deref() != Some(n.as_str()) {
                    self.graph.set_name(id, &n).map_err(self.graph_err(at))?;
                }
            }
            NodeHandle::Label(n) => {
                self.labels.insert(n, id);
            }
        }
        Ok(())
    }

    fn node_ref(&mut self) -> PResult<NodeId> {
        let at = self.at;
        let found = match self.next() {
            Tok::Ident(s) | Tok::Str(s) => self.graph.find(&s),
            Tok::Label(n) => self.labels.get(&n).copied(),
            other => return self.error_at(at, "a tensor", other.describe()),
        };
        match found {
            Some(id) => Ok(id),
            None if self.is_punct('(') && self.name_at(at).is_some_and(is_op_name) => {
                let op = self.name_at(at).unwrap_or_default();
                self.error_with_help(
                    at,
                    "a tensor name (ops do not nest in the text form)",
                    format!("a call of `{op}`"),
                    Some(format!(
                        "give it its own line, `t = {op}(...)`, and use `t` here"
                    )),
                )
            }
            None => {
                let help = self.name_at(at).and_then(|w| {
                    did_you_mean(w, self.graph.nodes().filter_map(|(_, n)| n.name.as_deref()))
                });
                self.error_with_help(
                    at,
                    "a declared tensor",
                    format!("{}, which is not declared", self.toks[at].tok.describe()),
                    help,
                )
            }
        }
    }

    /// The two tensor operands of `op`: a missing second one is an arity error naming `op`.
    fn two_nodes(&mut self, op: &str) -> PResult<(NodeId, NodeId)> {
        let x = self.node_ref()?;
        if self.is_punct(')') {
            return self.error_at(
                self.at,
                format!("a second tensor: `{op}` takes two (`{op}(x, y)`)"),
                "`)` after one".to_string(),
            );
        }
        self.expect(',')?;
        Ok((x, self.node_ref()?))
    }

    // ---- axes ------------------------------------------------------------------------------

    fn axis_handle(&mut self) -> PResult<AxisKey> {
        let at = self.at;
        let name = match self.next() {
            Tok::Ident(s) | Tok::Str(s) => s,
            other => return self.error_at(at, "an axis name", other.describe()),
        };
        let tag = if self.eat('@') {
            let at = self.at;
            match self.next() {
                Tok::Num(n) if n.bytes().all(|b| b.is_ascii_digit()) => match n.parse::<u64>() {
                    Ok(v) => Some(v),
                    Err(_) => return self.error_at(at, "an axis tag", format!("`{n}`")),
                },
                other => return self.error_at(at, "an axis tag", other.describe()),
            }
        } else {
            None
        };
        Ok((name, tag))
    }

    fn axis_ref(&mut self) -> PResult<Axis> {
        let at = self.at;
        let key = self.axis_handle()?;
        let Some(id) = self.axes.get(&key).copied() else {
            let shown = match &key.1 {
                Some(t) => format!("{}@{t}", self.toks[at].tok.describe()),
                None => self.toks[at].tok.describe(),
            };
            let help = self
                .name_at(at)
                .and_then(|w| did_you_mean(w, self.axes.keys().map(|k| k.0.as_str())));
            return self.error_with_help(
                at,
                "a declared axis",
                format!("{shown}, which is not declared"),
                help,
            );
        };
        let mut dual = 0i32;
        if self.eat('^') {
            let neg = self.eat('-');
            let k_at = self.at;
            let k = match self.next() {
                Tok::Num(n) => n
                    .parse::<i64>()
                    .ok()
                    .and_then(|k| i32::try_from(if neg { -k } else { k }).ok()),
                _ => None,
            };
            let Some(k) = k else {
                return self.error_at(k_at, "a dual degree", self.toks[k_at].tok.describe());
            };
            dual = k;
            self.expect('*')?;
        } else {
            while self.eat('*') {
                dual += 1;
            }
        }
        Ok(self.graph.axis_of(id).with_dual(dual))
    }

    /// Axes separated by commas up to `close` (not consumed); `distinct` rejects repeats.
    fn axis_seq(&mut self, close: char, distinct: bool) -> PResult<Vec<Axis>> {
        let mut v: Vec<Axis> = Vec::new();
        while !self.is_punct(close) {
            let at = self.at;
            let a = self.axis_ref()?;
            if distinct && v.contains(&a) {
                return self.error_at(
                    at,
                    "an axis not already in the list",
                    format!("`{}` again", self.graph.axis_name(a)),
                );
            }
            v.push(a);
            if !self.eat(',') {
                break;
            }
        }
        Ok(v)
    }

    /// `[A, B, ...]`.
    fn axis_list(&mut self) -> PResult<Vec<Axis>> {
        self.expect('[')?;
        let v = self.axis_seq(']', true)?;
        self.expect(']')?;
        Ok(v)
    }

    /// `, [A, B, ...]`.
    fn comma_axis_list(&mut self) -> PResult<Vec<Axis>> {
        self.expect(',')?;
        self.axis_list()
    }

    fn axis_slice(&mut self) -> PResult<AxisSlice> {
        let start = self.opt_int()?;
        if !self.is_punct(':') {
            return match start {
                Some(i) => Ok(AxisSlice::Index(i)),
                None => self.expected("an index or a range `start:stop:step`"),
            };
        }
        Ok(AxisSlice::Range(self.range_after(start)?))
    }

    fn range(&mut self) -> PResult<SliceRange> {
        let start = self.opt_int()?;
        if !self.is_punct(':') {
            return self.expected("`:` in a range `start:stop:step`");
        }
        self.range_after(start)
    }

    /// The rest of a range after its optional start, at the first `:`.
    fn range_after(&mut self, start: Option<i64>) -> PResult<SliceRange> {
        self.expect(':')?;
        let stop = self.opt_int()?;
        let step = if self.eat(':') {
            let at = self.at;
            match self.opt_int()? {
                Some(0) => return self.error_at(at, "a non-zero step", "`0`".into()),
                Some(s) => s,
                None => return self.expected("a step"),
            }
        } else {
            1
        };
        Ok(SliceRange { start, stop, step })
    }

    // ---- literals --------------------------------------------------------------------------

    fn dtype(&mut self) -> PResult<DType> {
        let at = self.at;
        match self.next() {
            Tok::Ident(s) => match s.parse::<DType>() {
                Ok(d) => Ok(d),
                Err(_) => {
                    self.error_at(at, "a dtype (f32, f64, i32, i64 or bool)", format!("`{s}`"))
                }
            },
            other => self.error_at(at, "a dtype (f32, f64, i32, i64 or bool)", other.describe()),
        }
    }

    /// One argument of a convolution or pool after its operands: `groups=N` (convolutions), or
    /// `Role=(key=value, ...)` with keys `stride`, `dilation`, `pad=(before, after)` and, for
    /// pools, `window` (whose length is the default stride).
    fn window_arg(&mut self, pool: bool) -> PResult<WindowArg> {
        let at = self.at;
        let role = match self.next() {
            Tok::Ident(w) if w == "groups" && !pool => {
                self.expect('=')?;
                return Ok(WindowArg::Groups(self.usize_lit("a group count")?));
            }
            Tok::Ident(s) => Role::parse(&s),
            Tok::Str(s) => Role::User(s),
            other => return self.error_at(at, "a role (`Height=(...)`)", other.describe()),
        };
        self.expect('=')?;
        self.expect('(')?;
        let (mut step, mut taps, mut stride) = (WindowStep::default(), None, None);
        loop {
            let key_at = self.at;
            let key = match self.next() {
                Tok::Ident(k) => k,
                other => {
                    return self.error_at(
                        key_at,
                        "stride, dilation, pad or window",
                        other.describe(),
                    )
                }
            };
            self.expect('=')?;
            match key.as_str() {
                "stride" => stride = Some(self.usize_lit("a stride")?),
                "dilation" => step.dilation = self.usize_lit("a dilation")?,
                "pad" => {
                    self.expect('(')?;
                    step.before = self.usize_lit("a padding width")?;
                    self.expect(',')?;
                    step.after = self.usize_lit("a padding width")?;
                    self.expect(')')?;
                }
                "window" if pool => taps = Some(self.usize_lit("a window length")?),
                _ => {
                    let keys = if pool {
                        "window, stride, dilation or pad"
                    } else {
                        "stride, dilation or pad"
                    };
                    return self.error_at(key_at, keys, format!("`{key}`"));
                }
            }
            if !self.eat(',') {
                break;
            }
        }
        self.expect(')')?;
        step.stride = stride.or(taps).unwrap_or(1);
        Ok(WindowArg::Role(role, taps, step))
    }

    fn usize_lit(&mut self, what: &str) -> PResult<usize> {
        let at = self.at;
        match self.next() {
            Tok::Num(n) => match n.parse::<usize>() {
                Ok(v) => Ok(v),
                Err(_) => self.error_at(at, format!("{what} (a whole number)"), format!("`{n}`")),
            },
            other => self.error_at(at, format!("{what} (a whole number)"), other.describe()),
        }
    }

    /// An optional signed integer.
    fn opt_int(&mut self) -> PResult<Option<i64>> {
        let at = self.at;
        let neg = self.eat('-');
        match self.peek().clone() {
            Tok::Num(n) => {
                self.next();
                let text = if neg { format!("-{n}") } else { n };
                Ok(Some(self.int_of(&text, at, DType::I64)?))
            }
            _ if neg => self.expected("a number"),
            _ => Ok(None),
        }
    }

    /// A literal as written: an optional `-` then a number, `nan`, `inf`, `true` or `false`.
    fn literal_text(&mut self) -> PResult<String> {
        let neg = self.eat('-');
        let sign = if neg { "-" } else { "" };
        match self.peek().clone() {
            Tok::Num(n) => {
                self.next();
                Ok(format!("{sign}{n}"))
            }
            Tok::Ident(w)
                if w == "nan" || w == "inf" || (!neg && (w == "true" || w == "false")) =>
            {
                self.next();
                Ok(format!("{sign}{w}"))
            }
            _ => self.expected("a value (a number, nan, inf, true or false)"),
        }
    }

    fn literal(&mut self, dtype: DType) -> PResult<Scalar> {
        let at = self.at;
        let text = self.literal_text()?;
        Ok(match dtype {
            DType::F32 => Scalar::Float(self.f32_of(&text, at)? as f64),
            DType::F64 => Scalar::Float(self.f64_of(&text, at)?),
            DType::I32 | DType::I64 => Scalar::Int(self.int_of(&text, at, dtype)?),
            DType::Bool => Scalar::Bool(self.bool_of(&text, at)?),
        })
    }

    fn f64_of(&self, text: &str, at: usize) -> PResult<f64> {
        match text.trim_start_matches('-') {
            "nan" => Ok(f64::NAN),
            "true" | "false" => self.error_at(at, "a float", format!("`{text}`")),
            _ => text
                .parse::<f64>()
                .or_else(|_| self.error_at(at, "a float", format!("`{text}`"))),
        }
    }

    fn f32_of(&self, text: &str, at: usize) -> PResult<f32> {
        match text.trim_start_matches('-') {
            "nan" => Ok(f32::NAN),
            "true" | "false" => self.error_at(at, "a float", format!("`{text}`")),
            _ => text
                .parse::<f32>()
                .or_else(|_| self.error_at(at, "a float", format!("`{text}`"))),
        }
    }

    fn int_of(&self, text: &str, at: usize, dtype: DType) -> PResult<i64> {
        let v = text.parse::<i64>().ok();
        let fits = match (dtype, v) {
            (DType::I32, Some(v)) => i32::try_from(v).is_ok(),
            (_, v) => v.is_some(),
        };
        match v {
            Some(v) if fits => Ok(v),
            _ => self.error_at(
                at,
                format!("an integer in {dtype} range"),
                format!("`{text}`"),
            ),
        }
    }

    fn bool_of(&self, text: &str, at: usize) -> PResult<bool> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => self.error_at(at, "true or false", format!("`{text}`")),
        }
    }
}

/// Every op name the text form calls.
fn op_names() -> impl Iterator<Item = &'static str> {
    UnaryOp::ALL
        .iter()
        .map(|o| o.name())
        .chain(BinaryOp::ALL.iter().map(|o| o.name()))
        .chain(CompareOp::ALL.iter().map(|o| o.name()))
        .chain(ReduceOp::ALL.iter().map(|o| o.name()))
        .chain(STRUCTURAL_OPS)
}

fn is_op_name(w: &str) -> bool {
    op_names().any(|o| o == w) || w == "grad"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_ops_all_parse() {
        // Each keyword op reaches its own arm: the error, if any, is about its operands.
        for op in STRUCTURAL_OPS {
            let src = format!("axis N = 2\nplaceholder x: f32[N]\ny = {op}(@)\n");
            let err = parse(&src, "t.weft").unwrap_err().to_string();
            assert!(!err.contains("an op name"), "{op}: {err}");
        }
    }

    #[test]
    fn near_misses_get_a_suggestion_and_far_ones_none() {
        let src = "axis Batch = 2\nplaceholder input: f32[Batch]\ny = expp(input)\n";
        let e = parse(src, "t.weft").unwrap_err();
        assert!(e.to_string().contains("did you mean `exp`?"), "{e}");
        let src = "axis Batch = 2\nplaceholder input: f32[Batch]\ny = exp(inptu)\n";
        let e = parse(src, "t.weft").unwrap_err();
        assert!(e.to_string().contains("did you mean `input`?"), "{e}");
        let src = "axis Batch = 2\nplaceholder x: f32[Bacth]\n";
        let e = parse(src, "t.weft").unwrap_err();
        assert!(e.to_string().contains("did you mean `Batch`?"), "{e}");
        let src = "axis N = 2\nplaceholder x: f32[N]\ny = frobnicate(x)\n";
        let e = parse(src, "t.weft").unwrap_err();
        assert!(!e.to_string().contains("did you mean"), "{e}");
    }
}
