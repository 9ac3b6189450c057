#![warn(missing_docs)]
//! weft's fuzzer (stable Rust, no sanitizers): mutated `.weft` texts and random graphs through
//! parse → verify → compile (fused, unfused, forced parallel) → run, compared with the
//! interpreter by `weft_ir::testing`'s oracle (docs/testing.md, "The fuzzer").
//!
//! Assumes cases are cheap (small tensors, [`case::MAX_ELEMENTS`]). Guarantees: deterministic
//! for a seed and corpus (the case stream does not depend on timing; only how far it gets
//! does); each case runs on a worker thread under a watchdog, so a panic (caught), a mismatch, a
//! JIT refusal or a case over the time limit (a hang) is a [`Finding`], saved as a line-minimised
//! `.weft` with the seed that reproduces it. Aborts (out of memory, stack overflow) cannot be
//! caught in process; the size limit keeps the known ones away.

pub mod case;
pub mod mutate;

use case::Outcome;
use mutate::Mutator;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft_ir::testing::{graph_from_choices, GraphConfig, SplitMix};

/// What to fuzz and for how long.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// Stop after this much time.
    pub budget: Duration,
    /// Stop after this many executions (parse attempts), if set.
    pub max_executions: Option<u64>,
    /// The seed of the case stream.
    pub seed: u64,
    /// Folders of `.weft` files to mutate (not recursive); missing ones are skipped.
    pub corpus: Vec<PathBuf>,
    /// Where findings are written (created when there is one).
    pub out: Option<PathBuf>,
    /// A case running longer than this is a hang.
    pub case_timeout: Duration,
}

impl Default for FuzzOptions {
    fn default() -> FuzzOptions {
        FuzzOptions {
            budget: Duration::from_secs(60),
            max_executions: None,
            seed: 1,
            corpus: Vec::new(),
            out: None,
            case_timeout: Duration::from_secs(10),
        }
    }
}

/// The kind of a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// Something panicked.
    Panic,
    /// A JIT configuration computed other values than the interpreter.
    Mismatch,
    /// A JIT configuration refused a graph the interpreter runs.
    Refused,
    /// A case ran over the time limit.
    Hang,
}

/// A distinct failure: the first case that showed it, and how many cases did.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Its kind.
    pub kind: FindingKind,
    /// What failed (the panic message and place, the comparison, the JIT's error).
    pub message: String,
    /// The (line-minimised) text of the first case that showed it.
    pub text: String,
    /// The case seed that reproduces it with that text (inputs and observed outputs).
    pub case_seed: u64,
    /// How many cases showed it.
    pub count: u64,
    /// Where it was saved.
    pub path: Option<PathBuf>,
}

