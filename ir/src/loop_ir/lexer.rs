//! Tokens of the loop-IR text form, with their source positions.
//!
//! Guarantees: every byte of the input is either part of a token, whitespace, or a `;` comment
//! (to end of line); anything else is a [`ReadError`] at its line and column. Never panics.

use super::ReadError;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Token {
    /// A keyword, operator or type name (`loop`, `add`, `acc.value`, `f32`, `inf`).
    Ident(String),
    /// A local name after `%`.
    Local(String),
    /// A kernel name after `@`.
    Global(String),
    /// An unsigned number, as written (`12`, `1.5`, `2e-3`).
    Number(String),
    /// Punctuation: `{ } [ ] ( ) , : = < <= .. * + -`.
    Punct(&'static str),
    /// End of input.
    Eof,
}

/// A token and where it starts (1-based line and column).
#[derive(Clone, Debug)]
pub(super) struct Spanned {
    pub token: Token,
    pub line: u32,
    pub col: u32,
}

const PUNCTS: [&str; 14] = [
    "<=", "..", "{", "}", "[", "]", "(", ")", ",", ":", "=", "<", "*", "+",
];

/// Splits `text` into tokens, ending with [`Token::Eof`].
pub(super) fn tokenize(source: &str, text: &str) -> Result<Vec<Spanned>, ReadError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    while i < chars.len() {
        let c = chars[i];
        let (start_line, start_col) = (line, col);
        let mut advance = |n: usize, i: &mut usize| {
            *i += n;
            col += n as u32;
        };
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            advance(1, &mut i);
            continue;
        }
        if c == ';' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let token = if c == '%' || c == '@' {
            let start = i + 1;
            let mut end = start;
            while end < chars.len() && is_name_char(chars[end]) {
                end += 1;
            }
            if end == start {
                return Err(ReadError::new(
                    source,
                    line,
                    col,
                    format!("expected a name after `{c}`"),
                ));
            }
            let name: String = chars[start..end].iter().collect();
            advance(end - i, &mut i);
            if c == '%' {
                Token::Local(name)
            } else {
                Token::Global(name)
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut end = i;
            while end < chars.len() && is_name_char(chars[end]) {
                end += 1;
            }
            let word: String = chars[i..end].iter().collect();
            advance(end - i, &mut i);
            Token::Ident(word)
        } else if c.is_ascii_digit() {
            let mut end = i;
            while end < chars.len() {
                let d = chars[end];
                let next = chars.get(end + 1).copied();
                if d.is_ascii_alphanumeric() || d == '_' {
                    end += 1;
                    if (d == 'e' || d == 'E') && matches!(next, Some('+') | Some('-')) {
                        end += 1;
                    }
                } else if d == '.' && next.is_some_and(|n| n.is_ascii_digit()) {
                    end += 1;
                } else {
                    break;
                }
            }
            let number: String = chars[i..end].iter().collect();
            advance(end - i, &mut i);
            Token::Number(number)
        } else if c == '-' {
            advance(1, &mut i);
            Token::Punct("-")
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                Some(p) => {
                    advance(p.len(), &mut i);
                    Token::Punct(p)
                }
                None => {
                    return Err(ReadError::new(
                        source,
                        line,
                        col,
                        format!("unexpected character `{c}`"),
                    ))
                }
            }
        };
        out.push(Spanned {
            token,
            line: start_line,
            col: start_col,
        });
    }
    out.push(Spanned {
        token: Token::Eof,
        line,
        col,
    });
    Ok(out)
}
