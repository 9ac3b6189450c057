//! The supervisor: runs the fuzz engine in child processes (this binary again, with `--child`)
//! so that a case that kills its process — an abort, a stack overflow, an allocation past the
//! child's address-space limit, the system's out-of-memory killer — is a finding, not a lost
//! run.
//!
//! Assumes the child binary speaks [`crate::child`]'s records and takes the arguments
//! [`child_args`] writes. Guarantees:
//! - every case runs in a child; the first child starts at [`FuzzOptions::start`], and a child
//!   that dies while running case `i` makes that case an [`FindingKind::Abort`] finding (its
//!   status and the child's last stderr lines as the message, its text — or the minimisation
//!   attempt's, if one was running — as the case) and a new child resumes the stream at
//!   `i + 1`, drawing the cases before it without running them: the stream is the one an
//!   in-process run draws, whatever aborted;
//! - a child that stops at a hang (the stuck thread dies with it) is resumed after the hung
//!   case, and a child that sends no record for `4 × case timeout + 30 s` is killed and its
//!   case is a hang;
//! - findings are deduplicated across children (each child is told those found before, so it
//!   counts them without minimising them again), numbered and saved here, as they arrive; the
//!   figures are the sum of the children's (a dead child's as of its last case, plus that
//!   case); the budget and the execution limit hold for the whole run;
//! - an abort is minimised by deleting lines, each attempt replayed in a child of its own
//!   (`--replay`), while the same abort shows, within [`SuperviseOptions::abort_minimise`].

use crate::child::{Record, Stage};
use crate::{first_line, signature, Finding, FindingKind, Findings, FuzzOptions, Key, Summary};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How children are run.
#[derive(Clone, Debug)]
pub struct SuperviseOptions {
    /// The `weft-fuzz` binary the children run.
    pub exe: PathBuf,
    /// Each child's address-space limit in MiB (`RLIMIT_AS`; 0: none).
    pub memory_limit_mib: u64,
    /// A hook for the fuzzer's own tests, passed to every child: abort the process in each case
    /// whose text contains this.
    pub plant_abort: Option<String>,
    /// How long minimising one abort may take (zero: abort findings are saved unminimised).
    pub abort_minimise: Duration,
}

/// How many of a dead child's last stderr lines an abort's message keeps.
const STDERR_LINES: usize = 12;

/// Fuzzes with `options`, every case in a child process run as `sup` says.
pub fn supervise(options: &FuzzOptions, sup: &SuperviseOptions) -> Summary {
    let start = Instant::now();
    let mut s = Supervisor {
        options,
        sup,
        findings: Findings::new(options.out.clone()),
        summary: Summary::default(),
        next: options.start,
    };
    while let Some(seconds) = s.remaining(start) {
        if !s.run_child(seconds) {
            break;
        }
    }
    let mut summary = s.summary;
    summary.findings = s.findings.list;
    summary.elapsed = start.elapsed();
    summary
}

/// The supervisor's state between children.
struct Supervisor<'a> {
    options: &'a FuzzOptions,
    sup: &'a SuperviseOptions,
    findings: Findings,
    /// The figures so far (findings apart).
    summary: Summary,
    /// The index of the next case to run.
    next: u64,
}

/// What one child said and how it ended.
#[derive(Default)]
struct ChildRun {
    /// The last case it announced: index, seed, text, figures before it.
    case: Option<(u64, u64, String, [u64; 6])>,
    /// The minimisation attempt running after that case, if any.
    attempt: Option<String>,
    /// Its end record: next index, stopped at a hang, figures.
    end: Option<(u64, bool, [u64; 6])>,
    /// It sent nothing for too long and was killed.
    stalled: bool,
}

