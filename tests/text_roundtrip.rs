//! Property test: every random graph prints to text that parses back to the same graph.
//!
//! Graphs holding NaN are not equal to themselves (`NaN != NaN`), so besides `==` (checked when
//! the graph equals itself) the test compares the `Debug` forms of the axis tables, nodes and
//! outputs, which tell every float apart by value and sign (NaN payloads aside), and the texts.

use proptest::prelude::*;
use weft_ir::testing::{arb_graph, proptest_cases};
use weft_ir::text::{parse, print};
use weft_ir::Graph;

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(512)))]

    /// Bad input never panics: printed graphs with one character deleted, replaced or inserted
    /// either parse or give an error with a position inside the source.
    #[test]
    fn damaged_text_gives_errors_not_panics(
        g in arb_graph(),
        at in any::<prop::sample::Index>(),
        edit in 0..3u8,
        c in prop::sample::select(vec!['(', ')', '[', ']', ',', ':', '=', '*', '^', '-', '@', '"', '%', '#', '\n', 'x', '1', '.', 'e', ' ', '\\']),
    ) {
        let mut chars: Vec<char> = print(&g).chars().collect();
        if !chars.is_empty() {
            let i = at.index(chars.len());
            match edit {
                0 => { chars.remove(i); }
                1 => chars[i] = c,
                _ => chars.insert(i, c),
            }
        }
        let text: String = chars.into_iter().collect();
        if let Err(e) = parse(&text, "damaged.weft") {
            let lines = text.split('\n').count();
            prop_assert!(e.pos().line >= 1 && e.pos().line <= lines, "{e} for\n{text}");
            prop_assert!(e.pos().col >= 1);
        }
    }

    /// Arbitrary text never panics the parser.
    #[test]
    fn arbitrary_text_gives_errors_not_panics(text in "[a-z0-9_%@\"\\\\ \n(),:=*^\\[\\]#.-]{0,80}") {
        let _ = parse(&text, "random.weft");
    }
}
