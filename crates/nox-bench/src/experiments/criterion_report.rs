//! `nox bench criterion-report`: the Criterion results (median and 95 % interval of every
//! benchmark under a group directory) collected into one JSON file with the machine description.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::{BenchError, machine, write_json};

/// Collects `criterion_dir`'s results and writes `out`.
pub fn run(
    criterion_dir: &Path,
    groups: &[String],
    command: &str,
    since_unix: u64,
    out: &Path,
) -> Result<(), BenchError> {
    let results = collect(criterion_dir, groups, since_unix)?;
    let report = json!({
        "kind": "criterion-report",
        "command": command,
        "machine": machine::describe(),
        "unit": "ns",
        "results": results,
    });
    write_json(out, &report)?;
    println!("wrote {} ({} benchmarks)", out.display(), report["results"].as_array().map_or(0, Vec::len));
    Ok(())
}

/// Reads `<dir>/<group>/<bench>/new/estimates.json` for every benchmark.
fn collect(dir: &Path, groups: &[String], since_unix: u64) -> Result<Vec<Value>, BenchError> {
    let mut results = Vec::new();
    for group in sorted_dirs(dir)? {
        let group_name = file_name(&group);
        if !groups.is_empty() && !groups.iter().any(|g| group_name.starts_with(g.as_str())) {
            continue;
        }
        for bench in sorted_dirs(&group)? {
            let estimates = bench.join("new").join("estimates.json");
            if !estimates.exists() || modified_unix(&estimates) < since_unix {
                continue;
            }
            let text = std::fs::read_to_string(&estimates)
                .map_err(|source| BenchError::Io { path: estimates.clone(), source })?;
            let value: Value = serde_json::from_str(&text).map_err(|_| BenchError::Format(estimates.clone()))?;
            let median = &value["median"];
            let point = median["point_estimate"].as_f64().ok_or_else(|| BenchError::Format(estimates.clone()))?;
            results.push(json!({
                "group": group_name,
                "benchmark": file_name(&bench),
                "median_ns": point,
                "median_ci95_ns": [median["confidence_interval"]["lower_bound"], median["confidence_interval"]["upper_bound"]],
                "mean_ns": value["mean"]["point_estimate"],
            }));
        }
    }
    Ok(results)
}

fn modified_unix(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let entries = std::fs::read_dir(dir).map_err(|source| BenchError::Io { path: dir.to_path_buf(), source })?;
    let mut dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    Ok(dirs)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
