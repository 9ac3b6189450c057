//! The `weft` command line (clap). Every command reads a `.weft` file, binds axis lengths given
//! with `--bind`, and reports errors on stderr with a non-zero exit and no backtrace.

mod bench;
mod compile;
mod graph;
mod inputs;
mod profile;
mod summary;
mod train;

use crate::{Backend, Error, Transformer};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_ir::text;
use weft_ir::{Graph, HostArray, NodeId};

/// weft: an ahead-of-time compiler for axes-labelled tensor graphs.
#[derive(Parser, Debug)]
#[command(name = "weft", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `AXIS=LEN`: the length of a declared axis.
#[derive(Clone, Debug)]
pub struct Binding {
    axis: String,
    len: usize,
}

impl std::str::FromStr for Binding {
    type Err = String;

    /// `AXIS=LEN`, or why it is not.
    fn from_str(s: &str) -> Result<Binding, String> {
        parse_binding(s)
    }
}

fn parse_binding(s: &str) -> Result<Binding, String> {
    let (axis, len) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not AXIS=LEN"))?;
    let len: usize = len
        .trim()
        .parse()
        .map_err(|_| format!("`{len}` is not a length (a whole number, 0 or more)"))?;
    Ok(Binding {
        axis: axis.trim().to_string(),
        len,
    })
}

/// `NAME=PATH`: a placeholder's value from a `.npy` file.
#[derive(Clone, Debug)]
pub struct InputFile {
    name: String,
    path: PathBuf,
}

fn parse_input(s: &str) -> Result<InputFile, String> {
    let (name, path) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=PATH.npy"))?;
    Ok(InputFile {
        name: name.trim().to_string(),
        path: PathBuf::from(path),
    })
}

