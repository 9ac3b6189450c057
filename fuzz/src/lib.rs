#![warn(missing_docs)]
#![deny(unsafe_code)]
//! weft's fuzzer (stable Rust, no sanitizers): mutated `.weft` texts and random graphs through
//! parse → verify → compile (fused, unfused, forced parallel) → run, compared with the
//! interpreter by `weft_oracle`'s oracle (docs/testing.md, "The fuzzer").
//!
//! Assumes cases are cheap to run (small tensors, [`case::MAX_ELEMENTS`]; larger graphs are
//! compiled only). Guarantees: the case stream is a function of the seed and the corpus (not of
//! timing, nor of the cases' outcomes; only how far it gets depends on them), and a run may
//! start anywhere in it ([`FuzzOptions::start`]); each case runs on a worker thread under a
//! watchdog, so a panic (caught), a mismatch, a JIT refusal or a case over the time limit (a
//! hang) is a [`Finding`], saved as a line-minimised `.weft` with the seed that reproduces it.
//! Aborts (out of memory, stack overflow) cannot be caught in process: [`supervise()`] runs the
//! engine in child processes and turns a child's death into an [`FindingKind::Abort`] finding.

pub mod case;
pub mod child;
pub mod mutate;
pub mod supervise;

pub use supervise::{supervise, SuperviseOptions};

use case::Outcome;
use mutate::Mutator;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft_oracle::{graph_from_choices, text_from_choices, GraphConfig, SplitMix};

/// What to fuzz and for how long.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// Stop after this much time.
    pub budget: Duration,
    /// Stop when the case stream reaches this many executions (parse attempts, counted from
    /// the stream's start, so the cases before [`FuzzOptions::start`] count), if set.
    pub max_executions: Option<u64>,
    /// The seed of the case stream.
    pub seed: u64,
    /// Folders of `.weft` files to mutate (not recursive); missing ones are skipped.
    pub corpus: Vec<PathBuf>,
    /// Where findings are written (created when there is one).
    pub out: Option<PathBuf>,
    /// A case running longer than this is a hang.
    pub case_timeout: Duration,
    /// The index in the case stream of the first case to run: the cases before it are drawn
    /// (the stream depends on them) but not run. How a supervised child resumes.
    pub start: u64,
    /// Findings (kind and [`signature`]) found before, by earlier children of a supervised
    /// run: counted, not minimised again.
    pub known: Vec<(FindingKind, String)>,
    /// Stop at the first hang instead of starting another worker beside the stuck one (a
    /// supervised child does: the stuck thread dies with its process).
    pub stop_after_hang: bool,
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
            start: 0,
            known: Vec::new(),
            stop_after_hang: false,
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
    /// The process running the case died (a signal or an abnormal exit: out of memory, stack
    /// overflow); only a supervised run ([`supervise()`]) survives to report it.
    Abort,
}

impl FindingKind {
    /// Every kind.
    pub const ALL: [FindingKind; 5] = [
        FindingKind::Panic,
        FindingKind::Mismatch,
        FindingKind::Refused,
        FindingKind::Hang,
        FindingKind::Abort,
    ];

    /// The kind's name in file names and records: `panic`, `mismatch`, ….
    pub fn name(self) -> String {
        format!("{self:?}").to_lowercase()
    }

    /// The kind named `name` ([`FindingKind::name`]).
    pub fn from_name(name: &str) -> Option<FindingKind> {
        FindingKind::ALL.into_iter().find(|k| k.name() == name)
    }
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
    /// Verified graphs too large to run, compiled only (each configuration compiling them or
    /// refusing them for their size).
    pub too_large: u64,
    /// Graphs the interpreter refused.
    pub interpreter_refused: u64,
    /// Distinct findings, in the order found.
    pub findings: Vec<Finding>,
    /// Time spent.
    pub elapsed: Duration,
    /// The run stopped at a hang ([`FuzzOptions::stop_after_hang`]) before its budget ran out.
    pub stopped_at_hang: bool,
    /// A child process could not be started (supervised runs): the run stopped there.
    pub child_not_started: Option<String>,
}

impl Summary {
    /// The counted figures, in field order (executions to interpreter refusals): what a
    /// supervised child reports.
    pub fn counters(&self) -> [u64; 6] {
        [
            self.executions,
            self.parsed,
            self.verified,
            self.compiled_and_run,
            self.too_large,
            self.interpreter_refused,
        ]
    }

