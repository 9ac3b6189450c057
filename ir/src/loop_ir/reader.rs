//! The reader: parses the text form printed by [`Kernel`]'s `Display` (grammar in
//! docs/loop-ir.md).
//!
//! Assumes nothing about its input. Guarantees: it either returns a kernel whose entities are
//! created in order of first definition, or a [`ReadError`] with `source:line:col`. It checks
//! syntax and name resolution only (every `%name` defined once, before use, as the right kind of
//! entity); scoping, types and bounds are the verifier's job.

use std::collections::HashMap;
use std::fmt;

use super::lexer::{tokenize, Spanned, Token};
use super::{
    AccId, AffineExpr, BinaryOp, BufferAccess, BufferAccessExpr, BufferId, CompareOp, Inst, Kernel,
    LoopAnnotations, LoopId, MaskBound, ReduceKind, ScalarType, ScalarValue, Stmt, UnaryOp,
    ValueId,
};

/// A syntax or name-resolution error in loop-IR text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}:{col}: {message}")]
pub struct ReadError {
    /// Name of the text's origin (a file path, or a label).
    pub source_name: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// What is wrong.
    pub message: String,
}

impl ReadError {
    pub(super) fn new(source: &str, line: u32, col: u32, message: String) -> Self {
        Self {
            source_name: source.to_string(),
            line,
            col,
            message,
        }
    }
}

/// Parses one kernel from `text`; `source_name` prefixes error positions.
pub fn parse_kernel(source_name: &str, text: &str) -> std::result::Result<Kernel, ReadError> {
    let tokens = tokenize(source_name, text)?;
    let mut parser = Parser {
        source: source_name,
        tokens,
        pos: 0,
        names: HashMap::new(),
        kernel: Kernel::default(),
    };
    parser.kernel()?;
    parser.expect_eof()?;
    Ok(parser.kernel)
}

#[derive(Clone, Copy)]
enum Entity {
    Buffer(BufferId),
    Loop(LoopId),
    Value(ValueId),
    Acc(AccId),
}

impl Entity {
    fn kind(self) -> &'static str {
        match self {
            Entity::Buffer(_) => "a buffer",
            Entity::Loop(_) => "a loop",
            Entity::Value(_) => "a value",
            Entity::Acc(_) => "an accumulator",
        }
    }
}

struct Parser<'a> {
    source: &'a str,
    tokens: Vec<Spanned>,
    pos: usize,
    names: HashMap<String, Entity>,
    kernel: Kernel,
}

