//! The fuzzer's own machinery: the figures it counts, determinism for a seed, a planted panic,
//! mismatch and hang each reported once and saved, a short real run over the examples; the
//! stream resumed at any case, a planted abort reported by the supervisor while the run goes
//! on, supervised and in-process runs counting alike; compile-only large cases, unbound axes
//! bound per case, and the mutator's extreme window parameters.

use std::path::PathBuf;
use std::time::Duration;
use weft_fuzz::case::{run_text, Outcome};
use weft_fuzz::mutate::Mutator;
use weft_fuzz::{
    fuzz, fuzz_events, fuzz_with, replay, Events, FindingKind, FuzzOptions, Stream, Summary,
};
use weft_oracle::SplitMix;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn options(executions: u64) -> FuzzOptions {
    FuzzOptions {
        budget: Duration::from_secs(600),
        max_executions: Some(executions),
        seed: 7,
        corpus: vec![examples()],
        out: None,
        case_timeout: Duration::from_secs(20),
        ..FuzzOptions::default()
    }
}

#[test]
fn every_example_passes_as_a_case() {
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        // The `.weft` examples (examples/ also holds Rust host programs and their data).
        if path.extension().is_none_or(|x| x != "weft") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for seed in [1, 2] {
            let outcome = run_text(&text, seed);
            assert_eq!(outcome, Outcome::Passed, "{}", path.display());
        }
    }
}

#[test]
fn a_short_run_counts_and_is_deterministic() {
    let a = fuzz(&options(150));
    let b = fuzz(&options(150));
    assert_eq!(a.executions, 150);
    assert!(a.parsed > 0 && a.compiled_and_run > 0, "{a}");
    assert!(a.parsed <= a.executions && a.compiled_and_run <= a.verified);
    assert_eq!(
        (a.parsed, a.verified, a.compiled_and_run),
        (b.parsed, b.verified, b.compiled_and_run)
    );
    let kinds = |s: &weft_fuzz::Summary| {
        s.findings
            .iter()
            .map(|f| (f.kind, f.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(&a), kinds(&b));
}

/// Parses like the real case, then fails on graphs holding `exp`: by panicking, by a mismatch
/// or by hanging.
fn planted(text: &str, kind: &str) -> Outcome {
    let Ok(g) = weft_ir::text::parse(text, "planted.weft") else {
        return Outcome::ParseError;
    };
    if !text.contains("exp(") {
        return Outcome::Passed;
    }
    drop(g);
    match kind {
        "panic" => panic!("planted {}", 1 + 1),
        "mismatch" => Outcome::Mismatch(
            "fused: call 0, output 0: element 0: 1 vs interpreter 2 (perturbed: 2)".into(),
        ),
        _ => {
            std::thread::sleep(Duration::from_secs(3600));
            Outcome::Passed
        }
    }
}

fn planted_panic(text: &str, _seed: u64) -> Outcome {
    planted(text, "panic")
}
fn planted_mismatch(text: &str, _seed: u64) -> Outcome {
    planted(text, "mismatch")
}
fn planted_hang(text: &str, _seed: u64) -> Outcome {
    planted(text, "hang")
}

#[test]
fn planted_failures_are_found_once_minimised_and_saved() {
    let out = std::env::temp_dir().join(format!("weft-fuzz-test-{}", std::process::id()));
    for (run, kind) in [
        (planted_panic as weft_fuzz::CaseFn, FindingKind::Panic),
        (planted_mismatch, FindingKind::Mismatch),
    ] {
        let mut o = options(200);
        o.out = Some(out.clone());
        let s = fuzz_with(&o, run);
        assert_eq!(s.findings.len(), 1, "{s}");
        let f = &s.findings[0];
        assert_eq!(f.kind, kind);
        assert!(f.count >= 1);
        assert!(f.text.contains("exp("), "{}", f.text);
        // Minimised: only lines the failure needs (the exp line and what it reads) remain.
        assert!(f.text.lines().count() <= 6, "{}", f.text);
        let saved = std::fs::read_to_string(f.path.as_ref().unwrap()).unwrap();
        assert!(saved.contains("--case-seed") && saved.contains("exp("));
        if kind == FindingKind::Panic {
            assert!(f.message.contains("planted 2") && f.message.contains("fuzzer.rs"));
        }
    }
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_hang_is_reported_and_the_run_goes_on() {
    let mut o = options(40);
    o.case_timeout = Duration::from_millis(200);
    let s = fuzz_with(&o, planted_hang);
    assert_eq!(s.executions, 40);
    assert_eq!(s.findings.len(), 1, "{s}");
    assert_eq!(s.findings[0].kind, FindingKind::Hang);
    assert!(s.findings[0].count >= 1);
}

#[test]
fn replay_runs_one_text_under_the_watchdog() {
    let text = std::fs::read_to_string(examples().join("softmax.weft")).unwrap();
    assert_eq!(
        replay(&text, 3, Duration::from_secs(60)),
        Ok(Outcome::Passed)
    );
    assert_eq!(
        replay("axis = = (", 3, Duration::from_secs(60)),
        Ok(Outcome::ParseError)
    );
}

/// Every fuzz finding kept as a regression test (`tests/findings/*.weft` whose header names its
/// `--case-seed`) replays as the fuzzer found it — the same inputs and observed outputs — and
/// passes: `tests/findings.rs` runs the same files with its own inputs and output sets, which
/// need not reach what the fuzzer's did.
#[test]
fn every_fuzz_finding_replays_and_passes_with_its_case_seed() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/findings");
    let mut replayed = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "weft") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A header naming a case seed that does not parse must fail, not skip the file.
        if !text
            .lines()
            .next()
            .is_some_and(|l| l.contains("--case-seed"))
        {
            continue;
        }
        let seed = case_seed(&text)
            .unwrap_or_else(|| panic!("{}: unreadable --case-seed header", path.display()));
        let outcome = replay(&text, seed, Duration::from_secs(120));
        // Passed, or (too large to run) compiled on every configuration without a refusal.
        assert!(
            matches!(outcome, Ok(Outcome::Passed | Outcome::TooLarge)),
            "{} (case seed {seed}): {outcome:?}",
            path.display()
        );
        replayed += 1;
    }
    // 46 on 2026-11-30; the count only grows as findings are added.
    assert!(
        replayed >= 46,
        "only {replayed} findings name their case seed"
    );
}

