//! `weft graph`: DOT with one cluster per fusion group and every node, and SVG without a
//! system Graphviz, for every example at both stages.

mod common;

use weft::compiler::passes::fusion::BoundaryReason;

use std::path::{Path, PathBuf};
use std::sync::Arc;

fn examples() -> Vec<PathBuf> {
    common::example_paths()
}

fn weft(args: &[&str], file: &Path) -> String {
    let out = common::output_ok(common::weft_command().arg("graph").arg(file).args(args));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn dot_has_a_cluster_per_fusion_group_and_every_node() {
    for path in examples() {
        let src = std::fs::read_to_string(&path).unwrap();
        let g = Arc::new(weft::ir::text::parse(&src, "x.weft").unwrap());
        let exe = common::jit_executable(&g);
        let plan = exe.compiled_plan();
        let dot = weft(&["--format", "dot"], &path);
        assert!(dot.starts_with("digraph weft {") && dot.trim_end().ends_with('}'));
        assert_eq!(
            dot.matches("subgraph cluster_k").count(),
            plan.fusion.groups.len(),
            "{dot}"
        );
        let sg = &plan.simplified.graph;
        for (id, _) in sg.nodes() {
            assert!(dot.contains(&format!("  n{} [", id.as_u32())), "{dot}");
        }
        // Every value stored between kernels says why; inputs and constants, stored by
        // nature, are drawn as what they are instead ("stored: stored tensor" said nothing).
        for b in &plan.fusion.boundaries {
            let said = dot.contains(&format!("stored: {}", b.reason.name()));
            assert_eq!(said, b.reason != BoundaryReason::Stored, "{dot}");
        }
        assert!(
            !dot.contains("[kernel k"),
            "the kernel is the cluster, not a label line"
        );
        // The input stage: the graph as given, no clusters.
        let input = weft(&["--stage", "input"], &path);
        assert_eq!(input.matches("subgraph").count(), 0);
        for (id, _) in g.nodes() {
            assert!(input.contains(&format!("  n{} [", id.as_u32())));
        }
    }
}

#[test]
fn svg_needs_no_graphviz() {
    for path in examples() {
        for stage in ["input", "fused"] {
            let svg = weft(&["--format", "svg", "--stage", stage], &path);
            assert!(svg.starts_with("<?xml") || svg.starts_with("<svg"), "{svg}");
            assert!(svg.trim_end().ends_with("</svg>"));
            assert!(svg.contains("<text"), "labels are drawn");
        }
        // Fused: one dashed box per kernel, named; the canvas ends where the drawing does.
        let src = std::fs::read_to_string(&path).unwrap();
        let g = Arc::new(weft::ir::text::parse(&src, "x.weft").unwrap());
        let kernels = common::jit_executable(&g)
            .compiled_plan()
            .fusion
            .groups
            .len();
        let svg = weft(&["--format", "svg", "--stage", "fused"], &path);
        assert_eq!(svg.matches("class=\"kernel\"").count(), kernels, "{svg}");
        assert!(svg.contains(">kernel k0 ("), "{svg}");
        let height = |s: &str| -> f64 {
            let at = s.find("<svg ").unwrap();
            let h = &s[at..][s[at..].find("height=\"").unwrap() + 8..];
            h[..h.find('"').unwrap()].parse().unwrap()
        };
        let lowest = svg
            .match_indices("<rect x=")
            .filter_map(|(i, _)| {
                let attr = |name: &str| -> Option<f64> {
                    let t = &svg[i..];
                    let v = &t[t.find(name)? + name.len()..];
                    v[..v.find('"')?].trim().parse().ok()
                };
                Some(attr("y=\"")? + attr("height=\"")?)
            })
            .fold(0.0f64, f64::max);
        assert!(
            height(&svg) <= lowest + 40.0,
            "{}: canvas {} for a drawing ending at {lowest}",
            path.display(),
            height(&svg)
        );
    }
}

#[test]
fn svg_of_a_graph_too_large_to_lay_out_is_refused_naming_dot() {
    // The CNN's training graph (729 edges) is past the built-in layout's limit: a typed error
    // at once, never layout-rs's minutes or its panic.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/train/digits_cnn.weft");
    let o = common::weft_command()
        .args(["graph", path.to_str().unwrap(), "--format", "svg"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("edges are more than the built-in SVG layout draws")
            && err.contains("--format dot"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