    /// Why the run did less than it was asked, if it did: a child that could not be started,
    /// or fewer than `required` executions (the time budget ran out first). A run that must
    /// draw a fixed stream (CI) fails on it, or it would pass on a shorter stream.
    pub fn incomplete(&self, required: Option<u64>) -> Option<String> {
        if let Some(e) = &self.child_not_started {
            return Some(format!("a child process could not be started: {e}"));
        }
        match required {
            Some(n) if self.executions < n => Some(format!(
                "{} of the {n} executions asked ran before the time budget ran out",
                self.executions
            )),
            _ => None,
        }
    }

    /// Adds `counters` ([`Summary::counters`] of another run) to these figures.
    pub fn add_counters(&mut self, counters: [u64; 6]) {
        let [e, p, v, c, t, i] = counters;
        self.executions += e;
        self.parsed += p;
        self.verified += v;
        self.compiled_and_run += c;
        self.too_large += t;
        self.interpreter_refused += i;
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} executions, {} compile-and-run cases in {:.1} s ({} parsed, {} verified, {} too \
             large to run (compiled only), {} refused by the interpreter); {} distinct findings \
             ({} cases)",
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

/// What the engine tells its caller as it goes: a supervised child forwards it to the
/// supervisor ([`child`]), so that what it did survives its death. Every method does nothing
/// by default.
pub trait Events {
    /// Case `index` of the stream (its seed and text) is about to run; `before` holds the
    /// figures of the cases run before it.
    fn case(&mut self, _index: u64, _seed: u64, _text: &str, _before: &Summary) {}
    /// A minimisation attempt (`text`, with the current case's seed) is about to run.
    fn attempt(&mut self, _text: &str) {}
    /// A case showed `finding` (its count updated); `first`: this run had not seen it, nor had
    /// [`FuzzOptions::known`] (its text is then the case's, and minimisation follows).
    fn finding(&mut self, _finding: &Finding, _first: bool) {}
    /// The `first` finding's text is minimised.
    fn minimised(&mut self, _finding: &Finding) {}
}

/// [`Events`] that nobody listens to.
pub struct NoEvents;

impl Events for NoEvents {}

/// Fuzzes with `options` in this process, running each case with [`case::run_text`].
pub fn fuzz(options: &FuzzOptions) -> Summary {
    fuzz_with(options, case::run_text)
}

/// Fuzzes with `options` in this process, running each case with `run`.
pub fn fuzz_with(options: &FuzzOptions, run: CaseFn) -> Summary {
    fuzz_events(options, run, &mut NoEvents)
}

/// Fuzzes with `options` in this process, running each case with `run` and telling `events`.
pub fn fuzz_events(options: &FuzzOptions, run: CaseFn, events: &mut dyn Events) -> Summary {
    let start = Instant::now();
    let mut engine = Engine {
        options,
        worker: Worker::spawn(run),
        summary: Summary::default(),
        findings: Findings::new(options.out.clone()),
        known: options.known.iter().cloned().collect(),
        events,
        stuck: false,
    };
    let mut stream = Stream::new(options);
    stream.skip_to(options.start);
    while start.elapsed() < options.budget
        && options.max_executions.is_none_or(|m| stream.index < m)
        && !engine.stopping()
    {
        let (index, case_seed, text) = stream.next_case();
        engine.run_case(index, case_seed, text);
    }
    let stopped_at_hang = engine.stopping();
    let mut summary = engine.summary;
    summary.findings = engine.findings.list;
    summary.stopped_at_hang = stopped_at_hang;
    summary.elapsed = start.elapsed();
    summary
}

/// A finding's identity: its kind and [`signature`].
pub(crate) type Key = (FindingKind, String);

/// The fuzz loop's state: the worker, the figures, the findings.
struct Engine<'a> {
    options: &'a FuzzOptions,
    worker: Worker,
    summary: Summary,
    findings: Findings,
    known: HashSet<Key>,
    events: &'a mut dyn Events,
    /// A worker was abandoned in a hang (its thread may still run).
    stuck: bool,
}