impl Supervisor<'_> {
    /// The seconds left for the next child, if the run goes on.
    fn remaining(&self, start: Instant) -> Option<f64> {
        let left = self.options.budget.checked_sub(start.elapsed())?;
        let more = self.options.max_executions.is_none_or(|m| self.next < m);
        (more && !left.is_zero()).then_some(left.as_secs_f64())
    }

    /// Runs one child from `self.next` for `seconds`; whether the run goes on.
    fn run_child(&mut self, seconds: f64) -> bool {
        let mut child = match self.spawn(seconds) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("weft-fuzz: cannot start a child: {e}");
                // The caller fails the run on it: the stream stopped short.
                self.summary.child_not_started = Some(e.to_string());
                return false;
            }
        };
        let stderr = tail_lines(child.stderr.take());
        let records = read_records(child.stdout.take());
        let run = self.follow(&mut child, &records);
        let status = child.wait();
        let stderr = stderr.join().unwrap_or_default();
        match (status, run) {
            (Ok(status), run) if run.end.is_some() && status.success() => self.ended(&run),
            (Ok(status), run) => self.died(&run, &describe(status), &stderr),
            (Err(e), run) => self.died(&run, &format!("lost ({e})"), &stderr),
        }
    }

    /// Starts a child at `self.next` with `seconds` of budget, told the findings so far.
    fn spawn(&self, seconds: f64) -> std::io::Result<Child> {
        let mut child = Command::new(&self.sup.exe)
            .args(child_args(self.options, self.sup, self.next, seconds))
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            for f in &self.findings.list {
                writeln!(stdin, "{}\t{}", f.kind.name(), signature(&f.message))?;
            }
        }
        Ok(child)
    }

    /// Reads `child`'s records until it ends (or stalls: then kills it), merging its findings.
    fn follow(&mut self, child: &mut Child, records: &Receiver<Record>) -> ChildRun {
        let mut run = ChildRun::default();
        let patience = self.options.case_timeout * 4 + Duration::from_secs(30);
        loop {
            // Before its first case a child draws the stream up to its start: no limit there.
            let wait = if run.case.is_some() {
                patience
            } else {
                Duration::from_secs(24 * 3600)
            };
            let record = match records.recv_timeout(wait) {
                Ok(r) => r,
                Err(RecvTimeoutError::Disconnected) => return run,
                Err(RecvTimeoutError::Timeout) => {
                    // Our own child, by its handle: it made no progress.
                    let _ = child.kill();
                    run.stalled = true;
                    return run;
                }
            };
            self.take(record, &mut run);
        }
    }

    /// Takes one record into `run` (and the findings).
    fn take(&mut self, record: Record, run: &mut ChildRun) {
        match record {
            Record::Case {
                index,
                seed,
                text,
                before,
            } => {
                run.case = Some((index, seed, text, before));
                run.attempt = None;
            }
            Record::Attempt { text } => run.attempt = Some(text),
            Record::Finding {
                kind,
                stage,
                case_seed,
                message,
                text,
            } => {
                run.attempt = None;
                self.merge(kind, stage, case_seed, message, text);
            }
            Record::End {
                next,
                hang,
                counters,
            } => run.end = Some((next, hang, counters)),
        }
    }

    /// Counts a child's finding, adds it if it is new here, or takes its minimised text.
    fn merge(
        &mut self,
        kind: FindingKind,
        stage: Stage,
        case_seed: u64,
        message: String,
        text: String,
    ) {
        let key = (kind, signature(&message));
        match (self.findings.index(&key), stage) {
            (Some(i), Stage::Minimised) => {
                self.findings.list[i].text = text;
                self.findings.save(i);
            }
            (Some(i), _) => self.findings.list[i].count += 1,
            (None, _) => {
                let finding = Finding {
                    kind,
                    message,
                    text,
                    case_seed,
                    count: 1,
                    path: None,
                };
                self.findings.add(key, finding);
            }
        }
    }

    /// A child that ended by itself: its figures count; the run goes on after a hang.
    fn ended(&mut self, run: &ChildRun) -> bool {
        let Some((next, hang, counters)) = run.end else {
            return false;
        };
        self.summary.add_counters(counters);
        self.next = next;
        hang
    }

    /// A child that died (or stalled) running its last case: that case is a finding, and the
    /// run goes on after it. Dead before any case, the stream itself killed it: the run stops.
    fn died(&mut self, run: &ChildRun, status: &str, stderr: &[String]) -> bool {
        let Some((index, seed, case_text, before)) = run.case.clone() else {
            let message = format!(
                "abort: the child {status} before its first case (drawing the stream to case {})\n{}",
                self.next,
                stderr.join("\n")
            );
            self.add_abort(FindingKind::Abort, message, String::new(), 0, false);
            return false;
        };
        self.summary.add_counters(before);
        self.summary.executions += 1;
        self.next = index + 1;
        let (text, what) = match &run.attempt {
            Some(t) => (t.clone(), "a minimisation attempt of case"),
            None => (case_text, "case"),
        };
        let (kind, message) = if run.stalled {
            let message = format!(
                "over {:?}: the child sent nothing more and was killed, running {what} {index} \
                 (case seed {seed})",
                self.options.case_timeout * 4 + Duration::from_secs(30)
            );
            (FindingKind::Hang, message)
        } else {
            let message = abort_message(status, stderr);
            let (first, rest) = message.split_once('\n').unwrap_or((&message, ""));
            let at = format!("running {what} {index} of the stream (case seed {seed})");
            (FindingKind::Abort, format!("{first}\n{at}\n{rest}"))
        };
        eprintln!(
            "weft-fuzz: {} ({what} {index}); resuming at case {}",
            first_line(&message),
            index + 1
        );
        self.add_abort(kind, message, text, seed, !run.stalled);
        true
    }

    /// Counts an abort (or a stalled child's hang), or adds it — minimised when `minimise` and
    /// it is new.
    fn add_abort(
        &mut self,
        kind: FindingKind,
        message: String,
        text: String,
        seed: u64,
        minimise: bool,
    ) {
        let key = (kind, signature(&message));
        if let Some(i) = self.findings.index(&key) {
            self.findings.list[i].count += 1;
            return;
        }
        let text = if minimise {
            self.minimise_abort(&text, seed, &key)
        } else {
            text
        };
        let finding = Finding {
            kind,
            message,
            text,
            case_seed: seed,
            count: 1,
            path: None,
        };
        self.findings.add(key, finding);
    }

    /// Deletes lines of `text` (last first) while a replay in a child of its own still dies
    /// the same way (`key`), within [`SuperviseOptions::abort_minimise`].
    fn minimise_abort(&self, text: &str, seed: u64, key: &Key) -> String {
        let deadline = Instant::now() + self.sup.abort_minimise;
        let file = scratch_file(self.options.out.as_deref());
        let mut lines: Vec<&str> = text.lines().collect();
        let mut i = lines.len();
        while i > 0 && Instant::now() < deadline {
            i -= 1;
            let mut shorter = lines.clone();
            shorter.remove(i);
            let candidate = shorter.join("\n") + "\n";
            if self.replay_aborts(&candidate, seed, &file, key) {
                lines = shorter;
            }
        }
        let _ = std::fs::remove_file(&file);
        lines.join("\n") + "\n"
    }

    /// Whether replaying `text` with `seed` in a child dies the way `key` says.
    fn replay_aborts(&self, text: &str, seed: u64, file: &Path, key: &Key) -> bool {
        if std::fs::write(file, text).is_err() {
            return false;
        }
        let mut args = vec![
            "--replay".into(),
            file.display().to_string(),
            "--case-seed".into(),
            seed.to_string(),
        ];
        args.extend(common_args(self.options, self.sup));
        let out = Command::new(&self.sup.exe)
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        let Ok(out) = out else { return false };
        if out.status.success() || out.status.code() == Some(1) {
            return false;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<String> = stderr.lines().map(str::to_string).collect();
        let message = abort_message(&describe(out.status), &lines);
        signature(&message) == key.1
    }
}

