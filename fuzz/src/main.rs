//! `weft-fuzz`: fuzz for a time budget and print the figures, or replay one saved finding.
//! Exits 1 when there is a finding (CI fails on it). docs/testing.md, "The fuzzer".

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weft_fuzz::{fuzz, replay, FuzzOptions};

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
}

fn main() -> ExitCode {
    let args = Args::parse();
    let timeout = Duration::from_secs_f64(args.case_timeout.max(0.001));
    if let Some(path) = &args.replay {
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
        let outcome = replay(&text, args.case_seed, timeout);
        println!("{outcome:?}");
        return match outcome {
            Ok(o)
                if !matches!(
                    o,
                    weft_fuzz::case::Outcome::Mismatch(_) | weft_fuzz::case::Outcome::Refused(_)
                ) =>
            {
                ExitCode::SUCCESS
            }
            _ => ExitCode::FAILURE,
        };
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut corpus = vec![
        root.join("examples"),
        root.join("tests/findings"),
        root.join("../shared/findings"),
    ];
    corpus.extend(args.corpus);
    let options = FuzzOptions {
        budget: Duration::from_secs_f64(args.seconds.max(0.0)),
        max_executions: args.max_executions,
        seed: args.seed,
        corpus,
        out: Some(args.out),
        case_timeout: timeout,
    };
    let summary = fuzz(&options);
    print!("{summary}");
    let new: Vec<_> = summary
        .findings
        .iter()
        .filter(|f| !args.known.iter().any(|k| f.message.contains(k.as_str())))
        .collect();
    let known = summary.findings.len() - new.len();
    if known > 0 {
        println!("{known} finding(s) match --known (open bugs): not counted as failures");
    }
    if new.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
