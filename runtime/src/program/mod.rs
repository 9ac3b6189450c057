//! The program: what the compiler hands the runtime — plain data, no code generator inside.
//!
//! A [`Program`] says which storages a run allocates ([`Storage`]), which steps run in what
//! order ([`Step`]: a JIT kernel, a GEMM call, or a GEMM call with its epilogue kernel), and how
//! each input, output, state read and assigned value moves in and out ([`Binding`]). The
//! machine code of its kernels comes beside it, one [`CompiledKernel`](crate::CompiledKernel)
//! per [`KernelId`]; [`NativeExecutable`] runs the two. It has a text form ([`Program`]'s
//! `Display`: `weft compile --dump-dir` writes it as `program.txt`), which `weft explain`
//! reads as well.
//!
//! Assumes (the compiler guarantees it): every id names an entry of its table; a kernel's
//! arguments match its compiled signature in order, dtype and length; an output's or assigned
//! value's [`Home`] describes where the last step that writes it left it.
//! Guarantees: nothing here compiles; a program is immutable once built.

mod run;

pub use run::{NativeExecutable, ResidentRun};

use crate::gemm::{GemmCall, GemmEpilogue};
use std::fmt;
use weft_ir::{ArrayData, Axes, DType, NodeId};

macro_rules! id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(usize);

        impl $name {
            /// The id of entry `index` of its table.
            pub fn new(index: usize) -> Self {
                $name(index)
            }

            /// Its index in its table.
            pub fn index(self) -> usize {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id!(
    /// A storage of [`Program::storages`]: one device buffer of a workspace.
    StorageId,
    "s"
);
id!(
    /// A kernel of [`Program::kernels`], and its code.
    KernelId,
    "k"
);
id!(
    /// A GEMM call of [`Program::gemms`].
    GemmId,
    "g"
);

/// What a storage holds, which decides how a workspace fills it.
#[derive(Clone, Debug, PartialEq)]
pub enum StorageKind {
    /// A buffer of the buffer plan, shared by tensors whose lifetimes do not overlap.
    Planned,
    /// One tensor's own storage: a placeholder, an output or an assigned value.
    Private,
    /// A variable's or persistent tensor's value, loaded (or bound) from the state each call.
    State,
    /// A constant, filled once per workspace with this data.
    Constant(ArrayData),
    /// A kernel's row, block or partials scratch.
    Scratch,
    /// No step binds it any more (a chained kernel holds its tensor a block at a time): its
    /// length is 0.
    Elided,
}

/// One device buffer of a workspace.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// Its element type.
    pub dtype: DType,
    /// Its length in elements.
    pub elements: u64,
    /// What it holds.
    pub kind: StorageKind,
    /// The tensors it holds, by name, for messages (an allocation that fails names them).
    pub holders: Vec<String>,
}

impl Storage {
    /// The bytes it allocates: rounded up to its 64-byte alignment, saturating (a length past
    /// `u64` bytes is refused by the budget, and by the allocation).
    pub fn bytes(&self) -> u64 {
        self.elements
            .saturating_mul(self.dtype.size_bytes() as u64)
            .div_ceil(64)
            .saturating_mul(64)
    }

    /// Its holders, as messages name them.
    pub fn holders_text(&self) -> String {
        self.holders.join("`, `")
    }
}

/// A JIT kernel's step: its name and the storages it binds, parameter by parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelStep {
    /// The kernel's name in its loop IR (`@name`).
    pub name: String,
    /// Per parameter, the storage bound to it.
    pub args: Vec<StorageId>,
}

/// A GEMM call over three storages.
#[derive(Clone, Debug)]
pub struct GemmStep {
    /// The call.
    pub call: GemmCall,
    /// The storages of A, B and C.
    pub args: [StorageId; 3],
    /// When the kernel after it does not run as its epilogue, why not.
    pub note: Option<String>,
}

/// One step of a run, in schedule order.
#[derive(Clone, Debug)]
pub enum Step {
    /// A JIT kernel.
    Kernel(KernelId),
    /// A GEMM call.
    Gemm(GemmId),
    /// A GEMM call, then its epilogue kernel over each block the call computes, in the same
    /// work items.
    GemmThen {
        /// The GEMM call.
        gemm: GemmId,
        /// The epilogue kernel.
        kernel: KernelId,
        /// The pair as the runtime calls it.
        epilogue: Box<GemmEpilogue>,
    },
}

