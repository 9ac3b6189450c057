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
    assert!(text.contains("unfused / fused:") && text.contains("compile (fused): passes"));
    assert!(!text.contains("interp "), "{text}");
}