/// A child's arguments: `--child`, where to start, how long, and what every case needs.
pub fn child_args(
    options: &FuzzOptions,
    sup: &SuperviseOptions,
    start: u64,
    seconds: f64,
) -> Vec<String> {
    let mut args = vec![
        "--child".to_string(),
        "--seed".into(),
        options.seed.to_string(),
        "--start".into(),
        start.to_string(),
        "--seconds".into(),
        format!("{seconds:.3}"),
    ];
    if let Some(m) = options.max_executions {
        args.extend(["--max-executions".into(), m.to_string()]);
    }
    for dir in &options.corpus {
        args.extend(["--corpus".into(), dir.display().to_string()]);
    }
    args.extend(common_args(options, sup));
    args
}

/// The arguments a child and an abort's replay share: the case timeout, the memory limit, the
/// planted abort.
fn common_args(options: &FuzzOptions, sup: &SuperviseOptions) -> Vec<String> {
    let mut args = vec![
        "--case-timeout".to_string(),
        options.case_timeout.as_secs_f64().to_string(),
        "--child-memory-limit".into(),
        sup.memory_limit_mib.to_string(),
    ];
    if let Some(marker) = &sup.plant_abort {
        args.extend(["--plant-abort".into(), marker.clone()]);
    }
    args
}

