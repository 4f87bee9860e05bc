//! Chart helpers and the envelope writer of the anonymity, attack and FEC-vs-ARQ benchmarks
//! (the envelope itself is [`super::envelope`]):
//! `{experiment, command, machine, parameters, results, summary, charts}`, where `charts` are
//! ready-to-plot series for the generic renderer.

use std::path::Path;

use serde_json::{Value, json};

use super::BenchError;

/// One series of a chart.
pub fn series(label: &str, x: &[f64], y: &[f64]) -> Value {
    json!({ "label": label, "x": x, "y": y })
}

/// Chart description: `kind` is `line`, `cdf` or `bar`.
pub struct Chart<'a> {
    /// File stem suffix (`<experiment>-<suffix>`).
    pub suffix: &'a str,
    /// Title.
    pub title: &'a str,
    /// `line`, `cdf` or `bar`.
    pub kind: &'a str,
    /// X axis label.
    pub x_label: &'a str,
    /// Y axis label.
    pub y_label: &'a str,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

impl Chart<'_> {
    /// The chart object for `experiment` with `series`.
    pub fn with(&self, experiment: &str, series: Vec<Value>) -> Value {
        json!({
            "file": format!("{experiment}-{}", self.suffix), "title": self.title, "kind": self.kind,
            "x_label": self.x_label, "y_label": self.y_label, "log_x": self.log_x, "log_y": self.log_y,
            "series": series,
        })
    }
}

/// A line chart with linear axes.
pub fn line<'a>(suffix: &'a str, title: &'a str, x_label: &'a str, y_label: &'a str) -> Chart<'a> {
    Chart { suffix, title, kind: "line", x_label, y_label, log_x: false, log_y: false }
}

/// Writes `<out_dir>/<experiment>.json` with the envelope.
pub fn write_experiment(
    out_dir: &Path,
    experiment: &str,
    parameters: Value,
    results: Value,
    summary: Value,
    charts: Vec<Value>,
) -> Result<(), BenchError> {
    let path = out_dir.join(format!("{experiment}.json"));
    super::write_report(&path, experiment, parameters, results, summary, charts)
}

/// `NaN`/infinite values become `null` in JSON; this rounds finite ones for readability.
pub fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// Writes pretty JSON, creating parent directories.
pub fn write_json(path: &Path, value: &Value) -> Result<(), BenchError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| BenchError::Io { path: parent.to_path_buf(), source })?;
    }
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    std::fs::write(path, text).map_err(|source| BenchError::Io { path: path.to_path_buf(), source })
}