impl Engine<'_> {
    /// Runs one case and records what it showed.
    fn run_case(&mut self, index: u64, case_seed: u64, text: String) {
        self.events.case(index, case_seed, &text, &self.summary);
        self.summary.executions += 1;
        let timeout = self.options.case_timeout;
        let finding = match self.worker.run(&text, case_seed, timeout) {
            None => {
                self.abandon_worker();
                Some((FindingKind::Hang, format!("over {timeout:?}")))
            }
            Some(Err(panic)) => Some((FindingKind::Panic, panic)),
            Some(Ok(outcome)) => count(&mut self.summary, &outcome),
        };
        let Some((kind, message)) = finding else {
            return;
        };
        if !matches!(kind, FindingKind::Hang | FindingKind::Panic) {
            self.summary.compiled_and_run += 1;
        }
        self.record(kind, message, text, case_seed);
    }

    /// Counts a finding, or adds it (minimised and saved) if it is new.
    fn record(&mut self, kind: FindingKind, message: String, text: String, case_seed: u64) {
        let key = (kind, signature(&message));
        if let Some(f) = self.findings.get_mut(&key) {
            f.count += 1;
            self.events.finding(f, false);
            return;
        }
        let first = !self.known.contains(&key);
        let mut finding = Finding {
            kind,
            message,
            text,
            case_seed,
            count: 1,
            path: None,
        };
        self.events.finding(&finding, first);
        if first && kind != FindingKind::Hang && !self.stopping() {
            finding.text = self.minimise(&finding.text, case_seed, &key);
            self.events.minimised(&finding);
        }
        self.findings.add(key, finding);
    }

    /// Whether the run stops now: it stops at hangs and a worker hung.
    fn stopping(&self) -> bool {
        self.stuck && self.options.stop_after_hang
    }

    /// Leaves the stuck worker and starts another.
    fn abandon_worker(&mut self) {
        self.worker = Worker::spawn(self.worker.run_fn);
        self.stuck = true;
    }

    /// Removes lines from `text` one at a time (last first) while the case still shows the
    /// same finding (`key`), up to a few hundred attempts; stops at a hang when the run stops
    /// at hangs.
    fn minimise(&mut self, text: &str, seed: u64, key: &Key) -> String {
        let mut lines: Vec<&str> = text.lines().collect();
        let mut i = lines.len();
        let timeout = self.options.case_timeout;
        for _ in 0..300 {
            if i == 0 || self.stopping() {
                break;
            }
            i -= 1;
            let mut shorter = lines.clone();
            shorter.remove(i);
            let candidate = shorter.join("\n") + "\n";
            self.events.attempt(&candidate);
            let report = self.worker.run(&candidate, seed, timeout);
            if report.is_none() {
                self.abandon_worker();
            }
            if report.is_some_and(|r| shows(&r, key)) {
                lines = shorter;
            }
        }
        lines.join("\n") + "\n"
    }
}

/// Whether a worker's report shows the finding `key`.
fn shows(report: &Report, key: &Key) -> bool {
    let (kind, message) = match report {
        Err(panic) => (FindingKind::Panic, panic),
        Ok(Outcome::Mismatch(m)) => (FindingKind::Mismatch, m),
        Ok(Outcome::Refused(m)) => (FindingKind::Refused, m),
        Ok(_) => return false,
    };
    kind == key.0 && signature(message) == key.1
}

/// Findings deduplicated by kind and signature, each saved (when there is a folder) as it is
/// added, numbered in the order found.
pub(crate) struct Findings {
    pub(crate) list: Vec<Finding>,
    by_key: HashMap<Key, usize>,
    out: Option<PathBuf>,
}

impl Findings {
    pub(crate) fn new(out: Option<PathBuf>) -> Findings {
        Findings {
            list: Vec::new(),
            by_key: HashMap::new(),
            out,
        }
    }

    /// The finding of `key`, if there is one.
    pub(crate) fn get_mut(&mut self, key: &Key) -> Option<&mut Finding> {
        let i = *self.by_key.get(key)?;
        self.list.get_mut(i)
    }

    /// Adds `finding` (of `key`, which is new), saved as the next file.
    pub(crate) fn add(&mut self, key: Key, finding: Finding) {
        self.by_key.insert(key, self.list.len());
        self.list.push(finding);
        self.save(self.list.len() - 1);
    }

    /// Saves finding `i` (again: its text or count changed), when there is a folder.
    pub(crate) fn save(&mut self, i: usize) {
        if let Some(dir) = &self.out {
            self.list[i].path = save(dir, i, &self.list[i]).ok();
        }
    }