/// Which backend `weft run` evaluates with.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendArg {
    /// Fused native kernels (the default).
    Jit,
    /// Native kernels, one per op, every intermediate stored (the unfused baseline).
    Unfused,
    /// The reference interpreter.
    Interp,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Jit => Backend::Jit,
            BackendArg::Unfused => Backend::JitUnfused,
            BackendArg::Interp => Backend::Interpreter,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and verify a graph; print each tensor's axes.
    ///
    /// Parses the `.weft` file, binds the lengths given with `--bind`, verifies the graph and
    /// prints every tensor's inferred axes and dtype.
    Check {
        /// The `.weft` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
    },
    /// Print a graph in canonical text form.
    ///
    /// The output parses back to the same graph (axis table, nodes and outputs).
    Print {
        /// The `.weft` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
    },
    /// Import an ONNX model as a `.weft` graph.
    ///
    /// Every command also reads `.onnx` files directly; `import` writes the graph's canonical
    /// text (to stdout, or to `-o`), so it can be read, edited and diffed.
    Import {
        /// The `.onnx` file.
        file: PathBuf,
        /// Where to write the `.weft` text (stdout when absent).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Run a graph's outputs on given or random inputs.
    ///
    /// Placeholders given with `--input` are read from `.npy` files; the others are drawn at
    /// random from `--seed` (and written with `--save-inputs`, to give them back later).
    /// Prints a summary of each output, and writes it as NAME.npy with `--output`.
    Run {
        /// The `.weft` file.
        file: PathBuf,
        /// A placeholder's value from a `.npy` file (repeatable); others are drawn at random.
        #[arg(long = "input", value_name = "NAME=PATH", value_parser = parse_input)]
        input: Vec<InputFile>,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
        /// Seed of the generator for inputs not given.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write each output as NAME.npy into this folder.
        #[arg(short, long = "output", value_name = "DIR", alias = "output-dir")]
        output_dir: Option<PathBuf>,
        /// Write every input of the run (given or drawn) as NAME.npy into this folder.
        #[arg(long, value_name = "DIR")]
        save_inputs: Option<PathBuf>,
        /// The backend to evaluate with.
        #[arg(long, value_enum, default_value_t = BackendArg::Jit)]
        backend: BackendArg,
    },
    /// Compile on the JIT and write every stage's IR into a folder.
    ///
    /// Writes the input graph, the graph after simplify (both `.weft`, runnable), fusion
    /// groups, kernel programs, layouts, the buffer plan, and per kernel its loop IR,
    /// Cranelift IR and disassembly, with an index.txt.
    Compile {
        /// The `.weft` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
        /// The folder to write into (created if missing).
        #[arg(short = 'o', long = "output", value_name = "DIR", alias = "dump-dir")]
        dump_dir: PathBuf,
        /// Only the stages whose name (input, simplify, fusion, kernels, layout, buffers,
        /// loop-ir, clif, asm) or file name matches this regular expression.
        #[arg(long, value_name = "REGEX")]
        dump_pass: Option<String>,
        /// Compile the unfused baseline (one kernel per op).
        #[arg(long)]
        unfused: bool,
    },
    /// Explain a compilation: what is stored and why, kernel by kernel.
    ///
    /// Says why each materialised tensor is stored, and per kernel (and GEMM call) its loops,
    /// vector width, threads and bytes read and written, and how each input and output moves.
    Explain {
        /// The `.weft` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
        /// Explain the unfused baseline (one kernel per op).
        #[arg(long)]
        unfused: bool,
    },
    /// Draw the graph with its fusion groups (DOT or SVG).
    ///
    /// Ops are labelled with their axes, fusion groups drawn as clusters, stored tensors bold
    /// with their reason, inputs as houses, outputs double-bordered.
    Graph {
        /// The `.weft` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
        /// DOT text or SVG.
        #[arg(long, value_enum, default_value_t = graph::GraphFormat::Dot)]
        format: graph::GraphFormat,
        /// The graph as given, or simplified with its fusion groups.
        #[arg(long, value_enum, default_value_t = graph::GraphStage::Fused)]
        stage: graph::GraphStage,
        /// Write to this file instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Time fused JIT, unfused JIT and the interpreter, interleaved.
    ///
    /// Whole calls as a host makes them, in interleaved rounds: median / min / max, GB/s,
    /// GFLOP/s, the unfused/fused ratio, and compile time per stage.
    Bench {
        /// The `.weft` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
        /// Timed rounds.
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// Untimed rounds first (at least one).
        #[arg(long, default_value_t = 2)]
        warmup: usize,
        /// Leave the interpreter out (slow on big graphs).
        #[arg(long)]
        skip_interp: bool,
        /// JSON for scripts.
        #[arg(long)]
        json: bool,
        /// Also time the fused JIT with every dot on the loop nest (no GEMM calls), as mode
        /// `fused-loop-nest`.
        #[arg(long)]
        loop_nest: bool,
        /// Also time the fused JIT with every GEMM call and the kernel after it as two steps
        /// (no epilogue fusion), as mode `fused-epilogue-apart`.
        #[arg(long)]
        epilogue_apart: bool,
        /// Also time the fused JIT with large outputs written by ordinary stores (no
        /// non-temporal streaming), as mode `fused-ordinary-stores`.
        #[arg(long)]
        ordinary_stores: bool,
        /// Also time the fused JIT with every loop on Cranelift's 4-lane code (no assembled
        /// leaf loops), as mode `fused-cranelift-lanes`.
        #[arg(long)]
        cranelift_lanes: bool,
        /// Also time the fused JIT with leaf loops 8 lanes wide (`ymm`) on an AVX-512F host,
        /// as mode `fused-ymm-leaves` (the same as fused elsewhere).
        #[arg(long)]
        ymm_leaves: bool,
        /// Also compile the graph fused this many more times, graph to callable (the peers'
        /// `compile` workload), and report the median.
        #[arg(long, default_value_t = 0)]
        compiles: usize,
    },
    /// Time each step of a fused run alone: where the time goes.
    ///
    /// Compiles the graph fused, loads random inputs once, and runs every kernel and GEMM call
    /// of the program alone, round after round; prints the totals per kind of step and the
    /// slowest steps with their share (step numbers as in `weft explain` and the dumps).
    Profile {
        /// The `.weft` or `.onnx` file.
        file: PathBuf,
        /// Bind an axis length (repeatable).
        #[arg(long = "bind", value_name = "AXIS=LEN", value_parser = parse_binding)]
        bind: Vec<Binding>,
        /// Rounds (the median per step is reported).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// How many of the slowest steps to list.
        #[arg(long, default_value_t = 20)]
        top: usize,
        /// Profile the unfused program (one kernel per op) instead of the fused one.
        #[arg(long)]
        unfused: bool,
    },
    /// Train a classifier written as a `.weft` file on the bundled digits.
    ///
    /// The file declares placeholders `x: f32[B, P]` (P = 64 pixels) and `labels: i64[B]`, a
    /// scalar `loss`, `logits` over [B, C] (C = 10), and the optimizer's updates as `assign`s
    /// (examples/digits_mlp.weft). Each step feeds a batch and runs every assign; each epoch
    /// prints the training loss and the test loss and accuracy, with a progress bar.
    Train {
        /// The `.weft` file.
        file: PathBuf,
        /// Passes over the training set.
        #[arg(long, default_value_t = 10)]
        epochs: usize,
        /// Images per step (the batch axis is bound at each call; the last batch of an epoch
        /// may be smaller).
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Seed of the train/test split and of each epoch's shuffle.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The fraction of the images held out to test on.
        #[arg(long, default_value_t = 0.2)]
        test_fraction: f64,
        /// Write the trained variables and optimizer state as NAME.npy into this folder.
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
    },
    /// Run, check and time every bundled example.
    ///
    /// Runs each examples/*.weft on the JIT, checks it against the reference interpreter
    /// (max abs/rel error), prints its outputs, and times fused against unfused and the
    /// interpreter on graphs scaled to about 2^18 elements (a headline table).
    Demo {
        /// The folder of examples.
        #[arg(default_value = "examples")]
        dir: PathBuf,
    },
    /// Print the machine weft compiles for and runs on.
    ///
    /// One line: the native routines' instruction set and f32 lanes, the extensions detected,
    /// the L1d, L2 and L3 cache sizes and the CPU's model (what `explain` and `bench` print
    /// first).
    Target,
}

/// Runs the command line; errors go to stderr.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Check { file, bind } => {
            let graph = load(&file, &bind)?;
            graph.verify()?;
            print!("{}", summary::inferred_axes(&graph)?);
            Ok(())
        }
        Command::Import { file, output } => {
            let imported = weft_onnx::import_file(&file)?;
            let text = text::print(&imported.graph);
            match output {
                None => print!("{text}"),
                Some(path) => std::fs::write(&path, text).map_err(|source| Error::Io {
                    path: path.display().to_string(),
                    source,
                })?,
            }
            Ok(())
        }
        Command::Print { file, bind } => {
            let graph = load(&file, &bind)?;
            print!("{}", text::print(&graph));
            Ok(())
        }
        Command::Run {
            file,
            input,
            bind,
            seed,
            output_dir,
            save_inputs,
            backend,
        } => {
            let graph = load(&file, &bind)?;
            let run = RunRequest {
                files: &input,
                seed,
                backend: backend.into(),
                save_inputs: save_inputs.as_deref(),
            };
            let outputs = run_graph(&graph, run)?;
            print_outputs(&graph, &outputs, output_dir.as_deref())
        }
        Command::Compile {
            file,
            bind,
            dump_dir,
            dump_pass,
            unfused,
        } => {
            let graph = load(&file, &bind)?;
            let written =
                compile::compile_and_dump(graph, &dump_dir, dump_pass.as_deref(), unfused)?;
            for p in written {
                println!("{}", p.display());
            }
            Ok(())
        }
        Command::Explain {
            file,
            bind,
            unfused,
        } => {
            let (_, exe) = compile::compile(load(&file, &bind)?, unfused)?;
            print!("{}", weft_compiler::explain::explain(&exe));
            Ok(())
        }
        Command::Graph {
            file,
            bind,
            format,
            stage,
            output,
        } => {
            let text = graph::picture(load(&file, &bind)?, stage, format)?;
            match output {
                Some(path) => std::fs::write(&path, text).map_err(|source| Error::Io {
                    path: path.display().to_string(),
                    source,
                }),
                None => {
                    print!("{text}");
                    Ok(())
                }
            }
        }
        Command::Bench {
            file,
            bind,
            runs,
            warmup,
            skip_interp,
            json,
            loop_nest,
            epilogue_apart,
            ordinary_stores,
            cranelift_lanes,
            ymm_leaves,
            compiles,
        } => {
            let options = bench::BenchOptions {
                runs,
                warmup,
                skip_interp,
                json,
                loop_nest,
                epilogue_apart,
                ordinary_stores,
                cranelift_lanes,
                ymm_leaves,
                compiles,
            };
            print!("{}", bench::bench(load(&file, &bind)?, options)?);
            Ok(())
        }
        Command::Profile {
            file,
            bind,
            rounds,
            top,
            unfused,
        } => {
            print!(
                "{}",
                profile::profile(load(&file, &bind)?, rounds, top, unfused)?
            );
            Ok(())
        }
        Command::Train {
            file,
            epochs,
            batch,
            seed,
            test_fraction,
            save,
        } => {
            let options = train::TrainOptions {
                epochs,
                batch,
                seed,
                test_fraction,
                save,
            };
            train::train(load(&file, &[])?, &file, &options)
        }
        Command::Demo { dir } => demo(&dir),
        Command::Target => {
            println!("{}", weft_runtime::Target::host());
            Ok(())
        }
    }
}