/// How a call moves an array between the caller (or the state) and its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// The kernels read or write the caller's (or the state's) array in place of the storage.
    InPlace,
    /// Copied, for the reason given.
    Copy(&'static str),
}

impl Binding {
    /// Whether the array is bound in place.
    pub fn in_place(self) -> bool {
        self == Binding::InPlace
    }
}

/// Where a value read after the run lives, and how to read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    /// Its storage.
    pub storage: StorageId,
    /// Its name, for messages.
    pub name: String,
    /// Its axes, lengths and dtype.
    pub axes: Axes,
    /// Its lengths, per axis.
    pub shape: Vec<usize>,
    /// Its element type.
    pub dtype: DType,
    /// Per axis, the stride in elements of its layout in the storage.
    pub strides: Vec<i64>,
    /// Stored row-major in its axes order at the start of its storage, so reading it is a
    /// prefix copy (always so for outputs and assigned values; see the compiler invariants).
    pub row_major: bool,
}

/// A placeholder: what the caller passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The placeholder, in the caller's graph.
    pub placeholder: NodeId,
    /// Its name, for messages.
    pub name: String,
    /// Its storage; `None` when no kernel reads it (unused, or folded away).
    pub storage: Option<StorageId>,
    /// The axes order it is stored in, when the caller asked for another than its declared
    /// one (the copy transposes it).
    pub order: Option<Axes>,
    /// Its lengths, so a call checks an input without allocating.
    pub shape: Vec<usize>,
    /// Read in place or copied in.
    pub binding: Binding,
}

/// An output: what the caller receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The output, in the caller's graph.
    pub node: NodeId,
    /// Where its value is.
    pub home: Home,
    /// Written in place or copied out.
    pub binding: Binding,
}

/// A variable or persistent tensor the run reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateRead {
    /// The variable, in the caller's graph.
    pub source: NodeId,
    /// Its name, for messages.
    pub name: String,
    /// The storage its value is loaded into.
    pub storage: StorageId,
    /// Read in place from the state's array, or copied in.
    pub binding: Binding,
}

/// A new value of a variable or persistent tensor, committed after a successful run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assign {
    /// The variable, in the caller's graph.
    pub target: NodeId,
    /// Its name, for messages.
    pub name: String,
    /// Where the value is.
    pub home: Home,
    /// `InPlace`: the kernels write a spare array of the target's shape, swapped into the
    /// state at the commit (double buffering); `Copy`: copied into the state's array.
    pub binding: Binding,
}

/// A compiled computation as data: storages, steps, and how arrays move. See the module docs.
#[derive(Clone, Debug)]
pub struct Program {
    /// Every device buffer of a workspace.
    pub storages: Vec<Storage>,
    /// The JIT kernels' steps; their code is handed over beside the program.
    pub kernels: Vec<KernelStep>,
    /// The GEMM calls.
    pub gemms: Vec<GemmStep>,
    /// What a run does, in order.
    pub steps: Vec<Step>,
    /// Per placeholder, in the computation's order.
    pub inputs: Vec<Input>,
    /// Per output, in the computation's order.
    pub outputs: Vec<Output>,
    /// Every variable or persistent tensor read.
    pub state_reads: Vec<StateRead>,
    /// Every assign, in node order.
    pub assigns: Vec<Assign>,
}

impl Program {
    /// The bytes a workspace allocates.
    pub fn workspace_bytes(&self) -> u64 {
        self.storages
            .iter()
            .map(Storage::bytes)
            .fold(0, u64::saturating_add)
    }

