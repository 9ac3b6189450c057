//! Mutations of `.weft` texts: line-level (delete, duplicate, swap, splice a line from another
//! text), token-level (replace a number by an interesting one, an op or dtype name by
//! another, insert or delete a character), and the parameters of a convolution or pool
//! replaced by extreme values.
//!
//! Deterministic: the result is a function of the texts and the random source. Guarantees
//! nothing about validity; most mutants fail to parse, which is what the parser must survive.

use weft_ir::graph::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use weft_oracle::SplitMix;

/// Numbers that exercise edges: lengths 0 and 1, vector widths ± 1, overflow, float specials,
/// and huge lengths, strides and paddings (2²⁸, 2³² − 1, 2³³ + 1, 2⁴⁰, 2⁶², around `i64::MAX`,
/// `u64::MAX`): a dense layer's batch or a reduced axis past 2³² among them.
const NUMBERS: [&str; 31] = [
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
    "18446744073709551615",
    "9223372036854775808",
    "9223372036854775806",
    "268435456",
    "4294967295",
    "1099511627776",
    "18446744073709551614",
    "8589934593",
    "4611686018427387904",
];

/// Values for a convolution's or pool's parameters: 0 and 1 (a zero stride or window, the
/// smallest), and huge ones past `u32`, near and past `i64::MAX`, `u64::MAX`.
const WINDOW_NUMBERS: [&str; 11] = [
    "0",
    "1",
    "2",
    "268435456",
    "4294967295",
    "4294967296",
    "1099511627776",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551614",
    "18446744073709551615",
];

/// The keys of a convolution's or pool's parameters, each followed by a number (two for
/// `pad=(`).
const WINDOW_KEYS: [&str; 5] = ["stride=", "dilation=", "window=", "groups=", "pad=("];

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
        match r.below(11) {
            10 => {
                let at = (0..lines.len())
                    .map(|k| (i + k) % lines.len())
                    .find(|k| is_window_op(&lines[*k]))
                    .unwrap_or(i);
                lines[at] = extreme_window(&lines[at], r);
            }
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

/// Whether `line` holds a convolution or a pool.
fn is_window_op(line: &str) -> bool {
    ["convolution(", "max_pool(", "avg_pool("]
        .iter()
        .any(|op| line.contains(op))
}

/// `line` with some of its window parameters (`stride=`, `dilation=`, `window=`, `groups=`,
/// `pad=(a, b)`) replaced by extreme values ([`WINDOW_NUMBERS`]), each with even odds and at
/// least one; a line without any gets one added after its first `=(` (or `groups=` at its end).
fn extreme_window(line: &str, r: &mut SplitMix) -> String {
    let params = window_params(line);
    let pick = |r: &mut SplitMix| WINDOW_NUMBERS[r.below(WINDOW_NUMBERS.len())];
    if params.is_empty() {
        return add_window_param(line, pick(r), r);
    }
    let forced = r.below(params.len());
    let mut out = line.to_string();
    // Last first, so the earlier ranges stay where they are.
    for (k, (s, e)) in params.into_iter().enumerate().rev() {
        if k == forced || r.chance(50) {
            out.replace_range(s..e, pick(r));
        }
    }
    out
}

/// `line` with one window parameter of value `value` added.
fn add_window_param(line: &str, value: &str, r: &mut SplitMix) -> String {
    let key = ["stride", "dilation", "window"][r.below(3)];
    match (line.find("=("), line.rfind(')')) {
        (Some(at), _) => format!("{}{key}={value}, {}", &line[..at + 2], &line[at + 2..]),
        (None, Some(end)) if line.contains("convolution(") => {
            format!("{}, groups={value}{}", &line[..end], &line[end..])
        }
        _ => line.to_string(),
    }
}

/// The byte ranges of the numbers of `line`'s window parameters, in order.
fn window_params(line: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for key in WINDOW_KEYS {
        for (at, _) in line.match_indices(key) {
            let mut from = at + key.len();
            for _ in 0..if key == "pad=(" { 2 } else { 1 } {
                let digits = line[from..].bytes().take_while(u8::is_ascii_digit).count();
                if digits == 0 {
                    break;
                }
                out.push((from, from + digits));
                from += digits;
                from += line[from..]
                    .bytes()
                    .take_while(|b| *b == b',' || *b == b' ')
                    .count();
            }
        }
    }
    out.sort_unstable();
    out
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
    fn window_parameters_are_found_and_replaced() {
        let line = "y = avg_pool(x, Time=(window=2, stride=13, pad=(1, 0)))";
        let numbers: Vec<&str> = window_params(line)
            .iter()
            .map(|(s, e)| &line[*s..*e])
            .collect();
        assert_eq!(numbers, ["2", "13", "1", "0"]);
        let mut changed = 0;
        for seed in 0..20 {
            let out = extreme_window(line, &mut SplitMix(seed));
            changed += usize::from(out != line);
            assert!(out.starts_with("y = avg_pool(x, Time=(window="), "{out}");
        }
        assert!(changed >= 15, "{changed} of 20 changed");
        let bare = "y = convolution(x, w)";
        let out = extreme_window(bare, &mut SplitMix(1));
        assert!(out.starts_with("y = convolution(x, w, groups="), "{out}");
    }

    #[test]
    fn tokens_are_words_and_numbers() {
        let line = "y = slice(x, N=1:-2)";
        let words: Vec<&str> = tokens(line).iter().map(|(s, e)| &line[*s..*e]).collect();
        assert_eq!(words, ["y", "slice", "x", "N", "1", "-2"]);
    }
}
