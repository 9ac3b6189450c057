//! Property test: every random graph prints to text that parses back to the same graph.
//!
//! Graphs holding NaN are not equal to themselves (`NaN != NaN`), so besides `==` (checked when
//! the graph equals itself) the test compares the `Debug` forms of the axis tables, nodes and
//! outputs, which tell every float apart by value and sign (NaN payloads aside), and the texts.

use proptest::prelude::*;
use weft_ir::testing::arb_graph;
use weft_ir::text::{parse, print};
use weft_ir::Graph;

/// The graph's content with floats spelled out, so NaN compares equal to NaN.
fn content(g: &Graph) -> String {
    let axes: Vec<_> = g.axis_table().collect();
    let nodes: Vec<_> = g.nodes().collect();
    format!("{axes:?}\n{nodes:?}\n{:?}", g.outputs())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

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
