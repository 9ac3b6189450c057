//! `weft bench` on every example: its JSON report has every mode's median/min/max, throughput,
//! the unfused/fused ratio of the medians, and compile times. (Speeds are never asserted.)

mod common;

use std::path::PathBuf;
use std::process::Command;

fn examples() -> Vec<PathBuf> {
    common::example_paths()
}

#[test]
fn bench_reports_every_mode_as_json_on_every_example() {
    for path in examples() {
        let out = common::output_ok(
            common::weft_command()
                .arg("bench")
                .arg(&path)
                .args(["--runs", "3", "--warmup", "1", "--json"]),
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // Every figure names its machine.
        let target = weft::runtime::Target::host().to_string();
        assert_eq!(v["target"].as_str(), Some(target.as_str()), "{v}");
        let modes = v["modes"].as_array().unwrap();
        let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
        assert_eq!(names, ["fused", "unfused", "interp"]);
        for m in modes {
            let (med, min, max) = (
                m["median_ms"].as_f64().unwrap(),
                m["min_ms"].as_f64().unwrap(),
                m["max_ms"].as_f64().unwrap(),
            );
            assert!(min <= med && med <= max && min > 0.0, "{m}");
            assert!(m["gb_per_s"].as_f64().unwrap() >= 0.0);
            assert!(m["gflop_per_s"].as_f64().unwrap() >= 0.0);
        }
        let ratio = v["unfused_over_fused"].as_f64().unwrap();
        let expected =
            modes[1]["median_ms"].as_f64().unwrap() / modes[0]["median_ms"].as_f64().unwrap();
        assert!((ratio - expected).abs() <= 1e-9 * expected, "{v}");
        for stage in ["passes", "lowering", "codegen", "all_modes"] {
            assert!(v["compile_ms"][stage].as_f64().unwrap() >= 0.0, "{v}");
        }
        assert!(v["bytes"].as_u64().unwrap() > 0);
    }
}

#[test]
fn bench_table_and_skip_interp() {
    let path = &examples()[0];
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("bench")
        .arg(path)
        .args(["--runs", "2", "--skip-interp"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("unfused / fused:")
            && text.contains("compile (fused, each stage alone on one thread): passes")
    );
    assert!(!text.contains("interp "), "{text}");
    assert!(!text.contains("graph to callable"), "{text}");
}

/// `--compiles N` adds the median of N whole fused compiles (the peers' compile workload);
/// without it the JSON's `whole_median` is null.
#[test]
fn bench_compiles_reports_the_median_whole_compile() {
    let path = &examples()[0];
    let run = |extra: &[&str]| {
        let out = common::output_ok(
            common::weft_command()
                .arg("bench")
                .arg(path)
                .args(["--runs", "1", "--warmup", "1", "--skip-interp", "--json"])
                .args(extra),
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = run(&["--compiles", "3"]);
    assert!(
        v["compile_ms"]["whole_median"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    assert!(run(&[])["compile_ms"]["whole_median"].is_null());
    let out = common::output_ok(common::weft_command().arg("bench").arg(path).args([
        "--runs",
        "1",
        "--skip-interp",
        "--compiles",
        "2",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("compile (fused, graph to callable): median"),
        "{text}"
    );
}

/// bench/workloads/train_step.weft is the peers' train_step: its loss is the nn helpers'
/// softmax cross-entropy of its logits, each call's assigns are the next call's state (so calls
/// on one batch lower the loss), and `weft bench` times it.
#[test]
fn the_train_step_workload_is_a_momentum_step_that_lowers_the_loss() {
    use weft::prelude::*;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench/workloads/train_step.weft"
    );
    let mut g = weft::ir::text::parse(&std::fs::read_to_string(path).unwrap(), path).unwrap();
    let find = |name: &str| g.find(name).unwrap();
    let (x, labels, logits) = (find("x"), find("labels"), find("logits"));
    let c = g.find_axis("C").unwrap();
    let reference = nn::softmax_cross_entropy(&mut g, logits, labels, c).unwrap();
    let mut outputs = g.outputs().to_vec(); // loss, then the parameters' assigns
    outputs.push(reference);
    let (x_axes, l_axes) = (g.node(x).axes.clone(), g.node(labels).axes.clone());
    let t = Transformer::new(g, Backend::Jit).unwrap();
    let step = t.computation(&outputs, &[x, labels]).unwrap();
    let xs: Vec<f32> = (0..64 * 64)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .collect();
    let ls: Vec<i64> = (0..64).map(|i| i % 10).collect();
    let inputs = [
        HostView::new(&x_axes, &[64, 64], &xs).unwrap(),
        HostView::new(&l_axes, &[64], &ls).unwrap(),
    ];
    let mut losses = Vec::new();
    for _ in 0..30 {
        let out = step.call(&inputs).unwrap();
        let (loss, reference) = (
            out[0].to_vec::<f32>().unwrap()[0],
            out[5].to_vec::<f32>().unwrap()[0],
        );
        assert!(
            (loss - reference).abs() <= 1e-5 * reference.abs().max(1.0),
            "{loss} vs {reference}"
        );
        losses.push(loss);
    }
    // lr 0.01: a slow, steady descent (2.38 to 2.01 over 30 steps when written).
    assert!(losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
    assert!(losses[29] < 0.9 * losses[0], "{losses:?}");
    let out = common::output_ok(common::weft_command().arg("bench").arg(path).args([
        "--runs",
        "3",
        "--warmup",
        "1",
        "--json",
        "--skip-interp",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["modes"][0]["median_ms"].as_f64().unwrap() > 0.0, "{v}");
}

/// Every extra mode is compiled and timed in the same rounds, after fused and unfused.
#[test]
fn bench_times_each_extra_mode_asked_for() {
    let path = common::example_paths()
        .into_iter()
        .find(|p| p.ends_with("l2.weft"))
        .unwrap();
    let out = common::output_ok(
        common::weft_command()
            .arg("bench")
            .arg(&path)
            .args(["--runs", "2", "--warmup", "1", "--json"])
            .args(["--skip-interp", "--ordinary-stores", "--cranelift-lanes"]),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let modes = v["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "fused",
            "unfused",
            "fused-ordinary-stores",
            "fused-cranelift-lanes"
        ]
    );
}
