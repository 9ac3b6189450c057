//! Property test: every random graph prints to text that parses back to the same graph.
//!
//! Graphs holding NaN are not equal to themselves (`NaN != NaN`), so besides `==` (checked when
//! the graph equals itself) the test compares the `Debug` forms of the axis tables, nodes and
//! outputs, which tell every float apart by value and sign (NaN payloads aside), and the texts.

use proptest::prelude::*;
use weft_ir::text::{parse, print};
use weft_ir::Graph;
use weft_oracle::{arb_graph, proptest_cases, run_property};

/// The graph's content with floats spelled out, so NaN compares equal to NaN.
fn content(g: &Graph) -> String {
    let axes: Vec<_> = g.axis_table().collect();
    let nodes: Vec<_> = g.nodes().collect();
    format!("{axes:?}\n{nodes:?}\n{:?}", g.outputs())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512)))]

    #[test]
    fn print_then_parse_is_identity(g in arb_graph()) {
        let text = print(&g);
        let back = match parse(&text, "roundtrip.weft") {
            Ok(b) => b,
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n--- text ---\n{text}"))),
        };
        let back_text = print(&back);
        prop_assert_eq!(&back_text, &text);
        prop_assert_eq!(content(&back), content(&g));
        if g == g {
            prop_assert!(back == g, "graphs differ:\n{:?}\n---\n{:?}", back, g);
        }
    }
}

/// A damaged text: `g` printed with one character deleted (`edit` 0), replaced (1) or
/// inserted (2) at `at`.
fn damaged(g: &Graph, at: prop::sample::Index, edit: u8, c: char) -> String {
    let mut chars: Vec<char> = print(g).chars().collect();
    if !chars.is_empty() {
        let i = at.index(chars.len());
        match edit {
            0 => {
                chars.remove(i);
            }
            1 => chars[i] = c,
            _ => chars.insert(i, c),
        }
    }
    chars.into_iter().collect()
}

/// Bad input never panics: printed graphs with one character deleted, replaced or inserted
/// either give an error with a position inside the source (counted: at least half of them
/// must) or parse to a graph that prints and parses back to itself.
#[test]
fn damaged_text_gives_errors_not_panics() {
    let chars = vec![
        '(', ')', '[', ']', ',', ':', '=', '*', '^', '-', '@', '"', '%', '#', '\n', 'x', '1', '.',
        'e', ' ', '\\',
    ];
    run_property(
        "text_roundtrip::damaged_text_gives_errors_not_panics",
        file!(),
        proptest_cases(512),
        0.5,
        (
            arb_graph(),
            any::<prop::sample::Index>(),
            0..3u8,
            prop::sample::select(chars),
        ),
        |(g, at, edit, c), tally| {
            let text = damaged(&g, at, edit, c);
            match parse(&text, "damaged.weft") {
                Err(e) => {
                    let lines = text.split('\n').count();
                    prop_assert!(
                        e.pos().line >= 1 && e.pos().line <= lines,
                        "{e} for\n{text}"
                    );
                    prop_assert!(e.pos().col >= 1);
                    tally.compared();
                }
                Ok(back) => {
                    // Still a graph (a deleted space, a comment): it must round-trip.
                    let printed = print(&back);
                    let again = parse(&printed, "again.weft")
                        .map_err(|e| TestCaseError::fail(format!("{e}\n{printed}")))?;
                    prop_assert_eq!(print(&again), printed);
                    tally.skipped("parsed (round trip checked)");
                }
            }
            Ok(())
        },
    );
}

/// Arbitrary text never panics the parser, and most of it is an error with a position inside
/// the text (counted).
#[test]
fn arbitrary_text_gives_errors_not_panics() {
    run_property(
        "text_roundtrip::arbitrary_text_gives_errors_not_panics",
        file!(),
        proptest_cases(512),
        0.5,
        "[a-z0-9_%@\"\\\\ \n(),:=*^\\[\\]#.-]{0,80}",
        |text, tally| {
            match parse(&text, "random.weft") {
                Err(e) => {
                    prop_assert!(e.pos().line >= 1 && e.pos().line <= text.split('\n').count());
                    tally.compared();
                }
                Ok(_) => tally.skipped("parsed (comments and blank lines)"),
            }
            Ok(())
        },
    );
}
