//! The `.weft` lexer: turns source text into tokens with 1-based line and column positions.
//! Newlines are tokens (statements end at them); `#` comments and other whitespace are dropped.
//! Numbers are unsigned and kept as text so the parser can read them exactly for the dtype at
//! hand; a minus sign is its own token.

use super::{ParseError, SourcePos};

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    Ident(String),
    /// A double-quoted string, escapes resolved.
    Str(String),
    /// `%N`: the label of an unnamed node.
    Label(u32),
    /// Digits, optionally with a fraction and an exponent, as written.
    Num(String),
    /// One of `( ) [ ] , : = * ^ - @`.
    Punct(char),
    /// The end of a line.
    Newline,
    /// The end of the source.
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Str(s) => super::quote(s),
            Tok::Label(n) => format!("`%{n}`"),
            Tok::Num(s) => format!("number `{s}`"),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Newline => "end of line".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) line: usize,
    pub(crate) col: usize,
}

/// Splits `source` into tokens, ending with [`Tok::Eof`].
pub(crate) fn tokenize(source: &str, file: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = source.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    let err = |line: usize, col: usize, expected: &str, found: String| ParseError::Expected {
        pos: SourcePos {
            file: file.to_string(),
            line,
            col,
        },
        expected: expected.to_string(),
        found,
        help: None,
    };
    while i < chars.len() {
        let c = chars[i];
        let (start_line, start_col) = (line, col);
        let push = |toks: &mut Vec<Token>, tok: Tok| {
            toks.push(Token {
                tok,
                line: start_line,
                col: start_col,
            })
        };
        if c == '\n' {
            push(&mut toks, Tok::Newline);
            i += 1;
            line += 1;
            col = 1;
        } else if c.is_whitespace() {
            i += 1;
            col += 1;
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
                col += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            col += i - start;
            push(&mut toks, Tok::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            let start = i;
            let digits = |i: &mut usize| {
                let s = *i;
                while *i < chars.len() && chars[*i].is_ascii_digit() {
                    *i += 1;
                }
                *i > s
            };
            digits(&mut i);
            if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
                i += 1;
                digits(&mut i);
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if digits(&mut j) {
                    i = j;
                } else {
                    return Err(err(
                        line,
                        col + (j - start),
                        "exponent digits",
                        found_char(chars.get(j)),
                    ));
                }
            }
            if i < chars.len() && (chars[i].is_ascii_alphabetic() || chars[i] == '_') {
                return Err(err(
                    line,
                    col + (i - start),
                    "a separator after the number",
                    found_char(chars.get(i)),
                ));
            }
            col += i - start;
            push(&mut toks, Tok::Num(chars[start..i].iter().collect()));
        } else if c == '%' {
            let start = i + 1;
            let mut j = start;
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
            let digits: String = chars[start..j].iter().collect();
            let n = digits.parse::<u32>().map_err(|_| {
                err(
                    line,
                    col + 1,
                    "a node number after `%`",
                    if digits.is_empty() {
                        found_char(chars.get(j))
                    } else {
                        format!("`{digits}`")
                    },
                )
            })?;
            col += j - i;
            i = j;
            push(&mut toks, Tok::Label(n));
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            col += 1;
            loop {
                match chars.get(i) {
                    None | Some('\n') => {
                        return Err(err(line, col, "a closing `\"`", found_char(chars.get(i))))
                    }
                    Some('"') => {
                        i += 1;
                        col += 1;
                        break;
                    }
                    Some('\\') => {
                        let (esc_line, esc_col) = (line, col);
                        let bad = |found: String| {
                            err(
                                esc_line,
                                esc_col,
                                "an escape (\\\\, \\\", \\n, \\t, \\r or \\u{HEX})",
                                found,
                            )
                        };
                        match chars.get(i + 1) {
                            Some('\\') => s.push('\\'),
                            Some('"') => s.push('"'),
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some('r') => s.push('\r'),
                            Some('u') if chars.get(i + 2) == Some(&'{') => {
                                let mut j = i + 3;
                                while j < chars.len() && chars[j].is_ascii_hexdigit() {
                                    j += 1;
                                }
                                let hex: String = chars[i + 3..j].iter().collect();
                                let ch = u32::from_str_radix(&hex, 16)
                                    .ok()
                                    .and_then(char::from_u32)
                                    .filter(|_| chars.get(j) == Some(&'}'))
                                    .ok_or_else(|| bad(format!("`\\u{{{hex}`")))?;
                                s.push(ch);
                                col += j + 1 - i;
                                i = j + 1;
                                continue;
                            }
                            other => return Err(bad(format!("`\\{}`", other.unwrap_or(&' ')))),
                        }
                        i += 2;
                        col += 2;
                    }
                    Some(ch) => {
                        s.push(*ch);
                        i += 1;
                        col += 1;
                    }
                }
            }
            push(&mut toks, Tok::Str(s));
        } else if "()[],:=*^-@".contains(c) {
            push(&mut toks, Tok::Punct(c));
            i += 1;
            col += 1;
        } else {
            return Err(err(
                line,
                col,
                "a name, number or punctuation",
                found_char(Some(&c)),
            ));
        }
    }
    toks.push(Token {
        tok: Tok::Eof,
        line,
        col,
    });
    Ok(toks)
}

fn found_char(c: Option<&char>) -> String {
    match c {
        None => "end of file".into(),
        Some('\n') => "end of line".into(),
        Some(c) => format!("`{c}`"),
    }
}
