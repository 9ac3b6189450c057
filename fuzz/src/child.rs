//! A supervised child: the fuzz engine in a process of its own (`weft-fuzz --child`), telling
//! its supervisor ([`crate::supervise()`]) what it does as records on stdout, and the records
//! themselves.
//!
//! Assumes: stdout is a pipe the supervisor reads, and nothing else in the process writes to
//! it; stdin holds the findings earlier children found (one `KIND<TAB>SIGNATURE` line each),
//! then ends. Guarantees: a record is written and flushed before the case or minimisation
//! attempt it announces runs, so when the process dies its last [`Record::Case`] (and the
//! [`Record::Attempt`] after it, if any) names what was running; every finding occurrence is a
//! [`Record::Finding`] as it is found; a child that ends by itself writes [`Record::End`] last.
//! A record is one line `@weft-fuzz WORD FIELD…`, then each text it carries (the line gives the
//! byte lengths), each followed by a newline; other lines are not records.

use crate::case::{self, Outcome};
use crate::{fuzz_events, CaseFn, Events, Finding, FindingKind, FuzzOptions, Summary};
use std::io::{self, BufRead, Read, Write};
use std::sync::OnceLock;

/// What a child tells its supervisor.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// Case `index` of the stream is about to run; `before`: the child's figures before it
    /// ([`Summary::counters`]).
    Case {
        /// Its index in the case stream.
        index: u64,
        /// Its case seed.
        seed: u64,
        /// Its text.
        text: String,
        /// The child's figures before it.
        before: [u64; 6],
    },
    /// A minimisation attempt of the current case (with its seed) is about to run.
    Attempt {
        /// The candidate text.
        text: String,
    },
    /// A case showed a finding.
    Finding {
        /// Its kind.
        kind: FindingKind,
        /// What the child knows of it: [`Stage`].
        stage: Stage,
        /// The case seed.
        case_seed: u64,
        /// The message.
        message: String,
        /// The case's text (minimised at [`Stage::Minimised`]).
        text: String,
    },
    /// The child ended by itself: `next` is the index of the first case it did not run.
    End {
        /// The next case's index.
        next: u64,
        /// It stopped at a hang (to be resumed by a new child) rather than at its budget.
        hang: bool,
        /// Its figures.
        counters: [u64; 6],
    },
}

/// Where a finding record stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The first case showing it in this child (not known before): minimisation follows.
    First,
    /// Another case showing it.
    Again,
    /// Its minimised text, after a `First`.
    Minimised,
}

const STAGES: [(Stage, &str); 3] = [
    (Stage::First, "first"),
    (Stage::Again, "again"),
    (Stage::Minimised, "minimised"),
];

const PREFIX: &str = "@weft-fuzz ";

impl Record {
    /// Writes the record to `w` (not flushed).
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let (line, texts): (String, Vec<&str>) = match self {
            Record::Case {
                index,
                seed,
                text,
                before,
            } => {
                let c = before.map(|n| n.to_string()).join(" ");
                (
                    format!("case {index} {seed} {c} {}", text.len()),
                    vec![text],
                )
            }
            Record::Attempt { text } => (format!("attempt {}", text.len()), vec![text]),
            Record::Finding {
                kind,
                stage,
                case_seed,
                message,
                text,
            } => {
                let stage = STAGES.iter().find(|s| s.0 == *stage).map_or("", |s| s.1);
                let (m, t) = (message.len(), text.len());
                let line = format!("finding {} {stage} {case_seed} {m} {t}", kind.name());
                (line, vec![message, text])
            }
            Record::End {
                next,
                hang,
                counters,
            } => {
                let c = counters.map(|n| n.to_string()).join(" ");
                (format!("end {next} {hang} {c}"), vec![])
            }
        };
        writeln!(w, "{PREFIX}{line}")?;
        for t in texts {
            w.write_all(t.as_bytes())?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The next record of `r`, skipping other lines; `None` at the end (or at a record cut
    /// short by the child's death).
    pub fn read(r: &mut impl BufRead) -> Option<Record> {
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some(fields) = line.trim_end().strip_prefix(PREFIX) {
                let words: Vec<&str> = fields.split(' ').collect();
                return Record::parse(&words, r);
            }
        }
    }

    fn parse(words: &[&str], r: &mut impl BufRead) -> Option<Record> {
        let n = |i: usize| -> Option<u64> { words.get(i)?.parse().ok() };
        let counters = |from: usize| -> Option<[u64; 6]> {
            let mut c = [0; 6];
            for (k, x) in c.iter_mut().enumerate() {
                *x = n(from + k)?;
            }
            Some(c)
        };
        Some(match *words.first()? {
            "case" => Record::Case {
                index: n(1)?,
                seed: n(2)?,
                before: counters(3)?,
                text: read_text(r, n(9)?)?,
            },
            "attempt" => Record::Attempt {
                text: read_text(r, n(1)?)?,
            },
            "finding" => Record::Finding {
                kind: FindingKind::from_name(words.get(1)?)?,
                stage: stage_named(words.get(2)?)?,
                case_seed: n(3)?,
                message: read_text(r, n(4)?)?,
                text: read_text(r, n(5)?)?,
            },
            "end" => Record::End {
                next: n(1)?,
                hang: words.get(2)? == &"true",
                counters: counters(3)?,
            },
            _ => return None,
        })
    }
}

/// The stage written as `name`.
fn stage_named(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.1 == name).map(|s| s.0)
}