/// Reads, parses and binds a `.weft` file, or imports an `.onnx` one.
pub fn load(file: &Path, bind: &[Binding]) -> Result<Graph, Error> {
    let mut graph = if file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
    {
        weft_onnx::import_file(file)?.graph
    } else {
        let src = std::fs::read_to_string(file).map_err(|source| Error::Io {
            path: file.display().to_string(),
            source,
        })?;
        text::parse(&src, &file.display().to_string()).map_err(|error| Error::ParseSource {
            rendered: error.render(&src),
            error: Box::new(error),
        })?
    };
    for b in bind {
        let axis = graph.find_axis(&b.axis).ok_or_else(|| {
            let names: Vec<&str> = graph
                .axis_table()
                .filter(|(_, d)| matches!(d.def, weft_ir::AxisDef::Base { .. }))
                .map(|(_, d)| d.name.as_str())
                .collect();
            Error::UnknownAxis {
                name: b.axis.clone(),
                declared: declared_axes(&graph),
                help: text::did_you_mean(&b.axis, names),
            }
        })?;
        graph.bind(axis, b.len)?;
    }
    Ok(graph)
}

fn declared_axes(graph: &Graph) -> String {
    let names: Vec<String> = graph
        .axis_table()
        .filter(|(_, d)| matches!(d.def, weft_ir::AxisDef::Base { .. }))
        .map(|(_, d)| d.name.clone())
        .collect();
    names.join(", ")
}