    /// Checks that every id names an entry of its table and that every value's [`Home`] lies
    /// inside its storage with the storage's dtype — what a run relies on to index without
    /// panicking; `Err` says what is wrong. A program the compiler builds always passes;
    /// [`NativeExecutable::new`] checks any program it is given.
    pub fn check(&self) -> Result<(), String> {
        let storage = |s: StorageId, what: &str| -> Result<&Storage, String> {
            self.storages
                .get(s.index())
                .ok_or_else(|| format!("{what}: {s} is not a storage"))
        };
        for k in &self.kernels {
            for a in &k.args {
                storage(*a, &format!("kernel @{}", k.name))?;
            }
        }
        for (i, g) in self.gemms.iter().enumerate() {
            for a in g.args {
                storage(a, &GemmId(i).to_string())?;
            }
        }
        let kernel = |k: KernelId| -> Result<(), String> {
            (k.index() < self.kernels.len())
                .then_some(())
                .ok_or_else(|| format!("step: {k} is not a kernel"))
        };
        let gemm = |g: GemmId| -> Result<(), String> {
            (g.index() < self.gemms.len())
                .then_some(())
                .ok_or_else(|| format!("step: {g} is not a GEMM call"))
        };
        for step in &self.steps {
            match step {
                Step::Kernel(k) => kernel(*k)?,
                Step::Gemm(g) => gemm(*g)?,
                Step::GemmThen {
                    gemm: g, kernel: k, ..
                } => {
                    gemm(*g)?;
                    kernel(*k)?;
                }
            }
        }
        for x in &self.inputs {
            if let Some(s) = x.storage {
                storage(s, &format!("input `{}`", x.name))?;
            }
        }
        for r in &self.state_reads {
            storage(r.storage, &format!("state `{}`", r.name))?;
        }
        let homes = self.outputs.iter().map(|o| &o.home);
        for h in homes.chain(self.assigns.iter().map(|a| &a.home)) {
            self.check_home(h, storage(h.storage, &format!("`{}`", h.name))?)?;
        }
        Ok(())
    }

    /// Checks that `h` lies inside `s`, with its dtype.
    fn check_home(&self, h: &Home, s: &Storage) -> Result<(), String> {
        let fail = |why: &str| Err(format!("`{}` in {}: {why}", h.name, h.storage));
        if h.dtype != s.dtype {
            return fail(&format!("a {} value in a {} storage", h.dtype, s.dtype));
        }
        if h.shape.len() != h.strides.len() || h.shape.len() != h.axes.len() {
            return fail("axes, lengths and strides differ in number");
        }
        if h.shape.contains(&0) {
            return Ok(());
        }
        // The first and last element it reaches, in i128 so no product overflows.
        let (mut low, mut high) = (0i128, 0i128);
        for (&n, &stride) in h.shape.iter().zip(&h.strides) {
            let reach = (n as i128 - 1) * i128::from(stride);
            if reach < 0 {
                low += reach;
            } else {
                high += reach;
            }
        }
        if low < 0 || high >= i128::from(s.elements) {
            return fail(&format!(
                "reaches elements {low}..={high} of {}",
                s.elements
            ));
        }
        Ok(())
    }

    /// The spare array an assign swaps in place of `storage`, if one does.
    pub(crate) fn swapped_assign(&self, storage: StorageId) -> Option<usize> {
        self.assigns
            .iter()
            .position(|a| a.home.storage == storage && a.binding.in_place())
    }

    /// One line per step, in schedule order (the `steps` stage of a dump).
    pub fn steps_text(&self) -> String {
        let mut s = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            s += &format!("step {i}: {}\n", self.step_text(step));
        }
        s
    }

    /// One step in words: `kernel @name`, a GEMM call's shape, or both.
    pub fn step_text(&self, step: &Step) -> String {
        match step {
            Step::Kernel(k) => format!("kernel @{}", self.kernels[k.index()].name),
            Step::Gemm(g) => {
                let gemm = &self.gemms[g.index()];
                let mut l = gemm.call.spec().display();
                if let Some(why) = &gemm.note {
                    l += &format!("; the next kernel runs after it: {why}");
                }
                l
            }
            Step::GemmThen {
                gemm,
                kernel,
                epilogue,
            } => {
                format!(
                    "{}; then epilogue kernel @{} over the same {}",
                    self.gemms[gemm.index()].call.spec().display(),
                    self.kernels[kernel.index()].name,
                    epilogue.blocks()
                )
            }
        }
    }

    /// How a call moves each input, output, state value read and assigned value (the last
    /// section of `weft explain`).
    pub fn bindings_text(&self) -> String {
        let how =
            |b: Binding, yes: &'static str, no: &'static str| if b.in_place() { yes } else { no };
        let mut s = String::from("\n# calls: how each array moves\n");
        for input in &self.inputs {
            let what = match input.storage {
                None => "unused",
                Some(_) => how(input.binding, "read in place", "copied in"),
            };
            s += &format!("input  {:<16} {what}\n", input.name);
        }
        for o in &self.outputs {
            let assigned = self.swapped_assign(o.home.storage).is_some();
            let what = match (o.binding.in_place(), assigned) {
                (true, _) => "written in place",
                (false, true) => "copied from the assigned value (one value, two owners)",
                (false, false) => "copied out",
            };
            s += &format!("output {:<16} {what}\n", o.home.name);
        }
        for r in &self.state_reads {
            let what = how(r.binding, "read in place", "copied in");
            s += &format!("state  {:<16} {what}\n", r.name);
        }
        for a in &self.assigns {
            let what = how(a.binding, "committed by swapping", "copied into the state");
            s += &format!("assign {:<16} {what}\n", a.name);
        }
        s
    }
}