    /// The index of the finding of `key`, if there is one.
    pub(crate) fn index(&self, key: &Key) -> Option<usize> {
        self.by_key.get(key).copied()
    }
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

/// The case stream: for each index, a case seed and a text, a function of the seed and the
/// corpus only.
pub struct Stream {
    rng: SplitMix,
    corpus: Corpus,
    mutator: Mutator,
    /// The index of the next case.
    pub index: u64,
}

impl Stream {
    /// The stream of `options`' seed and corpus, at its start.
    pub fn new(options: &FuzzOptions) -> Stream {
        Stream {
            rng: SplitMix(options.seed),
            corpus: Corpus::new(load_corpus(&options.corpus)),
            mutator: Mutator::default(),
            index: 0,
        }
    }

    /// The next case: its index, seed and text.
    pub fn next_case(&mut self) -> (u64, u64, String) {
        let case_seed = self.rng.next_u64();
        let text = next_text(&mut self.corpus, &self.mutator, &mut self.rng);
        self.index += 1;
        (self.index - 1, case_seed, text)
    }

    /// Draws (without running) the cases before index `index`.
    pub fn skip_to(&mut self, index: u64) {
        while self.index < index {
            self.next_case();
        }
    }
}

/// Where the next case's text comes from, by percent: a fresh random graph as drawn (small,
/// sometimes large or of extreme windows), one mutated, a mutated corpus text, or a text
/// damaged by a few character edits (mostly a parse error: the cheap executions that exercise
/// the parser).
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

/// The printed text of a random graph: one in 10 of extreme windows (its gradient a `grad`
/// statement, expanded when the case parses it), one in 10 of the rest of huge lengths (axes of
/// 2²⁰ to 2⁶² or empty, in dots — dense layers — and reductions as in every op: lengths past
/// 2³² that the compilable graphs' 1 to 7 never reach), else compilable, one in 30 of those
/// large.
fn random_graph_text(r: &mut SplitMix) -> String {
    let extreme = r.chance(10);
    let config = if extreme {
        GraphConfig::extreme_windows()
    } else if r.chance(10) {
        GraphConfig::huge_lengths()
    } else if r.chance(3) {
        GraphConfig::large()
    } else {
        GraphConfig::compilable()
    };
    let choices: Vec<u32> = (0..config.choice_len())
        .map(|_| r.next_u64() as u32)
        .collect();
    if extreme {
        text_from_choices(&choices, &config)
    } else {
        weft_ir::text::print(&graph_from_choices(&choices, &config))
    }
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
/// a refusal's or an abort's first line with numbers and `quoted` names blurred.
pub fn signature(message: &str) -> String {
    let line = first_line(message);
    if let Some(place) = line.strip_prefix("panic at ") {
        return place.split(": ").next().unwrap_or(place).to_string();
    }
    if line.starts_with("abort") {
        return blur(line);
    }
    if let (Some(config), Some(element)) = (line.split(": ").next(), line.find("element ")) {
        let rest = &line[element..];
        let mut words = rest.split_whitespace();
        let got = words.nth(2).unwrap_or("");
        let want = words.nth(2).unwrap_or("");
        return format!("{config}: {} vs {}", value_class(got), value_class(want));
    }
    blur(line)
}

/// `line`'s first 160 characters with each run of digits and each `quoted` name blurred to `#`.
fn blur(line: &str) -> String {
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

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Writes `finding` as `NNN_kind.weft` in `dir`, with a header saying how to replay it.
pub(crate) fn save(dir: &Path, index: usize, finding: &Finding) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let kind = finding.kind.name();
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
    replay_with(text, seed, timeout, case::run_text)
}

/// [`replay`] with `run` for the case.
pub fn replay_with(
    text: &str,
    seed: u64,
    timeout: Duration,
    run: CaseFn,
) -> Result<Outcome, String> {
    let mut worker = Worker::spawn(run);
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
        let a = "abort: signal 6 (SIGABRT): memory allocation of 34359738368 bytes failed";
        let b = "abort: signal 6 (SIGABRT): memory allocation of 8 bytes failed";
        assert_eq!(signature(a), signature(b));
        assert_eq!(signature("abort: element 3"), "abort: element #");
    }
}