type Result<T> = std::result::Result<T, ReadError>;

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].token
    }

    fn error_here(&self, message: impl fmt::Display) -> ReadError {
        let t = &self.tokens[self.pos.min(self.tokens.len() - 1)];
        ReadError::new(self.source, t.line, t.col, message.to_string())
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn describe(t: &Token) -> String {
        match t {
            Token::Ident(s) => format!("`{s}`"),
            Token::Local(s) => format!("`%{s}`"),
            Token::Global(s) => format!("`@{s}`"),
            Token::Number(s) => format!("`{s}`"),
            Token::Punct(p) => format!("`{p}`"),
            Token::Eof => "end of input".to_string(),
        }
    }

    fn expect_punct(&mut self, p: &'static str) -> Result<()> {
        if *self.peek() == Token::Punct(p) {
            self.next();
            Ok(())
        } else {
            Err(self.error_here(format!(
                "expected `{p}`, found {}",
                Self::describe(self.peek())
            )))
        }
    }

    fn eat_punct(&mut self, p: &'static str) -> bool {
        if *self.peek() == Token::Punct(p) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect_keyword(&mut self, word: &str) -> Result<()> {
        match self.peek() {
            Token::Ident(w) if w == word => {
                self.next();
                Ok(())
            }
            t => Err(self.error_here(format!("expected `{word}`, found {}", Self::describe(t)))),
        }
    }

    fn expect_ident(&mut self, what: &str) -> Result<String> {
        match self.peek().clone() {
            Token::Ident(w) => {
                self.next();
                Ok(w)
            }
            t => Err(self.error_here(format!("expected {what}, found {}", Self::describe(&t)))),
        }
    }

    fn expect_eof(&mut self) -> Result<()> {
        match self.peek() {
            Token::Eof => Ok(()),
            t => Err(self.error_here(format!(
                "expected end of input, found {}",
                Self::describe(t)
            ))),
        }
    }

    fn expect_u64(&mut self, what: &str) -> Result<u64> {
        match self.peek().clone() {
            Token::Number(n) => {
                let v = n.parse::<u64>().map_err(|_| {
                    self.error_here(format!("{what} `{n}` is not an unsigned integer"))
                })?;
                self.next();
                Ok(v)
            }
            t => Err(self.error_here(format!("expected {what}, found {}", Self::describe(&t)))),
        }
    }

    /// An optionally negative integer that fits in `i64`.
    fn expect_i64(&mut self, what: &str) -> Result<i64> {
        let negative = self.eat_punct("-");
        let magnitude = self.expect_u64(what)?;
        signed(magnitude, negative).ok_or_else(|| self.error_here(format!("{what} overflows i64")))
    }

    fn expect_type(&mut self) -> Result<ScalarType> {
        let name = self.expect_ident("a type")?;
        ScalarType::from_name(&name).ok_or_else(|| {
            self.pos -= 1;
            self.error_here(format!("unknown type `{name}`"))
        })
    }

    /// Reads `%name` and defines it as a new entity.
    fn define(&mut self, make: impl FnOnce(&mut Kernel) -> Entity) -> Result<Entity> {
        match self.peek().clone() {
            Token::Local(name) => {
                if self.names.contains_key(&name) {
                    return Err(self.error_here(format!("`%{name}` is already defined")));
                }
                self.next();
                let e = make(&mut self.kernel);
                self.names.insert(name, e);
                Ok(e)
            }
            t => Err(self.error_here(format!("expected a `%name`, found {}", Self::describe(&t)))),
        }
    }

    /// Reads a `%name` that must already be defined.
    fn lookup(&mut self) -> Result<Entity> {
        match self.peek().clone() {
            Token::Local(name) => match self.names.get(&name) {
                Some(e) => {
                    let e = *e;
                    self.next();
                    Ok(e)
                }
                None => Err(self.error_here(format!("`%{name}` is not defined"))),
            },
            t => Err(self.error_here(format!("expected a `%name`, found {}", Self::describe(&t)))),
        }
    }

    fn lookup_as<T>(&mut self, want: &str, pick: impl Fn(Entity) -> Option<T>) -> Result<T> {
        let start = self.pos;
        let e = self.lookup()?;
        pick(e).ok_or_else(|| {
            self.pos = start;
            self.error_here(format!("expected {want}, but this names {}", e.kind()))
        })
    }

    fn value(&mut self) -> Result<ValueId> {
        self.lookup_as("a value", |e| match e {
            Entity::Value(v) => Some(v),
            _ => None,
        })
    }
    fn loop_ref(&mut self) -> Result<LoopId> {
        self.lookup_as("a loop", |e| match e {
            Entity::Loop(l) => Some(l),
            _ => None,
        })
    }
    fn acc(&mut self) -> Result<AccId> {
        self.lookup_as("an accumulator", |e| match e {
            Entity::Acc(a) => Some(a),
            _ => None,
        })
    }
    fn buffer(&mut self) -> Result<BufferId> {
        self.lookup_as("a buffer", |e| match e {
            Entity::Buffer(b) => Some(b),
            _ => None,
        })
    }

    fn kernel(&mut self) -> Result<()> {
        self.expect_keyword("kernel")?;
        match self.next() {
            Token::Global(name) => self.kernel.name = name,
            t => {
                self.pos -= 1;
                return Err(
                    self.error_here(format!("expected `@name`, found {}", Self::describe(&t)))
                );
            }
        }
        self.expect_punct("{")?;
        while matches!(self.peek(), Token::Ident(w) if w == "buffer") {
            self.buffer_decl()?;
        }
        self.kernel.body = self.stmts()?;
        self.expect_punct("}")
    }

    fn buffer_decl(&mut self) -> Result<()> {
        self.expect_keyword("buffer")?;
        let name = match self.peek() {
            Token::Local(n) => n.clone(),
            _ => String::new(),
        };
        let entity = self.define(|k| {
            Entity::Buffer(k.add_buffer(String::new(), ScalarType::F32, 0, BufferAccess::Read))
        })?;
        let Entity::Buffer(id) = entity else {
            unreachable!("define returns the entity its closure made")
        };
        self.expect_punct(":")?;
        let ty = self.expect_type()?;
        self.expect_punct("[")?;
        let len = self.expect_u64("a buffer length")?;
        self.expect_punct("]")?;
        let access = match self
            .expect_ident("`read`, `write` or `readwrite`")?
            .as_str()
        {
            "read" => BufferAccess::Read,
            "write" => BufferAccess::Write,
            "readwrite" => BufferAccess::ReadWrite,
            other => {
                self.pos -= 1;
                return Err(self.error_here(format!("unknown buffer access `{other}`")));
            }
        };
        let decl = &mut self.kernel.buffers[id];
        decl.name = name;
        decl.ty = ty;
        decl.len = len;
        decl.access = access;
        Ok(())
    }

    fn stmts(&mut self) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        while !matches!(self.peek(), Token::Punct("}") | Token::Eof) {
            out.push(self.stmt()?);
        }
        Ok(out)
    }

    fn stmt(&mut self) -> Result<Stmt> {
        match self.peek().clone() {
            Token::Ident(w) if w == "loop" => self.loop_stmt(),
            Token::Ident(w) if w == "if" => {
                self.next();
                let cond = self.value()?;
                self.expect_punct("{")?;
                let body = self.stmts()?;
                self.expect_punct("}")?;
                Ok(Stmt::If { cond, body })
            }
            Token::Ident(w) if w == "store" => {
                self.next();
                let target = self.access()?;
                if !target.mask.is_empty() {
                    return Err(self.error_here("a store cannot be masked"));
                }
                self.expect_punct(",")?;
                let value = self.value()?;
                Ok(Stmt::Store { target, value })
            }
            Token::Ident(w) if w == "acc" => {
                self.next();
                let Entity::Acc(acc) =
                    self.define(|k| Entity::Acc(k.add_acc(ReduceKind::Sum, ScalarType::F32)))?
                else {
                    unreachable!("define returns the entity its closure made")
                };
                self.expect_punct(":")?;
                let kind_name = self.expect_ident("a reduction kind")?;
                let kind = ReduceKind::from_name(&kind_name).ok_or_else(|| {
                    self.pos -= 1;
                    self.error_here(format!("unknown reduction kind `{kind_name}`"))
                })?;
                let ty = self.expect_type()?;
                self.kernel.accs[acc].kind = kind;
                self.kernel.accs[acc].ty = ty;
                if matches!(self.peek(), Token::Ident(w) if w == "partials") {
                    self.next();
                    self.expect_keyword("f32")?;
                    self.kernel.accs[acc].narrow_partials = true;
                }
                Ok(Stmt::DeclareAcc(acc))
            }
            Token::Ident(w) if w == "reduce" => {
                self.next();
                let acc = self.acc()?;
                self.expect_punct(",")?;
                let value = self.value()?;
                let index = if self.eat_punct(",") {
                    Some(self.value()?)
                } else {
                    None
                };
                Ok(Stmt::Reduce { acc, value, index })
            }
            Token::Local(_) => {
                let Entity::Value(result) =
                    self.define(|k| Entity::Value(k.values.push(ScalarType::F32)))?
                else {
                    unreachable!("define returns the entity its closure made")
                };
                self.expect_punct(":")?;
                let ty = self.expect_type()?;
                self.kernel.values[result] = ty;
                self.expect_punct("=")?;
                let inst = self.inst(ty)?;
                Ok(Stmt::Let { result, inst })
            }
            t => Err(self.error_here(format!(
                "expected a statement, found {}",
                Self::describe(&t)
            ))),
        }
    }

    fn loop_stmt(&mut self) -> Result<Stmt> {
        self.expect_keyword("loop")?;
        let Entity::Loop(loop_id) =
            self.define(|k| Entity::Loop(k.add_loop(0, LoopAnnotations::default())))?
        else {
            unreachable!("define returns the entity its closure made")
        };
        self.expect_keyword("in")?;
        let start = self.expect_u64("a loop start")?;
        if start != 0 {
            self.pos -= 1;
            return Err(self.error_here("loops start at 0"));
        }
        self.expect_punct("..")?;
        let extent = self.expect_u64("a loop extent")?;
        let mut annotations = LoopAnnotations::default();
        loop {
            match self.peek().clone() {
                Token::Ident(w) if w == "parallel" => annotations.parallel = true,
                Token::Ident(w) if w == "vectorize" => annotations.vectorize = true,
                Token::Ident(w) if w == "unroll" => {
                    self.next();
                    self.expect_punct("(")?;
                    let n = self.expect_u64("an unroll factor")?;
                    annotations.unroll = u32::try_from(n)
                        .map_err(|_| self.error_here("unroll factor does not fit in u32"))?;
                    self.expect_punct(")")?;
                    continue;
                }
                _ => break,
            }
            self.next();
        }
        self.kernel.loops[loop_id].extent = extent;
        self.kernel.loops[loop_id].annotations = annotations;
        self.expect_punct("{")?;
        let body = self.stmts()?;
        self.expect_punct("}")?;
        Ok(Stmt::Loop { loop_id, body })
    }

    fn inst(&mut self, ty: ScalarType) -> Result<Inst> {
        let op_start = self.pos;
        let op = self.expect_ident("an instruction")?;
        Ok(match op.as_str() {
            "const" => {
                let negative = self.eat_punct("-");
                let text = match self.next() {
                    Token::Number(n) | Token::Ident(n) => n,
                    t => {
                        self.pos -= 1;
                        return Err(self.error_here(format!(
                            "expected a constant, found {}",
                            Self::describe(&t)
                        )));
                    }
                };
                let text = if negative { format!("-{text}") } else { text };
                let value = ScalarValue::parse(ty, &text).ok_or_else(|| {
                    self.pos -= 1;
                    self.error_here(format!("`{text}` is not a constant of type {ty}"))
                })?;
                Inst::Const(value)
            }
            "index" => Inst::Index(self.loop_ref()?),
            "load" => Inst::Load(self.access()?),
            "acc.value" => Inst::AccValue(self.acc()?),
            "acc.index" => Inst::AccIndex(self.acc()?),
            "select" => {
                let cond = self.value()?;
                self.expect_punct(",")?;
                let if_true = self.value()?;
                self.expect_punct(",")?;
                let if_false = self.value()?;
                Inst::Select {
                    cond,
                    if_true,
                    if_false,
                }
            }
            "convert" => Inst::Convert(self.value()?),
            name => {
                if let Some(u) = UnaryOp::from_name(name) {
                    Inst::Unary(u, self.value()?)
                } else if let Some(b) = BinaryOp::from_name(name) {
                    let x = self.value()?;
                    self.expect_punct(",")?;
                    Inst::Binary(b, x, self.value()?)
                } else if let Some(c) = CompareOp::from_name(name) {
                    let x = self.value()?;
                    self.expect_punct(",")?;
                    Inst::Compare(c, x, self.value()?)
                } else {
                    self.pos = op_start;
                    return Err(self.error_here(format!("unknown instruction `{name}`")));
                }
            }
        })
    }

    fn access(&mut self) -> Result<BufferAccessExpr> {
        let buffer = self.buffer()?;
        self.expect_punct("[")?;
        let index = self.affine()?;
        self.expect_punct("]")?;
        let mut mask = Vec::new();
        if matches!(self.peek(), Token::Ident(w) if w == "mask") {
            self.next();
            self.expect_punct("(")?;
            loop {
                let lo = self.expect_i64("a mask lower bound")?;
                self.expect_punct("<=")?;
                let expr = self.affine()?;
                self.expect_punct("<")?;
                let hi = self.expect_i64("a mask upper bound")?;
                mask.push(MaskBound { expr, lo, hi });
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        Ok(BufferAccessExpr {
            buffer,
            index,
            mask,
        })
    }

    fn affine(&mut self) -> Result<AffineExpr> {
        let mut terms = Vec::new();
        let mut constant: i64 = 0;
        let mut negative = self.eat_punct("-");
        loop {
            match self.peek().clone() {
                Token::Local(_) => {
                    let l = self.loop_ref()?;
                    terms.push((l, if negative { -1 } else { 1 }));
                }
                Token::Number(_) => {
                    let magnitude = self.expect_u64("a coefficient")?;
                    let c = signed(magnitude, negative)
                        .ok_or_else(|| self.error_here("constant overflows i64"))?;
                    if self.eat_punct("*") {
                        let l = self.loop_ref()?;
                        terms.push((l, c));
                    } else {
                        constant = constant
                            .checked_add(c)
                            .ok_or_else(|| self.error_here("constant overflows i64"))?;
                    }
                }
                t => {
                    return Err(self.error_here(format!(
                        "expected an index term, found {}",
                        Self::describe(&t)
                    )))
                }
            }
            if self.eat_punct("+") {
                negative = false;
            } else if self.eat_punct("-") {
                negative = true;
            } else {
                break;
            }
        }
        Ok(AffineExpr::new(terms, constant))
    }
}

fn signed(magnitude: u64, negative: bool) -> Option<i64> {
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}