/// Evaluates the graph's outputs: placeholders from `.npy` files or drawn with `seed`.
/// What `weft run` was asked for.
struct RunRequest<'a> {
    files: &'a [InputFile],
    seed: u64,
    backend: Backend,
    save_inputs: Option<&'a Path>,
}

impl RunRequest<'_> {
    /// Every input drawn from seed 0, nothing saved.
    fn seeded(backend: Backend) -> RunRequest<'static> {
        RunRequest {
            files: &[],
            seed: 0,
            backend,
            save_inputs: None,
        }
    }
}

fn run_graph(graph: &Graph, run: RunRequest<'_>) -> Result<Vec<(NodeId, HostArray)>, Error> {
    let RunRequest {
        files,
        seed,
        backend,
        save_inputs,
    } = run;
    let outputs: Vec<NodeId> = if graph.outputs().is_empty() {
        return Err(Error::NoOutputs);
    } else {
        graph.outputs().to_vec()
    };
    let placeholders = graph.placeholders();
    for f in files {
        match graph.find(&f.name) {
            Some(id) if placeholders.contains(&id) => {}
            _ => {
                let names: Vec<&str> = placeholders
                    .iter()
                    .filter_map(|p| graph.node(*p).name.as_deref())
                    .collect();
                return Err(Error::UnknownPlaceholder {
                    name: f.name.clone(),
                    declared: names.join(", "),
                    help: text::did_you_mean(&f.name, names),
                });
            }
        }
    }
    // Compiled first: a run past the memory budget is refused before its inputs are made.
    let transformer = Transformer::new(graph.clone(), backend)?;
    let computation = transformer.computation(&outputs, &placeholders)?;
    let values = inputs::gather(graph, &placeholders, files, seed)?;
    if let Some(dir) = save_inputs {
        write_npys(graph, placeholders.iter().zip(&values), dir, "input")?;
    }
    let results = computation.call(&values)?;
    Ok(outputs.into_iter().zip(results).collect())
}

fn print_outputs(
    graph: &Graph,
    outputs: &[(NodeId, HostArray)],
    output_dir: Option<&Path>,
) -> Result<(), Error> {
    for (id, value) in outputs {
        println!(
            "{}",
            summary::describe(graph, &graph.node_label(*id), value)
        );
    }
    match output_dir {
        Some(dir) => write_npys(graph, outputs.iter().map(|(id, v)| (id, v)), dir, "output"),
        None => Ok(()),
    }
}

