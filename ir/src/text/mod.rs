//! The `.weft` text format: a line-oriented listing of a [`Graph`] — axis declarations, stored
//! tensors, one op per line, outputs. The grammar is in `docs/text-format.md`.
//!
//! Guarantees: [`print()`] writes every axis-table entry, then every node, in arena order, so
//! `parse(&print(g), f)` rebuilds a graph equal to `g` (same axis table, nodes and outputs) for
//! every graph the builder API can make, whatever its names (unnamed nodes print as `%N`,
//! awkward names are quoted, duplicate axis names carry an `@N` tag). [`parse`] reports the
//! first error as `file:line:col: expected X, found Y`, or the builder's [`GraphError`] at the
//! line and column of the statement that failed.
//!
//! Assumes: lengths are bound as they are declared, so a graph whose lengths were bound after
//! building and contradict its ops (which [`Graph::verify`] rejects) prints but does not parse.

mod lexer;
mod parse;
mod print;

pub use parse::parse;
pub use print::print;

use crate::graph::{Graph, GraphError};
use std::fmt;

/// A position in a source file: file name, 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePos {
    /// The file name as given to [`parse`].
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, counted in characters.
    pub col: usize,
}

impl fmt::Display for SourcePos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// Why a `.weft` source did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The source does not follow the grammar, or names something undeclared or taken.
    #[error("{pos}: expected {expected}, found {found}{}", .help.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Expected {
        /// Where.
        pos: SourcePos,
        /// What the grammar allows there.
        expected: String,
        /// What the source has there.
        found: String,
        /// A hint, e.g. "did you mean `exp`?" for a near miss of a known name.
        help: Option<String>,
    },
    /// The statement is well formed but the graph rejects it (axes, dtypes, lengths, data).
    #[error("{pos}: {source}")]
    Graph {
        /// The statement's op or keyword.
        pos: SourcePos,
        /// The builder's error (boxed: it is large and errors are rare).
        source: Box<GraphError>,
    },
}

impl ParseError {
    /// Where the error is.
    pub fn pos(&self) -> &SourcePos {
        match self {
            ParseError::Expected { pos, .. } | ParseError::Graph { pos, .. } => pos,
        }
    }

    /// The error in the style of rustc, over the `source` it came from: the message, the
    /// position, the source line and a caret under the token at fault with the hint, if any.
    ///
    /// ```text
    /// expected an op name (e.g. add, dot, sum, slice; see docs/text-format.md), found `expp`
    ///  --> model.weft:3:5
    ///   |
    /// 3 | y = expp(x)
    ///   |     ^^^^ did you mean `exp`?
    /// ```
    pub fn render(&self, source: &str) -> String {
        let (message, help) = match self {
            ParseError::Expected {
                expected,
                found,
                help,
                ..
            } => (format!("expected {expected}, found {found}"), help.clone()),
            ParseError::Graph { source, .. } => (source.to_string(), None),
        };
        let pos = self.pos();
        let Some(line) = source.lines().nth(pos.line.saturating_sub(1)) else {
            return format!("{message}\n --> {pos}");
        };
        let gutter = " ".repeat(pos.line.to_string().len());
        let rest: Vec<char> = line.chars().skip(pos.col.saturating_sub(1)).collect();
        let word = rest
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .count()
            .max(1);
        let pad: String = line
            .chars()
            .take(pos.col.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let mut out = format!(
            "{message}\n{gutter}--> {pos}\n{gutter} |\n{} | {line}\n{gutter} | {pad}{}",
            pos.line,
            "^".repeat(word)
        );
        if let Some(h) = help {
            out += &format!(" {h}");
        }
        out
    }
}

/// "did you mean `x`?" for the candidate nearest `word`, if one is near enough to be a slip:
/// an edit distance of at most a third of the word's length (at least 1) and less than its
/// length (so a one-letter name is never "corrected" into another).
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit && *d < word.chars().count())
        .min()
        .map(|(_, c)| format!("did you mean `{c}`?"))
}

impl fmt::Display for Graph {
    /// The graph in the `.weft` text format (see [`print()`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self))
    }
}

/// Words that begin a statement; names spelled like them are quoted.
const KEYWORDS: [&str; 6] = [
    "axis",
    "output",
    "constant",
    "placeholder",
    "variable",
    "persistent_tensor",
];

/// True if `s` can be written bare: an identifier that is not a keyword.
fn is_plain_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && !KEYWORDS.contains(&s)
}

/// `s` as a double-quoted string with `\\`, `\"`, `\n`, `\t`, `\r` and `\u{..}` escapes.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A name bare if it can be, else quoted.
fn name_token(s: &str) -> String {
    if is_plain_name(s) {
        s.to_string()
    } else {
        quote(s)
    }
}