/// The figures of a run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Parse attempts.
    pub executions: u64,
    /// Texts that parsed.
    pub parsed: u64,
    /// Graphs that verified.
    pub verified: u64,
    /// Graphs compiled and run on every JIT configuration (or failing there: a finding).
    pub compiled_and_run: u64,
    /// Verified graphs too large to compile and run.
    pub too_large: u64,
    /// Graphs the interpreter refused.
    pub interpreter_refused: u64,
    /// Distinct findings, in the order found.
    pub findings: Vec<Finding>,
    /// Time spent.
    pub elapsed: Duration,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} executions, {} compile-and-run cases in {:.1} s ({} parsed, {} verified, {} too \
             large, {} refused by the interpreter); {} distinct findings ({} cases)",
            self.executions,
            self.compiled_and_run,
            self.elapsed.as_secs_f64(),
            self.parsed,
            self.verified,
            self.too_large,
            self.interpreter_refused,
            self.findings.len(),
            self.findings.iter().map(|x| x.count).sum::<u64>()
        )?;
        for x in &self.findings {
            let at = x.path.as_ref().map(|p| p.display().to_string());
            writeln!(
                f,
                "  {:?} ×{} seed {}: {} {}",
                x.kind,
                x.count,
                x.case_seed,
                first_line(&x.message),
                at.unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

/// What the worker reports for one case: the outcome, or a panic message.
type Report = Result<Outcome, String>;

/// Runs one case; the engine is generic over it so that its own tests can plant failures.
pub type CaseFn = fn(&str, u64) -> Outcome;

/// Fuzzes with `options`, running each case with [`case::run_text`].
pub fn fuzz(options: &FuzzOptions) -> Summary {
    fuzz_with(options, case::run_text)
}

/// Fuzzes with `options`, running each case with `run`.
pub fn fuzz_with(options: &FuzzOptions, run: CaseFn) -> Summary {
    let start = Instant::now();
    let mut corpus = Corpus::new(load_corpus(&options.corpus));
    let mutator = Mutator::default();
    let mut rng = SplitMix(options.seed);
    let mut worker = Worker::spawn(run);
    let mut summary = Summary::default();
    let mut by_signature: HashMap<(FindingKind, String), usize> = HashMap::new();
    while start.elapsed() < options.budget
        && options
            .max_executions
            .is_none_or(|m| summary.executions < m)
    {
        let case_seed = rng.next_u64();
        let text = next_text(&mut corpus, &mutator, &mut rng);
        summary.executions += 1;
        let report = worker.run(&text, case_seed, options.case_timeout);
        let finding = match report {
            None => {
                // The worker is stuck; leave it and start another.
                worker = Worker::spawn(run);
                Some((
                    FindingKind::Hang,
                    format!("over {:?}", options.case_timeout),
                ))
            }
            Some(Err(panic)) => Some((FindingKind::Panic, panic)),
            Some(Ok(outcome)) => count(&mut summary, &outcome),
        };
        let Some((kind, message)) = finding else {
            continue;
        };
        if kind != FindingKind::Hang {
            summary.compiled_and_run += u64::from(kind != FindingKind::Panic);
        }
        let key = (kind, signature(&message));
        if let Some(&i) = by_signature.get(&key) {
            summary.findings[i].count += 1;
            continue;
        }
        let text = if kind == FindingKind::Hang {
            text
        } else {
            minimise(&mut worker, &text, case_seed, &key, options.case_timeout)
        };
        let mut finding = Finding {
            kind,
            message,
            text,
            case_seed,
            count: 1,
            path: None,
        };
        if let Some(dir) = &options.out {
            finding.path = save(dir, summary.findings.len(), &finding).ok();
        }
        by_signature.insert(key, summary.findings.len());
        summary.findings.push(finding);
    }
    summary.elapsed = start.elapsed();
    summary
}

/// Adds a non-panicking outcome to the figures; a finding's kind and message if it is one.
fn count(summary: &mut Summary, outcome: &Outcome) -> Option<(FindingKind, String)> {
    if *outcome != Outcome::ParseError {
        summary.parsed += 1;
    }
    if !matches!(outcome, Outcome::ParseError | Outcome::VerifyError) {
        summary.verified += 1;
    }
    match outcome {
        Outcome::TooLarge => summary.too_large += 1,
        Outcome::InterpreterRefused => summary.interpreter_refused += 1,
        Outcome::Passed => summary.compiled_and_run += 1,
        Outcome::Mismatch(m) => return Some((FindingKind::Mismatch, m.clone())),
        Outcome::Refused(m) => return Some((FindingKind::Refused, m.clone())),
        Outcome::ParseError | Outcome::VerifyError => {}
    }
    None
}

/// Where the next case's text comes from, by percent: a fresh random graph as drawn (small,
/// sometimes large), one mutated, a mutated corpus text, or a text damaged by a few character
/// edits (mostly a parse error: the cheap executions that exercise the parser).
fn next_text(corpus: &mut Corpus, mutator: &Mutator, r: &mut SplitMix) -> String {
    let roll = r.below(100);
    if roll < 6 || corpus.texts.is_empty() {
        let text = random_graph_text(r);
        corpus.remember(&text);
        if roll < 4 {
            return text;
        }
        let donor = corpus.pick(r).to_string();
        return mutator.mutate(&text, &donor, 1 + r.below(3), r);
    }
    let text = corpus.pick(r).to_string();
    if roll < 10 {
        let donor = corpus.pick(r).to_string();
        return mutator.mutate(&text, &donor, 1 + r.below(4), r);
    }
    mutator.damage(&text, 1 + r.below(3), r)
}

/// The printed text of a random compilable graph (one in 30 large).
fn random_graph_text(r: &mut SplitMix) -> String {
    let config = if r.chance(3) {
        GraphConfig::large()
    } else {
        GraphConfig::compilable()
    };
    let choices: Vec<u32> = (0..config.choice_len())
        .map(|_| r.next_u64() as u32)
        .collect();
    weft_ir::text::print(&graph_from_choices(&choices, &config))
}

/// The texts mutants are made from: the corpus files, then the last generated graphs.
struct Corpus {
    texts: Vec<String>,
    files: usize,
    next: usize,
}

impl Corpus {
    const RECENT: usize = 64;

    fn new(files: Vec<String>) -> Corpus {
        Corpus {
            files: files.len(),
            texts: files,
            next: 0,
        }
    }

    fn remember(&mut self, text: &str) {
        if self.texts.len() < self.files + Self::RECENT {
            self.texts.push(text.to_string());
        } else {
            self.texts[self.files + self.next] = text.to_string();
            self.next = (self.next + 1) % Self::RECENT;
        }
    }

    fn pick(&self, r: &mut SplitMix) -> &str {
        &self.texts[r.below(self.texts.len())]
    }
}

/// A finding's identity, so that the same bug on another graph counts once: a panic's place; a
/// mismatch's configuration and the classes of the two values (NaN, ±inf, ±0, finite, other);
/// a refusal's message with numbers blurred.
fn signature(message: &str) -> String {
    let line = first_line(message);
    if let Some(place) = line.strip_prefix("panic at ") {
        return place.split(": ").next().unwrap_or(place).to_string();
    }
    if let (Some(config), Some(element)) = (line.split(": ").next(), line.find("element ")) {
        let rest = &line[element..];
        let mut words = rest.split_whitespace();
        let got = words.nth(2).unwrap_or("");
        let want = words.nth(2).unwrap_or("");
        return format!("{config}: {} vs {}", value_class(got), value_class(want));
    }
    // Refusals: numbers and `quoted` axis names blurred.
    let mut out = String::new();
    let (mut last_digit, mut quoted) = (false, false);
    for c in line.chars().take(160) {
        let digit = c.is_ascii_digit();
        if c == '`' {
            quoted = !quoted;
            out.push_str(if quoted { "`#" } else { "`" });
        } else if quoted || digit && last_digit {
        } else if digit {
            out.push('#');
        } else {
            out.push(c);
        }
        last_digit = digit;
    }
    out
}

/// The class of a printed value: NaN, ±inf, ±0, finite, or the word itself (bools).
fn value_class(word: &str) -> String {
    match word.trim_end_matches(',').parse::<f64>() {
        Ok(v) if v.is_nan() => "NaN".into(),
        Ok(v) if v.is_infinite() => format!("{}inf", if v > 0.0 { "+" } else { "-" }),
        Ok(v) if v == 0.0 => format!("{}0", if v.is_sign_negative() { "-" } else { "+" }),
        Ok(_) => "finite".into(),
        Err(_) => word.to_string(),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Removes lines from `text` one at a time (last first) while the case still shows the same
/// finding (`key`), up to a few hundred attempts.
fn minimise(
    worker: &mut Worker,
    text: &str,
    seed: u64,
    key: &(FindingKind, String),
    timeout: Duration,
) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let mut attempts = 0;
    let mut i = lines.len();
    while i > 0 && attempts < 300 {
        i -= 1;
        let mut shorter = lines.clone();
        shorter.remove(i);
        let candidate = shorter.join("\n") + "\n";
        attempts += 1;
        let same = match worker.run(&candidate, seed, timeout) {
            Some(Err(panic)) => key.0 == FindingKind::Panic && signature(&panic) == key.1,
            Some(Ok(Outcome::Mismatch(m))) => {
                key.0 == FindingKind::Mismatch && signature(&m) == key.1
            }
            Some(Ok(Outcome::Refused(m))) => {
                key.0 == FindingKind::Refused && signature(&m) == key.1
            }
            Some(Ok(_)) => false,
            None => {
                *worker = Worker::spawn(worker.run_fn);
                false
            }
        };
        if same {
            lines = shorter;
        }
    }
    lines.join("\n") + "\n"
}

/// Writes `finding` as `NNN_kind.weft` in `dir`, with a header saying how to replay it.
fn save(dir: &Path, index: usize, finding: &Finding) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let kind = format!("{:?}", finding.kind).to_lowercase();
    let path = dir.join(format!("{index:03}_{kind}.weft"));
    let header: String = finding
        .message
        .lines()
        .take(6)
        .map(|l| format!("# {l}\n"))
        .collect();
    let body = format!(
        "# weft-fuzz {kind} (×{} when saved); replay: weft-fuzz --replay {} --case-seed {}\n{header}{}",
        finding.count,
        path.display(),
        finding.case_seed,
        finding.text
    );
    std::fs::write(&path, body)?;
    Ok(path)
}

/// The `.weft` files of `dirs` (sorted, so the case stream does not depend on directory order).
pub fn load_corpus(dirs: &[PathBuf]) -> Vec<String> {
    let mut paths: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// Runs `text` with `seed` once, under the same watchdog and panic catching as the fuzzer.
pub fn replay(text: &str, seed: u64, timeout: Duration) -> Result<Outcome, String> {
    let mut worker = Worker::spawn(case::run_text);
    match worker.run(text, seed, timeout) {
        Some(report) => report,
        None => Err(format!("hang: over {timeout:?}")),
    }
}

/// A thread running cases, with big stack and panics caught.
struct Worker {
    jobs: Sender<(String, u64)>,
    reports: Receiver<Report>,
    run_fn: CaseFn,
}

/// Where the last panic happened and what it said (set by the fuzzer's panic hook).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

impl Worker {
    fn spawn(run: CaseFn) -> Worker {
        install_panic_hook();
        let (jobs, job_rx) = mpsc::channel::<(String, u64)>();
        let (report_tx, reports) = mpsc::channel();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let spawned = std::thread::Builder::new()
            .name("weft-fuzz-case".into())
            .stack_size(256 << 20)
            .spawn(move || loop {
                let Ok((text, seed)) = job_rx
                    .lock()
                    .map(|rx| rx.recv())
                    .unwrap_or(Err(mpsc::RecvError))
                else {
                    return;
                };
                let result = std::panic::catch_unwind(|| run(&text, seed)).map_err(|_| {
                    LAST_PANIC
                        .lock()
                        .ok()
                        .and_then(|mut p| p.take())
                        .unwrap_or_else(|| "panic".into())
                });
                if report_tx.send(result).is_err() {
                    return;
                }
            });
        if let Err(e) = spawned {
            panic!("cannot start the fuzz worker thread: {e}");
        }
        Worker {
            jobs,
            reports,
            run_fn: run,
        }
    }

    /// The case's report, or `None` if it ran over `timeout`.
    fn run(&mut self, text: &str, seed: u64, timeout: Duration) -> Option<Report> {
        self.jobs.send((text.to_string(), seed)).ok()?;
        // Timed out, or the worker died with the case: either way no report.
        self.reports.recv_timeout(timeout).ok()
    }
}

/// Replaces the default panic message on stderr by a record of the panic for the finding.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_worker = std::thread::current().name() == Some("weft-fuzz-case");
            if !on_worker {
                return default(info);
            }
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if let Ok(mut last) = LAST_PANIC.lock() {
                *last = Some(format!("panic at {place}: {message}"));
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::signature;

    #[test]
    fn signatures_blur_what_varies_between_graphs() {
        let a = "fused: JIT: cannot compile %7: axis `W*W` is indexed (needs div/mod)";
        let b = "fused: JIT: cannot compile %13: axis `A1^-1**A4` is indexed (needs div/mod)";
        assert_eq!(signature(a), signature(b));
        let m = "fused: call 0, output 4: element 81: -0.0 vs interpreter 0.0 (perturbed: 0.0)";
        assert_eq!(signature(m), "fused: -0 vs +0");
        let p = "panic at compiler/src/x.rs:12: index 7 out of range";
        assert_eq!(signature(p), "compiler/src/x.rs:12");
    }
}
