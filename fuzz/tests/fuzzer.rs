//! The fuzzer's own machinery: the figures it counts, determinism for a seed, a planted panic,
//! mismatch and hang each reported once and saved, and a short real run over the examples.

use std::path::PathBuf;
use std::time::Duration;
use weft_fuzz::case::{run_text, Outcome};
use weft_fuzz::{fuzz, fuzz_with, replay, FindingKind, FuzzOptions};

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
        let Some(seed) = case_seed(&text) else {
            continue;
        };
        let outcome = replay(&text, seed, Duration::from_secs(120));
        assert!(
            matches!(outcome, Ok(Outcome::Passed)),
            "{} (case seed {seed}): {outcome:?}",
            path.display()
        );
        replayed += 1;
    }
    assert!(replayed > 0, "no finding names its case seed");
}

/// The `--case-seed N` a saved finding's first comment line names.
fn case_seed(text: &str) -> Option<u64> {
    let header = text.lines().next()?.strip_prefix('#')?;
    let rest = &header[header.find("--case-seed ")? + "--case-seed ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}