/// `len` bytes of `r` as text, and the newline after them.
fn read_text(r: &mut impl BufRead, len: u64) -> Option<String> {
    let mut bytes = Vec::new();
    r.take(len + 1).read_to_end(&mut bytes).ok()?;
    if bytes.pop() != Some(b'\n') || bytes.len() as u64 != len {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The child's [`Events`]: each one a record on stdout, flushed.
struct ToSupervisor {
    out: io::BufWriter<io::Stdout>,
}

impl ToSupervisor {
    fn send(&mut self, record: Record) {
        // A supervisor that stopped reading has gone; the case still runs to its end.
        let _ = record.write(&mut self.out).and_then(|()| self.out.flush());
    }
}

impl Events for ToSupervisor {
    fn case(&mut self, index: u64, seed: u64, text: &str, before: &Summary) {
        let (text, before) = (text.to_string(), before.counters());
        self.send(Record::Case {
            index,
            seed,
            text,
            before,
        });
    }

    fn attempt(&mut self, text: &str) {
        let text = text.to_string();
        self.send(Record::Attempt { text });
    }

    fn finding(&mut self, f: &Finding, first: bool) {
        let stage = if first { Stage::First } else { Stage::Again };
        self.send(finding_record(f, stage));
    }

    fn minimised(&mut self, f: &Finding) {
        self.send(finding_record(f, Stage::Minimised));
    }
}

fn finding_record(f: &Finding, stage: Stage) -> Record {
    Record::Finding {
        kind: f.kind,
        stage,
        case_seed: f.case_seed,
        message: f.message.clone(),
        text: f.text.clone(),
    }
}

/// Runs the engine as a supervised child: `options` from the supervisor's arguments, the known
/// findings from stdin, every event and then the end as records on stdout.
pub fn run_child(mut options: FuzzOptions, plant_abort: Option<String>) {
    options.known = read_known(io::stdin().lock());
    options.stop_after_hang = true;
    let mut events = ToSupervisor {
        out: io::BufWriter::new(io::stdout()),
    };
    let summary = fuzz_events(&options, case_fn(plant_abort), &mut events);
    events.send(Record::End {
        next: options.start + summary.executions,
        hang: summary.stopped_at_hang,
        counters: summary.counters(),
    });
}

/// The known findings, one `KIND<TAB>SIGNATURE` line each.
pub fn read_known(r: impl BufRead) -> Vec<(FindingKind, String)> {
    r.lines()
        .map_while(Result::ok)
        .filter_map(|l| {
            let (kind, signature) = l.split_once('\t')?;
            Some((FindingKind::from_name(kind)?, signature.to_string()))
        })
        .collect()
}

/// The text abort cases are planted in, when set ([`case_fn`]).
static PLANTED: OnceLock<String> = OnceLock::new();

/// How a child or a replay runs a case: [`case::run_text`], or — a hook for the fuzzer's own
/// tests (`--plant-abort TEXT`) — that after aborting the process on every text containing
/// `plant_abort`.
pub fn case_fn(plant_abort: Option<String>) -> CaseFn {
    match plant_abort {
        Some(marker) => {
            let _ = PLANTED.set(marker);
            run_planted
        }
        None => case::run_text,
    }
}

fn run_planted(text: &str, seed: u64) -> Outcome {
    if PLANTED.get().is_some_and(|m| text.contains(m.as_str())) {
        eprintln!("weft-fuzz: planted abort");
        std::process::abort();
    }
    case::run_text(text, seed)
}

/// Limits this process's address space to `mib` MiB (`RLIMIT_AS`), so that an allocation past
/// it fails (Rust then aborts the process: a finding for the supervisor) instead of the system
/// running out of memory; 0 leaves it unlimited.
pub fn limit_address_space(mib: u64) -> io::Result<()> {
    if mib == 0 {
        return Ok(());
    }
    let bytes = mib.saturating_mul(1 << 20) as libc::rlim_t;
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: `setrlimit` reads the `rlimit` we pass by pointer, which lives across the call;
    // it changes no memory of this process.
    #[allow(unsafe_code)]
    let status = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        let records = [
            Record::Case {
                index: 7,
                seed: u64::MAX,
                text: "axis N = 3\n@weft-fuzz end 1\n".into(),
                before: [1, 2, 3, 4, 5, 6],
            },
            Record::Attempt { text: "".into() },
            Record::Finding {
                kind: FindingKind::Mismatch,
                stage: Stage::Minimised,
                case_seed: 3,
                message: "a\nb".into(),
                text: "é\n".into(),
            },
            Record::End {
                next: 9,
                hang: true,
                counters: [9, 8, 7, 6, 5, 4],
            },
        ];
        let mut bytes = b"noise\n".to_vec();
        for r in &records {
            r.write(&mut bytes).unwrap();
        }
        let mut reader = io::Cursor::new(bytes);
        for r in &records {
            assert_eq!(Record::read(&mut reader).as_ref(), Some(r));
        }
        assert_eq!(Record::read(&mut reader), None);
    }

    #[test]
    fn a_record_cut_short_reads_as_the_end() {
        let mut bytes = Vec::new();
        let text = "axis N = 3\n".to_string();
        Record::Attempt { text }.write(&mut bytes).unwrap();
        bytes.truncate(bytes.len() - 3);
        assert_eq!(Record::read(&mut io::Cursor::new(bytes)), None);
    }

    #[test]
    fn known_findings_read_by_kind_and_signature() {
        let text = "hang\tover #s\nnot a line\nabort\tabort: signal # (SIGABRT)\n";
        let known = read_known(io::Cursor::new(text));
        assert_eq!(
            known,
            [
                (FindingKind::Hang, "over #s".to_string()),
                (FindingKind::Abort, "abort: signal # (SIGABRT)".to_string())
            ]
        );
    }
}