fn binding_text(b: Binding) -> String {
    match b {
        Binding::InPlace => "in place".into(),
        Binding::Copy(why) => format!("copy ({why})"),
    }
}

fn home_text(h: &Home) -> String {
    let layout = if h.row_major {
        "row-major".to_string()
    } else {
        format!("strides {:?}", h.strides)
    };
    format!("{} {:?} {} {layout}", h.storage, h.shape, h.dtype)
}

/// The text form: one section per table, one line per entry.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "# storages: {} bytes a workspace",
            self.workspace_bytes()
        )?;
        for (i, s) in self.storages.iter().enumerate() {
            let kind = match &s.kind {
                StorageKind::Planned => "planned",
                StorageKind::Private => "private",
                StorageKind::State => "state",
                StorageKind::Constant(_) => "constant",
                StorageKind::Scratch => "scratch",
                StorageKind::Elided => "elided",
            };
            writeln!(
                f,
                "{}: {kind} {} x {} ({} bytes): `{}`",
                StorageId(i),
                s.dtype,
                s.elements,
                s.bytes(),
                s.holders_text()
            )?;
        }
        writeln!(f, "\n# kernels")?;
        for (i, k) in self.kernels.iter().enumerate() {
            let args: Vec<String> = k.args.iter().map(ToString::to_string).collect();
            writeln!(f, "{}: @{}({})", KernelId(i), k.name, args.join(", "))?;
        }
        if !self.gemms.is_empty() {
            writeln!(f, "\n# gemm calls")?;
        }
        for (i, g) in self.gemms.iter().enumerate() {
            let [a, b, c] = g.args;
            writeln!(
                f,
                "{}: {} (A {a}, B {b}, C {c})",
                GemmId(i),
                g.call.spec().display()
            )?;
        }
        writeln!(f, "\n# steps")?;
        let name = |k: &KernelId| &self.kernels[k.index()].name;
        for (i, step) in self.steps.iter().enumerate() {
            match step {
                Step::Kernel(k) => writeln!(f, "step {i}: {k} (@{})", name(k))?,
                Step::Gemm(g) => writeln!(f, "step {i}: {g}")?,
                Step::GemmThen { gemm, kernel, .. } => {
                    writeln!(f, "step {i}: {gemm} then {kernel} (@{})", name(kernel))?
                }
            }
        }
        writeln!(f, "\n# inputs")?;
        for x in &self.inputs {
            let at = x.storage.map_or("unused".to_string(), |s| s.to_string());
            let order = if x.order.is_some() {
                " (stored in another axes order)"
            } else {
                ""
            };
            writeln!(
                f,
                "{} {:?} -> {at}{order}: {}",
                x.name,
                x.shape,
                binding_text(x.binding)
            )?;
        }
        writeln!(f, "\n# outputs")?;
        for o in &self.outputs {
            writeln!(
                f,
                "{} <- {}: {}",
                o.home.name,
                home_text(&o.home),
                binding_text(o.binding)
            )?;
        }
        if !self.state_reads.is_empty() || !self.assigns.is_empty() {
            writeln!(f, "\n# state")?;
        }
        for r in &self.state_reads {
            writeln!(
                f,
                "read {} -> {}: {}",
                r.name,
                r.storage,
                binding_text(r.binding)
            )?;
        }
        for a in &self.assigns {
            let how = match a.binding {
                Binding::InPlace => "swapped into the state".to_string(),
                copy => binding_text(copy),
            };
            writeln!(f, "assign {} <- {}: {how}", a.name, home_text(&a.home))?;
        }
        Ok(())
    }
}