/// The `--case-seed N` a saved finding's first comment line names.
fn case_seed(text: &str) -> Option<u64> {
    let header = text.lines().next()?.strip_prefix('#')?;
    let rest = &header[header.find("--case-seed ")? + "--case-seed ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// The binary with `args`, its stdout and exit code.
fn run_binary(args: &[&str]) -> (String, Option<i32>) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weft-fuzz"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("weft-fuzz runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code(),
    )
}

#[test]
fn an_abort_is_a_finding_and_the_supervised_run_goes_on() {
    let out = std::env::temp_dir().join(format!("weft-fuzz-abort-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let examples = examples().display().to_string();
    let (stdout, code) = run_binary(&[
        "--seed",
        "3",
        "--max-executions",
        "30",
        "--seconds",
        "600",
        "--corpus",
        &examples,
        "--out",
        out.to_str().unwrap(),
        "--plant-abort",
        "placeholder",
    ]);
    assert_eq!(code, Some(1), "{stdout}");
    // Every case holding the marker killed its child; the run still drew all 30 cases.
    assert!(stdout.starts_with("30 executions"), "{stdout}");
    assert!(stdout.contains("Abort ×"), "{stdout}");
    assert_eq!(
        stdout.matches("Abort ×").count(),
        1,
        "one signature: {stdout}"
    );
    let saved: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with("_abort.weft"))
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let text = std::fs::read_to_string(out.join(&saved[0])).unwrap();
    assert!(
        text.contains("placeholder"),
        "the saved case still aborts: {text}"
    );
    // Its header names the status, the stderr line, the case and its seed; minimised by
    // replays in children of their own to the one line that aborts.
    assert!(text.contains("killed by signal 6 (SIGABRT): weft-fuzz: planted abort"));
    assert!(
        text.contains("of the stream") && text.contains("--case-seed"),
        "{text}"
    );
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(body.len(), 1, "{text}");
    // The same stream in process, without the marker, draws the same 30 cases.
    let (plain, code) = run_binary(&[
        "--seed",
        "3",
        "--max-executions",
        "30",
        "--seconds",
        "600",
        "--corpus",
        &examples,
        "--out",
        out.to_str().unwrap(),
        "--in-process",
    ]);
    assert_eq!(code, Some(0), "{plain}");
    assert!(plain.starts_with("30 executions"), "{plain}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn graphs_too_large_to_run_are_compiled_and_may_only_be_refused_for_their_size() {
    // A benign large graph compiles; a pool over 2^32 positions is refused by the budget;
    // both are TooLarge (compiled only), never Refused.
    let big = "axis N = 16777216\nplaceholder x: f32[N]\ny = exp(x)\noutput y\n";
    assert_eq!(run_text(big, 1), Outcome::TooLarge);
    let pool = "axis C = 1 : Channel\naxis T = 4294967296 : Time\nplaceholder x: f32[C, T]\n\
                y = avg_pool(x, Time=(window=2, pad=(1, 0)))\noutput y\n";
    assert_eq!(run_text(pool, 1), Outcome::TooLarge);
    // 2^40 elements: refused by the memory budget.
    let huge = "axis N = 1099511627776\nplaceholder x: f32[N]\ny = exp(x)\nz = sum(y, [N])\n";
    assert_eq!(run_text(huge, 2), Outcome::TooLarge);
    // Unbound axes are bound from the case seed; a channel mismatch is then a verify error on
    // every backend, not a refusal by one.
    let conv = "axis C = 1 : Channel\naxis K = 2 : Channelout\naxis J : Channel\n\
                axis T = 6 : Time\naxis F = 2 : Time\nplaceholder x: f64[C, T]\n\
                placeholder f: f64[K, J, F]\ny = convolution(x, f)\noutput y\n";
    for seed in 0..20 {
        let o = run_text(conv, seed);
        assert!(
            matches!(o, Outcome::Passed | Outcome::VerifyError),
            "seed {seed}: {o:?}"
        );
    }
}

/// Records the cases a run announces.
#[derive(Default)]
struct Cases(Vec<(u64, u64, String)>);

impl Events for Cases {
    fn case(&mut self, index: u64, seed: u64, text: &str, _before: &Summary) {
        self.0.push((index, seed, text.to_string()));
    }
}

fn parse_only(text: &str, _seed: u64) -> Outcome {
    match weft_ir::text::parse(text, "parse_only.weft") {
        Ok(_) => Outcome::VerifyError,
        Err(_) => Outcome::ParseError,
    }
}

#[test]
fn a_run_resumed_at_a_case_draws_the_same_stream_from_there() {
    let mut whole = Stream::new(&options(0));
    let cases: Vec<_> = (0..200).map(|_| whole.next_case()).collect();
    let mut o = options(200);
    o.start = 120;
    let mut seen = Cases::default();
    let s = fuzz_events(&o, parse_only, &mut seen);
    assert_eq!(s.executions, 80, "{s}");
    assert_eq!(seen.0, cases[120..]);
}

#[test]
fn a_supervised_run_counts_as_an_in_process_one() {
    let out = std::env::temp_dir().join(format!("weft-fuzz-same-{}", std::process::id()));
    let examples = examples().display().to_string();
    let args = [
        "--seed",
        "3",
        "--max-executions",
        "80",
        "--corpus",
        &examples,
        "--out",
        out.to_str().unwrap(),
    ];
    let (supervised, a) = run_binary(&args);
    let (in_process, b) = run_binary(&[&args[..], &["--in-process"]].concat());
    let figures = |s: &str| {
        let first = s.lines().next().unwrap_or("").to_string();
        let (before, after) = first.split_once(" in ").unwrap();
        let after = after.split_once(" s (").unwrap().1.to_string();
        (before.to_string(), after)
    };
    assert_eq!(
        figures(&supervised),
        figures(&in_process),
        "{supervised}{in_process}"
    );
    assert_eq!(a, b);
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn unbound_axes_are_bound_per_case_at_call_time_or_before() {
    // On a placeholder: bound at call time by the JIT, before by the oracle.
    let at_call = "axis N\naxis C = 2\nplaceholder x: f32[N, C]\ny = exp(x)\nz = sum(y, [C])\n";
    // On a variable: bound before the run (state cannot be bound at call time).
    let on_state = "axis N\nvariable v: f64[N] = 0.5\ny = tanh(v)\noutput y\n";
    for seed in 0..6 {
        assert_eq!(run_text(at_call, seed), Outcome::Passed, "seed {seed}");
        assert_eq!(run_text(on_state, seed), Outcome::Passed, "seed {seed}");
    }
    let lengths: std::collections::HashSet<usize> = (0..40)
        .map(|seed| {
            let g = weft_ir::text::parse(at_call, "a.weft").unwrap();
            weft_fuzz::case::binding(&g, seed).unwrap()[0].1
        })
        .collect();
    assert!(lengths.contains(&0) && lengths.contains(&1) && lengths.len() >= 5);
}

#[test]
fn the_mutator_gives_convolutions_and_pools_extreme_parameters() {
    let text = "axis C = 1 : Channel\naxis K = 2 : Channelout\naxis H = 5 : Height\n\
                axis R = 3 : Height\nplaceholder x: f32[C, H]\nplaceholder w: f32[K, C, R]\n\
                y = convolution(x, w, Height=(stride=1, pad=(1, 1)))\n\
                m = max_pool(y, Height=(window=2))\n";
    let m = Mutator::default();
    let extreme = [
        "=18446744073709551615",
        "=9223372036854775808",
        "=4294967295",
        "(18446744073709551615",
    ];
    let (mut conv, mut pool) = (false, false);
    for seed in 0..1000 {
        let out = m.mutate(text, text, 1, &mut SplitMix(seed));
        let huge = |l: &&str| extreme.iter().any(|e| l.contains(e));
        conv |= out
            .lines()
            .filter(|l| l.contains("convolution("))
            .any(|l| huge(&l));
        pool |= out
            .lines()
            .filter(|l| l.contains("max_pool("))
            .any(|l| huge(&l));
    }
    assert!(conv && pool, "conv {conv}, pool {pool}");
}

/// A fixed stream cut short fails with `--require-executions` (exit 2): here the budget of
/// 0.5 s ends a 10⁹-execution run; without the flag the same run passes.
#[test]
fn a_run_cut_short_by_its_budget_fails_when_all_executions_are_required() {
    let out = std::env::temp_dir().join(format!("weft-fuzz-short-{}", std::process::id()));
    let examples = examples().display().to_string();
    let args = [
        "--seed",
        "3",
        "--max-executions",
        "1000000000",
        "--seconds",
        "0.5",
        "--in-process",
        "--repo-corpus-only",
        "--corpus",
        &examples,
        "--out",
        out.to_str().unwrap(),
    ];
    let (_, code) = run_binary(&args);
    assert_eq!(code, Some(0));
    let (stdout, code) = run_binary(&[&args[..], &["--require-executions"]].concat());
    assert_eq!(code, Some(2), "{stdout}");
    std::fs::remove_dir_all(&out).ok();
}

/// A supervisor whose child binary cannot start stops, and says so ([`Summary::incomplete`]):
/// a run that ran nothing must not pass.
#[test]
fn a_child_that_does_not_start_makes_the_run_incomplete() {
    let sup = weft_fuzz::SuperviseOptions {
        exe: PathBuf::from("/nonexistent/weft-fuzz"),
        memory_limit_mib: 0,
        plant_abort: None,
        abort_minimise: Duration::ZERO,
    };
    let summary = weft_fuzz::supervise(&options(10), &sup);
    assert_eq!(summary.executions, 0);
    assert!(summary.child_not_started.is_some(), "{summary}");
    let why = summary.incomplete(None).expect("incomplete");
    assert!(why.contains("could not be started"), "{why}");
    assert!(summary.incomplete(Some(10)).is_some());
}
