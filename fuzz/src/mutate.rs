//! Mutations of `.weft` texts: line-level (delete, duplicate, swap, splice a line from another
//! text) and token-level (replace a number by an interesting one, an op or dtype name by
//! another, insert or delete a character).
//!
//! Deterministic: the result is a function of the texts and the random source. Guarantees
//! nothing about validity; most mutants fail to parse, which is what the parser must survive.

use weft_ir::graph::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use weft_ir::testing::SplitMix;

/// Numbers that exercise edges: lengths 0 and 1, vector widths ± 1, overflow, float specials.
const NUMBERS: [&str; 22] = [
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "7",
    "8",
    "9",
    "-1",
    "-2",
    "-0.0",
    "1e300",
    "-1e-310",
    "nan",
    "inf",
    "-inf",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "4294967296",
    "0.5",
];

const DTYPES: [&str; 5] = ["f32", "f64", "i32", "i64", "bool"];
const VIEW_OPS: [&str; 12] = [
    "broadcast",
    "axes_with_order",
    "cast_axes",
    "transpose",
    "slice",
    "flatten",
    "unflatten",
    "pad",
    "concat",
    "expand_dims",
    "dot",
    "select",
];
const CHARS: [char; 16] = [
    '(', ')', '[', ']', ',', ':', '=', '*', '-', '@', '"', '%', '\n', ' ', '1', 'A',
];

/// Every op name a text may hold, for replacing one name by another.
fn op_names() -> Vec<String> {
    let mut names: Vec<String> = UnaryOp::ALL.iter().map(|o| o.name().to_string()).collect();
    names.extend(BinaryOp::ALL.iter().map(|o| o.name().to_string()));
    names.extend(CompareOp::ALL.iter().map(|o| o.name().to_string()));
    names.extend(ReduceOp::ALL.iter().map(|o| o.name().to_string()));
    names.extend(VIEW_OPS.iter().map(|s| s.to_string()));
    names.extend(DTYPES.iter().map(|s| s.to_string()));
    names
}

/// A mutator: the op names, and the texts lines are spliced from.
pub struct Mutator {
    names: Vec<String>,
}

impl Default for Mutator {
    fn default() -> Mutator {
        Mutator { names: op_names() }
    }
}

impl Mutator {
    /// `text` after `count` random mutations; `donor` gives lines to splice in.
    pub fn mutate(&self, text: &str, donor: &str, count: usize, r: &mut SplitMix) -> String {
        let mut t = text.to_string();
        for _ in 0..count {
            t = self.once(&t, donor, r);
        }
        t
    }

    /// `text` with `count` characters inserted, deleted or replaced anywhere.
    pub fn damage(&self, text: &str, count: usize, r: &mut SplitMix) -> String {
        let mut chars: Vec<char> = text.chars().collect();
        for _ in 0..count {
            let at = r.below(chars.len() + 1);
            let c = CHARS[r.below(CHARS.len())];
            match r.below(3) {
                0 if at < chars.len() => {
                    chars.remove(at);
                }
                1 if at < chars.len() => chars[at] = c,
                _ => chars.insert(at, c),
            }
        }
        chars.into_iter().collect()
    }

    fn once(&self, text: &str, donor: &str, r: &mut SplitMix) -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = r.below(lines.len());
        match r.below(10) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let copy = lines[i].clone();
                lines.insert(r.below(lines.len() + 1), copy);
            }
            2 => {
                let j = r.below(lines.len());
                lines.swap(i, j);
            }
            3 => {
                let donors: Vec<&str> = donor.lines().collect();
                if !donors.is_empty() {
                    let line = donors[r.below(donors.len())].to_string();
                    lines.insert(r.below(lines.len() + 1), line);
                }
            }
            4..=7 => {
                // A line holding a token of the kind (numbers, or names), if one does.
                let numbers = r.below(4) != 0;
                let at = (0..lines.len())
                    .map(|k| (i + k) % lines.len())
                    .find(|k| has_token(&lines[*k], numbers))
                    .unwrap_or(i);
                lines[at] = self.replace_token(&lines[at], r, numbers);
            }
            8 => {
                let mut chars: Vec<char> = lines[i].chars().collect();
                let at = r.below(chars.len() + 1);
                chars.insert(at, CHARS[r.below(CHARS.len())]);
                lines[i] = chars.into_iter().collect();
            }
            _ => {
                let mut chars: Vec<char> = lines[i].chars().collect();
                if !chars.is_empty() {
                    chars.remove(r.below(chars.len()));
                }
                lines[i] = chars.into_iter().collect();
            }
        }
        let mut out = lines.join("\n");
        out.push('\n');
        out
    }

    /// `line` with one number (`numbers`) or one name replaced.
    fn replace_token(&self, line: &str, r: &mut SplitMix, numbers: bool) -> String {
        let wanted = tokens_of_kind(line, numbers);
        if wanted.is_empty() {
            return line.to_string();
        }
        let (s, e) = wanted[r.below(wanted.len())];
        let new = if numbers {
            NUMBERS[r.below(NUMBERS.len())].to_string()
        } else {
            self.names[r.below(self.names.len())].clone()
        };
        format!("{}{}{}", &line[..s], new, &line[e..])
    }
}

/// The byte ranges of `line`'s numbers (`numbers`) or names.
fn tokens_of_kind(line: &str, numbers: bool) -> Vec<(usize, usize)> {
    tokens(line)
        .into_iter()
        .filter(|(s, e)| {
            let first = line[*s..*e].chars().next().unwrap_or(' ');
            numbers == (first.is_ascii_digit() || first == '-')
        })
        .collect()
}

fn has_token(line: &str, numbers: bool) -> bool {
    !tokens_of_kind(line, numbers).is_empty()
}

/// Byte ranges of the words and numbers of `line` (letters, digits, `_`, `.`, a leading `-`).
fn tokens(line: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in line.char_indices() {
        let part =
            c.is_ascii_alphanumeric() || c == '_' || c == '.' || (c == '-' && start.is_none());
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, line.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutation_is_deterministic_and_changes_the_text() {
        let m = Mutator::default();
        let text = "axis N = 4\nplaceholder x: f32[N]\ny = exp(x)\noutput y\n";
        let a = m.mutate(text, text, 3, &mut SplitMix(9));
        let b = m.mutate(text, text, 3, &mut SplitMix(9));
        assert_eq!(a, b);
        let changed = (0..20).filter(|s| m.mutate(text, text, 1, &mut SplitMix(*s)) != text);
        let changed = changed.count();
        assert!(changed >= 12, "{changed} of 20 changed");
    }

    #[test]
    fn tokens_are_words_and_numbers() {
        let line = "y = slice(x, N=1:-2)";
        let words: Vec<&str> = tokens(line).iter().map(|(s, e)| &line[*s..*e]).collect();
        assert_eq!(words, ["y", "slice", "x", "N", "1", "-2"]);
    }
}
