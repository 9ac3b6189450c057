//! `weft-fuzz`: fuzz for a time budget and print the figures, or replay one saved finding.
//! Exits 1 when there is a finding (CI fails on it), 2 when the run did less than asked (a
//! child that could not start; with `--require-executions`, executions short of
//! `--max-executions`). docs/testing.md, "The fuzzer".
//!
//! By default the cases run in child processes (this binary with `--child`) under a supervisor
//! (`weft_fuzz::supervise`), so an abort is a finding; `--in-process` runs them here.
#![forbid(unsafe_code)]

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weft_fuzz::child::{case_fn, limit_address_space, run_child};
use weft_fuzz::{fuzz_with, replay_with, supervise, FuzzOptions, Summary, SuperviseOptions};

/// A child's address-space limit unless `--child-memory-limit` says otherwise, in MiB.
const CHILD_MEMORY_LIMIT_MIB: u64 = 4096;
/// How long minimising one abort may take (each attempt is a process).
const ABORT_MINIMISE: Duration = Duration::from_secs(60);

/// Fuzz weft: mutated .weft texts and random graphs, every JIT configuration against the
/// interpreter.
#[derive(Parser, Debug)]
#[command(name = "weft-fuzz")]
struct Args {
    /// Time budget in seconds.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Seed of the case stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for findings (one .weft each).
    #[arg(long, default_value = "fuzz-out")]
    out: PathBuf,
    /// More folders of .weft files to mutate (besides examples/, tests/findings/ and
    /// ../shared/findings/ of the repository, when present).
    #[arg(long)]
    corpus: Vec<PathBuf>,
    /// Stop after this many executions.
    #[arg(long)]
    max_executions: Option<u64>,
    /// A case running longer than this many seconds is a hang.
    #[arg(long, default_value_t = 10.0)]
    case_timeout: f64,
    /// Replay one file (e.g. a saved finding) with `--case-seed` instead of fuzzing.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// The case seed for `--replay` (saved findings name theirs).
    #[arg(long, default_value_t = 0)]
    case_seed: u64,
    /// A known, open bug: findings whose message contains this text are reported but do not
    /// fail the run (repeatable; tests/findings/open/ lists the open ones).
    #[arg(long, value_name = "TEXT")]
    known: Vec<String>,
    /// With `--replay`: write the case (graph with its observed outputs, inputs as .npy) into
    /// this folder for `weft run`, and print the command.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// Run the cases in this process, without a supervisor (an abort then ends the run).
    #[arg(long)]
    in_process: bool,
    /// Address-space limit of each child process (and of an abort's replays) in MiB, so that
    /// an allocation past it aborts the child (a finding) before the machine runs out of
    /// memory; 0 for none [default: 4096].
    #[arg(long, value_name = "MIB")]
    child_memory_limit: Option<u64>,
    /// Fail (exit status 2) unless all `--max-executions` ran and every child started: a
    /// fixed stream cut short by the time budget must not pass (CI).
    #[arg(long, requires = "max_executions")]
    require_executions: bool,
    /// Mutate only the repository's corpus (examples/, tests/findings/) and `--corpus`, not
    /// ../shared/findings/: the same stream on every checkout (CI).
    #[arg(long)]
    repo_corpus_only: bool,
    /// Run as a supervised child (records on stdout, known findings on stdin).
    #[arg(long, hide = true)]
    child: bool,
    /// With `--child`: the index of the first case of the stream to run.
    #[arg(long, hide = true, default_value_t = 0)]
    start: u64,
    /// For the fuzzer's own tests: abort the process in every case whose text contains this.
    #[arg(long, hide = true, value_name = "TEXT")]
    plant_abort: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let timeout = Duration::from_secs_f64(args.case_timeout.max(0.001));
    if args.child || args.replay.is_some() {
        if let Err(e) = limit_address_space(args.child_memory_limit.unwrap_or(0)) {
            eprintln!("weft-fuzz: cannot limit the address space: {e}");
        }
    }
    if let Some(path) = &args.replay {
        return replay_file(&args, path, timeout);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut corpus = Vec::new();
    if !args.child {
        // A child is given the supervisor's whole list.
        corpus = vec![root.join("examples"), root.join("tests/findings")];
        if !args.repo_corpus_only {
            corpus.push(root.join("../shared/findings"));
        }
    }
    corpus.extend(args.corpus.iter().cloned());
    let options = FuzzOptions {
        budget: Duration::from_secs_f64(args.seconds.max(0.0)),
        max_executions: args.max_executions,
        seed: args.seed,
        corpus,
        out: Some(args.out.clone()),
        case_timeout: timeout,
        start: args.start,
        ..FuzzOptions::default()
    };
    if args.child {
        run_child(options, args.plant_abort);
        return ExitCode::SUCCESS;
    }
    let summary = if args.in_process {
        fuzz_with(&options, case_fn(args.plant_abort.clone()))
    } else {
        let Ok(exe) = std::env::current_exe() else {
            eprintln!("weft-fuzz: cannot find its own binary to run children");
            return ExitCode::from(2);
        };
        let sup = SuperviseOptions {
            exe,
            memory_limit_mib: args.child_memory_limit.unwrap_or(CHILD_MEMORY_LIMIT_MIB),
            plant_abort: args.plant_abort.clone(),
            abort_minimise: ABORT_MINIMISE,
        };
        supervise(&options, &sup)
    };
    // A run resumed at `--start` executes the cases from there.
    let required = args
        .require_executions
        .then(|| args.max_executions.map(|m| m.saturating_sub(args.start)))
        .flatten();
    // A child that did not start fails the run even without --require-executions.
    if let Some(why) = summary.incomplete(required) {
        print!("{summary}");
        eprintln!("weft-fuzz: incomplete run: {why}");
        return ExitCode::from(2);
    }
    report(&summary, &args.known)
}

/// Replays the case in `path` (`--replay`): prints its outcome; fails on a finding.
fn replay_file(args: &Args, path: &PathBuf, timeout: Duration) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = &args.dump {
        match weft_fuzz::case::dump_case(&text, args.case_seed, dir) {
            Ok(run_args) => println!("weft run {run_args}"),
            Err(e) => eprintln!("cannot dump the case: {e}"),
        }
    }
    let run = case_fn(args.plant_abort.clone());
    let outcome = replay_with(&text, args.case_seed, timeout, run);
    println!("{outcome:?}");
    match outcome {
        Ok(o)
            if !matches!(
                o,
                weft_fuzz::case::Outcome::Mismatch(_) | weft_fuzz::case::Outcome::Refused(_)
            ) =>
        {
            ExitCode::SUCCESS
        }
        _ => ExitCode::FAILURE,
    }
}

/// Prints the summary; fails when a finding does not match `--known`.
fn report(summary: &Summary, known: &[String]) -> ExitCode {
    print!("{summary}");
    let new: Vec<_> = summary
        .findings
        .iter()
        .filter(|f| !known.iter().any(|k| f.message.contains(k.as_str())))
        .collect();
    let matched = summary.findings.len() - new.len();
    if matched > 0 {
        println!("{matched} finding(s) match --known (open bugs): not counted as failures");
    }
    if new.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
