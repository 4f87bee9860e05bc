//! The crate's layering, read from its sources: the harness (`src/harness.rs`, `src/harness/`)
//! imports no experiment and not the CLI; an experiment (`src/experiments/<name>.rs` and
//! `src/experiments/<name>/`) imports the harness and never another experiment nor the CLI
//! (`src/bench.rs`). A text check of every non-comment line: a helper two experiments need
//! belongs in the harness, and this test fails until it is moved there.

use std::path::{Path, PathBuf};

/// One source file: its path relative to `src/`, the experiment it belongs to (`None`: the
/// harness), its depth below `src/experiments/<name>/` (0 for `<name>.rs` itself) and its text.
struct Source {
    path: String,
    experiment: Option<String>,
    depth: usize,
    text: String,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

fn read(src: &Path, path: &Path, experiment: Option<String>, depth: usize) -> Source {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let path = path.strip_prefix(src).unwrap_or(path).display().to_string();
    Source { path, experiment, depth, text }
}

/// The experiments' names (from the directory listing) and every harness and experiment file.
fn sources(src: &Path) -> (Vec<String>, Vec<Source>) {
    let experiments_dir = src.join("experiments");
    let mut names: Vec<String> = std::fs::read_dir(&experiments_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", experiments_dir.display()))
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.is_dir() || p.extension().is_some_and(|x| x == "rs")).then_some(stem)
        })
        .collect();
    names.sort();
    names.dedup();
    let mut files = Vec::new();
    let mut harness = vec![src.join("harness.rs")];
    rust_files(&src.join("harness"), &mut harness);
    files.extend(harness.iter().map(|p| read(src, p, None, 0)));
    for name in &names {
        let top = experiments_dir.join(format!("{name}.rs"));
        if top.exists() {
            files.push(read(src, &top, Some(name.clone()), 0));
        }
        let dir = experiments_dir.join(name);
        if dir.is_dir() {
            let mut nested = Vec::new();
            rust_files(&dir, &mut nested);
            for path in nested {
                let depth = path.strip_prefix(&dir).map_or(1, |p| p.components().count());
                files.push(read(src, &path, Some(name.clone()), depth));
            }
        }
    }
    (names, files)
}

/// Every import that breaks the layering, as `file:line: what`.
fn violations(names: &[String], files: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        // Inline `mod x {` blocks open at these indents (rustfmt's layout: the block ends at the
        // first `}` line at the same indent); each adds one `super::` to reach the experiments.
        let mut inline_mods: Vec<usize> = Vec::new();
        for (index, line) in file.text.lines().enumerate() {
            let code = line.trim_start();
            let indent = line.len() - code.len();
            if inline_mods.last() == Some(&indent) && code.starts_with('}') {
                inline_mods.pop();
            }
            if code.starts_with("//") {
                continue;
            }
            // `super::` repeated this many times is `crate::experiments` from this line.
            let up_to_experiments = "super::".repeat(file.depth + inline_mods.len() + 1);
            let opens_mod = code.strip_prefix("pub ").unwrap_or(code).starts_with("mod ") && code.ends_with('{');
            let mut bad = |what: String| found.push(format!("{}:{}: {what}: {}", file.path, index + 1, code));
            if code.contains("crate::bench::") || code.contains("crate::bench_gate") {
                bad("imports the CLI layer".into());
            }
            match &file.experiment {
                None => {
                    if code.contains("experiments::") || code.contains("crate::experiments") {
                        bad("the harness imports an experiment".into());
                    }
                }
                Some(own) => {
                    if code.contains("experiments::{") || code.contains(&format!("{up_to_experiments}{{")) {
                        bad(format!("{own} imports a group of experiments"));
                    }
                    for other in names.iter().filter(|n| *n != own) {
                        let paths = [format!("experiments::{other}"), format!("{up_to_experiments}{other}")];
                        if paths.iter().any(|p| contains_path(code, p)) {
                            bad(format!("{own} imports the experiment {other}"));
                        }
                    }
                }
            }
            if opens_mod {
                inline_mods.push(indent);
            }
        }
    }
    found
}

/// `code` mentions `path` as a whole path segment (`…::cover` but not `…::cover_x`), not merely
/// as the tail of a longer identifier (`xsuper::cover`).
fn contains_path(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + path.len()..].chars().next();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn experiments_import_only_the_harness_and_the_harness_no_experiment() {
    let (names, files) = sources(&src());
    // Not vacuous: the listing found the experiments and their files.
    for expected in ["anonymity", "cover", "disclosure", "net", "hosts", "sweeps", "profiles", "soak"] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing from {names:?}");
    }
    assert!(files.iter().any(|f| f.path.starts_with("experiments/cover/")), "nested experiment files are read");
    assert!(files.iter().any(|f| f.path.starts_with("harness/")), "harness files are read");
    let found = violations(&names, &files);
    assert!(found.is_empty(), "layering broken (move the shared helper into src/harness/):\n{}", found.join("\n"));
}

#[test]
fn the_check_catches_an_experiment_importing_another() {
    let names: Vec<String> = ["cover", "disclosure", "net", "sweeps"].map(String::from).to_vec();
    let file = |path: &str, experiment: Option<&str>, depth: usize, text: &str| Source {
        path: path.into(),
        experiment: experiment.map(String::from),
        depth,
        text: text.into(),
    };
    let bad = [
        file("experiments/disclosure.rs", Some("disclosure"), 0, "use crate::experiments::cover::shipped_traffic;"),
        file("experiments/sweeps.rs", Some("sweeps"), 0, "    let r = super::net::measure_rate(x);"),
        file("experiments/sweeps.rs", Some("sweeps"), 0, "use crate::experiments::{cover, net};"),
        file("experiments/cover/phases.rs", Some("cover"), 1, "use super::super::net::measure_rate;"),
        file("experiments/cover/phases.rs", Some("cover"), 1, "use crate::bench::BenchError;"),
        file("harness/common.rs", None, 0, "use crate::experiments::net::measure_rate;"),
        file("experiments/defi.rs", Some("defi"), 0, "mod tests {\n    use super::x;\n}\nuse super::net;"),
        file("experiments/defi.rs", Some("defi"), 0, "mod tests {\n    use super::super::net::x;\n}"),
    ];
    for source in &bad {
        assert_eq!(violations(&names, std::slice::from_ref(source)).len(), 1, "not caught: {}", source.text);
    }
    let good = [
        file(
            "experiments/disclosure.rs",
            Some("disclosure"),
            0,
            "use crate::harness::{shipped_traffic, testnet_model};",
        ),
        file("experiments/cover/phases.rs", Some("cover"), 1, "use super::*;\nuse super::{CoverArgs, Phase};"),
        file("experiments/cover.rs", Some("cover"), 0, "mod phases;\nuse crate::harness::capture::{self, now_us};"),
        file("experiments/net.rs", Some("net"), 0, "// see super::cover for the observer\nlet network = 1;"),
        file("harness/rate.rs", None, 0, "use super::{BenchError, err, percentile};"),
        file("experiments/defi.rs", Some("defi"), 0, "#[cfg(test)]\nmod tests {\n    use super::{net, x};\n}"),
    ];
    for source in &good {
        assert!(violations(&names, std::slice::from_ref(source)).is_empty(), "false alarm: {}", source.text);
    }
}