/// An abort's message: `abort: STATUS: CAUSE` ([`cause`]), then the last stderr lines.
fn abort_message(status: &str, stderr: &[String]) -> String {
    let from = stderr.len().saturating_sub(STDERR_LINES);
    format!(
        "abort: {status}: {}\n{}",
        cause(stderr),
        stderr[from..].join("\n")
    )
}

/// What a dead process's stderr says killed it: its last panic (`thread 'T' panicked at
/// PLACE:` and the message line after it), else its last line that is not a note, a backtrace
/// or empty (`memory allocation of N bytes failed`, `fatal runtime error: stack overflow`).
fn cause(stderr: &[String]) -> String {
    if let Some(i) = stderr.iter().rposition(|l| l.contains(" panicked at ")) {
        let message = stderr.get(i + 1).map_or("", |m| m.trim());
        return format!("{} {message}", stderr[i].trim());
    }
    let plain = |l: &&String| {
        let t = l.trim_start();
        !t.is_empty()
            && t.len() == l.len()
            && !t.starts_with("note:")
            && !t.starts_with("stack backtrace")
    };
    let last = stderr.iter().rev().find(plain);
    last.map_or("(nothing on stderr)".to_string(), |l| l.trim().to_string())
}

/// How a process ended: `killed by signal 6 (SIGABRT)`, or `exited with status 101`.
fn describe(status: ExitStatus) -> String {
    const NAMES: [(i32, &str); 9] = [
        (4, "SIGILL"),
        (5, "SIGTRAP"),
        (6, "SIGABRT"),
        (7, "SIGBUS"),
        (8, "SIGFPE"),
        (9, "SIGKILL"),
        (11, "SIGSEGV"),
        (13, "SIGPIPE"),
        (15, "SIGTERM"),
    ];
    match (status.signal(), status.code()) {
        (Some(s), _) => {
            let name = NAMES.iter().find(|n| n.0 == s).map_or("", |n| n.1);
            format!("killed by signal {s} ({name})")
        }
        (None, Some(c)) => format!("exited with status {c} without ending its run"),
        (None, None) => "ended without a status".into(),
    }
}

/// A thread keeping the last lines of `stderr`, handed over when it ends.
fn tail_lines(stderr: Option<std::process::ChildStderr>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut lines: Vec<String> = Vec::new();
        let Some(stderr) = stderr else { return lines };
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.len() == 4 * STDERR_LINES {
                lines.drain(..2 * STDERR_LINES);
            }
            lines.push(line);
        }
        lines
    })
}

/// A thread reading `stdout`'s records into a channel, which closes at the end.
fn read_records(stdout: Option<std::process::ChildStdout>) -> Receiver<Record> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Some(stdout) = stdout else { return };
        let mut reader = BufReader::new(stdout);
        while let Some(record) = Record::read(&mut reader) {
            if tx.send(record).is_err() {
                return;
            }
        }
    });
    rx
}

/// Where an abort's minimisation writes its candidates.
fn scratch_file(out: Option<&Path>) -> PathBuf {
    let dir = out.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!(
        ".weft-fuzz-abort-candidate-{}.weft",
        std::process::id()
    ))
}