/// Writes each value as NAME.npy into `dir` (created if missing), saying so.
fn write_npys<'a>(
    graph: &Graph,
    values: impl IntoIterator<Item = (&'a NodeId, &'a HostArray)>,
    dir: &Path,
    what: &str,
) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for (id, value) in values {
        let name = graph.node_label(*id);
        let path = dir.join(format!("{}.npy", crate::transformer::file_stem(&name)));
        value.write_npy(&path)?;
        println!("{what} {name} written to {}", path.display());
    }
    Ok(())
}

fn demo(dir: &Path) -> Result<(), Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| Error::Io {
            path: dir.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "weft"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Io {
            path: dir.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no .weft files here"),
        });
    }
    for file in &files {
        println!("== {}", file.display());
        let graph = load(file, &[])?;
        let outputs = run_graph(&graph, RunRequest::seeded(Backend::Jit))?;
        print_outputs(&graph, &outputs, None)?;
        let reference = run_graph(&graph, RunRequest::seeded(Backend::Interpreter))?;
        for ((id, jit), (_, interp)) in outputs.iter().zip(&reference) {
            let (abs, rel) = max_errors(jit, interp);
            println!(
                "  {} vs interpreter: max abs error {abs:.3e}, max rel error {rel:.3e}",
                graph.node_label(*id)
            );
        }
        println!();
    }
    println!(
        "== fused vs unfused JIT (whole calls, median of 5 interleaved; each declared axis bound so \
         the largest tensor has about 2^18 elements)"
    );
    let mut fixed = Vec::new();
    for file in &files {
        let graph = load(file, &[])?;
        let rank = graph
            .nodes()
            .map(|(_, n)| n.axes.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let len = (2f64.powf(18.0 / rank as f64)).round() as usize;
        let scaled: Vec<Binding> = graph
            .axis_table()
            .filter(|(_, d)| matches!(d.def, weft_ir::AxisDef::Base { .. }))
            .map(|(_, d)| Binding {
                axis: d.name.clone(),
                len,
            })
            .collect();
        let name = file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A graph whose literal values fix its lengths runs in microseconds: a ratio of two
        // such times measures call overhead, not fusion, so it is listed instead of timed.
        // (It already ran at its declared lengths above, so an error here is a length fixed by
        // a literal, not a broken example.)
        let options = bench::BenchOptions {
            runs: 5,
            warmup: 1,
            skip_interp: true,
            json: true,
            loop_nest: false,
            epilogue_apart: false,
            ordinary_stores: false,
            cranelift_lanes: false,
            ymm_leaves: false,
            compiles: 0,
        };
        let Ok(report) = load(file, &scaled).and_then(|g| bench::bench(g, options)) else {
            fixed.push(name);
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&report).map_err(|e| Error::Io {
            path: file.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        let median = |i: usize| v["modes"][i]["median_ms"].as_f64().unwrap_or(f64::NAN);
        println!(
            "  {name:<24} axes at {len:<8} fused {:>9.3} ms   unfused {:>9.3} ms   unfused/fused {:.2}x",
            median(0),
            median(1),
            v["unfused_over_fused"].as_f64().unwrap_or(f64::NAN)
        );
    }
    if !fixed.is_empty() {
        println!(
            "  not timed (lengths fixed by literal values, too small for a meaningful ratio; \
             `weft bench FILE` times them as declared): {}",
            fixed.join(", ")
        );
    }
    Ok(())
}

/// The largest absolute and relative (to the interpreter's magnitude, at least 1e-30) difference
/// between two arrays of the same shape; infinite where one is NaN and the other is not.
fn max_errors(a: &HostArray, b: &HostArray) -> (f64, f64) {
    let (mut abs, mut rel) = (0f64, 0f64);
    for i in 0..a.len().min(b.len()) {
        let (Some(x), Some(y)) = (a.data().get(i), b.data().get(i)) else {
            continue;
        };
        let (x, y) = (x.as_f64(), y.as_f64());
        let d = if x.is_nan() && y.is_nan() || x == y {
            0.0
        } else if x.is_nan() || y.is_nan() {
            f64::INFINITY
        } else {
            (x - y).abs()
        };
        abs = abs.max(d);
        rel = rel.max(d / y.abs().max(1e-30));
    }
    if a.len() != b.len() {
        abs = f64::INFINITY;
        rel = f64::INFINITY;
    }
    (abs, rel)
}
