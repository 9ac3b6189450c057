//! Tests of the names `{:?}` of an axis shows, through the graphs that register them: a file
//! of its own, as the registry (`axis_names.rs`) sits below `graph`, which these tests use.

use crate::axis::{Axes, Axis, AxisDef, AxisId, SliceRange};
use crate::graph::Graph;

#[test]
fn debug_shows_names_duals_and_axes() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    let c = g.axis("C", 3).unwrap();
    assert_eq!(format!("{n:?}"), "N");
    assert_eq!(format!("{:?}", n.dual()), "N*");
    assert_eq!(format!("{:?}", n.dual().dual()), "N**");
    assert_eq!(format!("{:?}", n.undual()), "N^-1*");
    assert_eq!(format!("{:?}", n.with_dual(5)), "N^5*");
    let axes = Axes::new([n, c.dual()]).unwrap();
    assert_eq!(format!("{axes:?}"), "Axes([N, C*])");
    let s = g.derived_axis(AxisDef::Slice {
        of: n,
        range: SliceRange::range(0, 1),
    });
    assert_eq!(format!("{s:?}"), g.axis_name(s));
    g.rename_axis(s.id, "S");
    assert_eq!(format!("{s:?}"), "S");
    // Every Debug name is the graph's own display name.
    for (id, _) in g.axis_table() {
        let a = g.axis_of(id).with_dual(-1);
        assert_eq!(format!("{a:?}"), g.axis_name(a));
    }
}

#[test]
fn an_axis_of_no_table_and_the_index_form_show_indices() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    assert_eq!(format!("{:?}", Axis::new(n.id)), "axis0");
    assert_eq!(
        format!("{:?}", Axis::new(AxisId::from_u32(7)).dual()),
        "axis7*"
    );
    let by_index = super::debug_axes_by_index(|| format!("{:?}", n.dual()));
    assert_eq!(by_index, "axis0*");
    assert_eq!(
        format!("{n:?}"),
        "N",
        "the index form ends with the closure"
    );
    // An index the table does not have yet.
    assert_eq!(format!("{:?}", g.axis_of(AxisId::from_u32(9))), "axis9");
}

#[test]
fn two_declared_axes_of_one_name_show_their_indices() {
    let mut g = Graph::new();
    let a = g.declare_axis("N", Some(2), Vec::new());
    let b = g.declare_axis("N", Some(3), Vec::new());
    assert_eq!(format!("{a:?} {b:?}"), "N@0 N@1");
    assert_eq!(format!("{a:?}"), g.axis_name(a));
}

#[test]
fn clones_that_diverge_show_the_index_never_the_other_name() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    let mut h = g.clone();
    let x = g.axis("X", 3).unwrap();
    let y = h.axis("Y", 4).unwrap();
    assert_eq!((x.id, x.table()), (y.id, y.table()), "one index, one table");
    assert_eq!(format!("{x:?}"), format!("{}", x.id));
    assert_eq!(format!("{y:?}"), format!("{}", y.id));
    // Entries both share keep their names; a new one only one clone has is named.
    assert_eq!(format!("{n:?}"), "N");
    let z = h.axis("Z", 5).unwrap();
    assert_eq!(format!("{z:?}"), "Z");
    // A rename by one clone of a shared entry: ambiguous too.
    h.rename_axis(n.id, "M");
    assert_eq!(format!("{n:?}"), "axis0");
    // The same declaration in both clones keeps its name.
    let mut g2 = Graph::new();
    g2.axis("A", 1).unwrap();
    let mut h2 = g2.clone();
    let (b1, b2) = (g2.axis("B", 2).unwrap(), h2.axis("B", 2).unwrap());
    assert_eq!(format!("{b1:?} {b2:?}"), "B B");
    // Alone again, a graph names its entries anew.
    drop(h);
    g.rename_axis(x.id, "X2");
    assert_eq!(format!("{x:?}"), "X2");
}

#[test]
fn a_dropped_graphs_axes_show_their_indices() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    let h = g.clone();
    drop(g);
    assert_eq!(format!("{n:?}"), "N", "a clone keeps the table");
    drop(h);
    assert_eq!(format!("{n:?}"), "axis0");
    assert_eq!(format!("{:?}", n.dual()), "axis0*");
}

#[test]
fn the_registry_holds_only_live_tables() {
    let live: Vec<Graph> = (0..10)
        .map(|_| {
            let mut g = Graph::new();
            g.axis("N", 1).unwrap();
            g
        })
        .collect();
    for i in 0..100_000 {
        let mut g = Graph::new();
        let n = g.axis("N", i).unwrap();
        let h = g.clone();
        g.derived_axis(AxisDef::Slice {
            of: n,
            range: SliceRange::range(0, 1),
        });
        drop(h);
    }
    // Other tests of this binary make graphs on other threads at the same time; a few
    // hundred at once at most, not 100 000.
    let n = super::registered_tables();
    assert!((10..10_000).contains(&n), "{n} tables listed");
    drop(live);
}
