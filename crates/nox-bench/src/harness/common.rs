//! Shared pieces of the network experiments (`nox bench surb-rtt`,
//! `reply-loss`, `http-overhead`, `latency-vs-delay`, `concurrency`,
//! `scaling`): the JSON envelope, a testnet that stops on drop,
//! a client of it and a request runner with bounded concurrency. The local HTTP servers are
//! `nox_testnet::servers`.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use nox_client::{Client, ClientConfig, ClientHandle, ShellConfig};
use nox_message::{RequestBody, Status};
use serde_json::{Value, json};

use super::{BenchError, err, machine, write_json};
use nox_testnet::{self as testnet, Layout};

/// Options every network experiment takes.
#[derive(clap::Args, Clone)]
pub struct CommonArgs {
    /// CI-sized run (seconds, not minutes).
    #[arg(long)]
    pub quick: bool,
    /// Output JSON (default `bench/data/<experiment>.json`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Testnet state directory.
    #[arg(long, default_value = ".nox-bench-net")]
    pub dir: PathBuf,
    /// First link port of the testnets (metrics at +100).
    #[arg(long, default_value_t = 31_000)]
    pub base_port: u16,
}

/// A sweep's values: those given on the command line, else the quick or the full default.
pub fn given_or<T: Clone>(given: &[T], quick: bool, quick_default: &[T], full_default: &[T]) -> Vec<T> {
    let chosen = if !given.is_empty() {
        given
    } else if quick {
        quick_default
    } else {
        full_default
    };
    chosen.to_vec()
}

/// Charts named `<experiment>-<suffix>` become `<stem>-<suffix>`.
fn rename_charts(charts: &mut [Value], experiment: &str, stem: &str) {
    for chart in charts {
        let renamed = chart
            .get("file")
            .and_then(Value::as_str)
            .and_then(|f| f.strip_prefix(experiment))
            .and_then(|rest| rest.strip_prefix('-'))
            .map(|suffix| format!("{stem}-{suffix}"));
        if let (Some(file), Some(obj)) = (renamed, chart.as_object_mut()) {
            obj.insert("file".into(), Value::String(file));
        }
    }
}

/// A chart of the envelope.
pub fn chart(file: &str, title: &str, kind: &str, axes: (&str, &str), log: (bool, bool), series: Vec<Value>) -> Value {
    json!({ "file": file, "title": title, "kind": kind, "x_label": axes.0, "y_label": axes.1,
        "log_x": log.0, "log_y": log.1, "series": series })
}

/// The command line as typed, with the program shown as `nox`.
pub fn command_line() -> String {
    std::iter::once("nox".to_string()).chain(std::env::args().skip(1)).collect::<Vec<_>>().join(" ")
}

/// The JSON every `nox bench` experiment writes (docs/benchmarks/README.md):
/// experiment, exact command, machine, parameters, results, summary, charts.
pub fn envelope(experiment: &str, parameters: Value, results: Value, summary: &Value, charts: Vec<Value>) -> Value {
    json!({ "experiment": experiment, "command": command_line(), "machine": machine::describe(),
        "parameters": parameters, "results": results, "summary": summary, "charts": charts })
}

/// Writes the experiment's envelope to `--out` or `bench/data/<experiment>.json`.
pub fn write_envelope(
    common: &CommonArgs,
    experiment: &str,
    parameters: Value,
    results: Value,
    summary: Value,
    charts: Vec<Value>,
) -> Result<(), BenchError> {
    let out = common.out.clone().unwrap_or_else(|| PathBuf::from(format!("bench/data/{experiment}.json")));
    write_report(&out, experiment, parameters, results, summary, charts)
}

/// Writes the experiment's envelope to `path` and prints its summary: the one writer behind
/// [`write_envelope`] and [`super::json::write_experiment`]. Charts are named after the
/// file: written to `bench/data/streams-mu50.json`, the chart `streams-throughput` becomes
/// `streams-mu50-throughput`, so a second run of one experiment never overwrites the
/// first one's charts.
pub fn write_report(
    path: &Path,
    experiment: &str,
    parameters: Value,
    results: Value,
    summary: Value,
    mut charts: Vec<Value>,
) -> Result<(), BenchError> {
    if let Some(stem) = path.file_stem().and_then(|s| s.to_str()).filter(|s| *s != experiment) {
        rename_charts(&mut charts, experiment, stem);
    }
    let report = envelope(experiment, parameters, results, &summary, charts);
    write_json(path, &report)?;
    println!("{experiment}: {summary}\nwrote {}", path.display());
    Ok(())
}

/// A running testnet, stopped when dropped.
pub struct Net {
    /// Its state directory.
    pub dir: PathBuf,
    /// Seconds from `up` to every node serving its metrics.
    pub startup_s: f64,
}

impl Net {
    /// `nox testnet up` with `layout` (cover traffic off unless asked).
    pub fn up(dir: &Path, layout: &Layout) -> Result<Self, BenchError> {
        let started = Instant::now();
        testnet::up(dir, layout).map_err(err)?;
        Ok(Self { dir: dir.to_path_buf(), startup_s: started.elapsed().as_secs_f64() })
    }

    /// Resident memory of every node, kB.
    pub fn rss_kb(&self) -> Vec<u64> {
        testnet::nodes(&self.dir).iter().filter_map(|n| testnet::rss_kb(&n.dir)).collect()
    }

    /// Sum of a counter over the exits.
    pub fn exit_metric(&self, name: &str) -> u64 {
        let all = testnet::nodes(&self.dir);
        let last = all.iter().map(|n| n.layer).max().unwrap_or(0);
        all.iter()
            .filter(|n| n.layer == last)
            .map(|n| testnet::metric(&testnet::scrape(n.metrics).unwrap_or_default(), name))
            .sum()
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = testnet::down(&self.dir);
    }
}

/// A layout without cover traffic (it would add unrelated load).
/// "Throughput at 0 % loss" of a `nox bench testnet`-style sweep: the highest delivered rate
/// among rows that lost nothing, really offered ≥ 95 % of their rate, and kept the median latency
/// at most twice the lightest load's (beyond that, queues grow: saturation).
pub fn throughput_at_zero_loss(rows: &[Value]) -> f64 {
    let base_p50 = rows.first().and_then(|r| r["latency_ms"]["p50"].as_f64()).unwrap_or(f64::INFINITY);
    rows.iter()
        .filter(|r| r["lost"] == 0)
        .filter(|r| r["achieved_send_rate"].as_f64().unwrap_or(0.0) >= 0.95 * r["offered_rate"].as_f64().unwrap_or(0.0))
        .filter(|r| r["latency_ms"]["p50"].as_f64().is_some_and(|p50| p50 <= 2.0 * base_p50))
        .filter_map(|r| r["delivered_rate"].as_f64())
        .fold(0.0f64, f64::max)
}

/// `echoes` echo round trips one after another (ms each, in order); `label` names them in the
/// request text and in the error of one that comes back wrong.
pub async fn echo_round_trips(client: &ClientHandle, echoes: usize, label: &str) -> Result<Vec<f64>, BenchError> {
    let mut rtts = Vec::with_capacity(echoes);
    for i in 0..echoes {
        let text = format!("{label} echo {i}");
        let started = Instant::now();
        let response = client.request(RequestBody::Echo(text.clone().into_bytes()), 1024).await.map_err(err)?;
        if response.status != Status::Ok || response.body != text.as_bytes() {
            return Err(err(format!("{label} echo {i} came back wrong")));
        }
        rtts.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(rtts)
}

/// One echo of `kib` KiB, whose reply needs several fragments: (ms, reply packets received).
pub async fn bulk_echo(client: &ClientHandle, kib: usize, label: &str) -> Result<(f64, u64), BenchError> {
    let bulk: Vec<u8> = (0..kib * 1024).map(|i| (i % 251) as u8).collect();
    let replies_before = client.stats().replies;
    let started = Instant::now();
    let response = client.request(RequestBody::Echo(bulk.clone()), bulk.len()).await.map_err(err)?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if response.status != Status::Ok || response.body != bulk {
        return Err(err(format!("the {kib} KiB echo {label} came back wrong")));
    }
    Ok((ms, client.stats().replies - replies_before))
}

pub fn quiet_layout(base_port: u16) -> Layout {
    Layout { base_port, loop_rate: 0.0, drop_rate: 0.0, ..Layout::default() }
}

/// Starts a client of the testnet in `dir` (on the geometry its topology names).
pub async fn client(dir: &Path, core: ClientConfig) -> Result<ClientHandle, BenchError> {
    let topology = nox_testnet::directory::topology(dir).map_err(err)?;
    let shell = ShellConfig { topology, core };
    Client::start(shell).await.map_err(err)
}

/// Makes the request body of request number `i`.
pub type MakeRequest = Arc<dyn Fn(u64) -> RequestBody + Send + Sync>;
/// Accepts or rejects a response body.
pub type CheckBody = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// Outcome of a batch of requests.
pub struct RunResult {
    /// Round-trip times of the successful requests, ms, in completion order.
    pub rtts_ms: Vec<f64>,
    /// Requests that failed (timeout, error status, wrong length).
    pub failures: u64,
    /// Wall time of the batch, s.
    pub elapsed_s: f64,
}

impl RunResult {
    /// Completed requests per second.
    pub fn rate(&self) -> f64 {
        self.rtts_ms.len() as f64 / self.elapsed_s.max(1e-9)
    }
}

/// Sends `count` requests made by `make`, at most `concurrency` in flight;
/// a request succeeds if its status is Ok and `check(body)` holds.
pub async fn run_requests(
    client: &ClientHandle,
    make: MakeRequest,
    check: CheckBody,
    expected_reply_len: usize,
    count: u64,
    concurrency: usize,
) -> RunResult {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let label = format!("  {count} requests, {} in flight", concurrency.max(1));
    let progress = Arc::new(std::sync::Mutex::new(super::progress::Progress::new(label, count)));
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, make, check, next) = (client.clone(), make.clone(), check.clone(), next.clone());
        let progress = progress.clone();
        workers.push(tokio::spawn(async move {
            let (mut rtts, mut failures) = (Vec::new(), 0u64);
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    break;
                }
                let sent = Instant::now();
                match client.request(make(index), expected_reply_len).await {
                    Ok(response) if response.status == Status::Ok && check(&response.body) => {
                        rtts.push(sent.elapsed().as_secs_f64() * 1e3);
                    }
                    _ => failures += 1,
                }
                if let Ok(mut bar) = progress.lock() {
                    bar.advance(1);
                }
            }
            (rtts, failures)
        }));
    }
    let mut result = RunResult { rtts_ms: Vec::new(), failures: 0, elapsed_s: 0.0 };
    for worker in workers {
        match worker.await {
            Ok((rtts, failures)) => {
                result.rtts_ms.extend(rtts);
                result.failures += failures;
            }
            Err(_) => result.failures += 1,
        }
    }
    result.elapsed_s = started.elapsed().as_secs_f64();
    if let Ok(bar) = Arc::try_unwrap(progress).map(|m| m.into_inner()) {
        let _ = bar.map(super::progress::Progress::finish);
    }
    result
}

/// Echo requests of `len` bytes, checked for length.
pub async fn echo_run(client: &ClientHandle, len: usize, count: u64, concurrency: usize) -> RunResult {
    let make: MakeRequest = Arc::new(move |i| RequestBody::Echo((0..len).map(|j| (j as u64 ^ i) as u8).collect()));
    run_requests(client, make, Arc::new(move |body| body.len() == len), len, count, concurrency).await
}

/// The reply shape the policy gives a request whose expected reply body is
/// `expected_reply_len` bytes on the classical geometry (the experiments using it run on
/// classical testnets): `(d, p, SURBs attached)`. The client attaches
/// `surbs_needed(loss, target)` SURBs; the exit uses the least parity that
/// meets its target (0.999) at its loss estimate, within those SURBs.
pub fn reply_shape(expected_reply_len: usize, client: &ClientConfig, exit_estimate: f64) -> (usize, usize, usize) {
    let geometry = nox_sphinx::Geometry::default();
    let surbs = nox_message::surbs_needed(&geometry, expected_reply_len, client.loss, client.target).unwrap_or(0);
    let encoded_len = expected_reply_len + nox_message::RESPONSE_HEADER_LEN;
    let d = nox_fec::data_shards_for(encoded_len, geometry.payload_capacity()).unwrap_or(0);
    let p = match nox_fec::choose_parity(d, surbs, exit_estimate, 0.999) {
        Ok(choice) => choice.parity_shards,
        Err(nox_fec::PlanningError::TargetUnreachable { best, .. }) => best.parity_shards,
        Err(_) => 0,
    };
    (d, p, surbs)
}

/// Bytes one reply shard carries on the classical geometry (a SURB reply's payload less the
/// fragment header).
pub fn shard_capacity() -> usize {
    nox_fec::shard_capacity(nox_sphinx::Geometry::default().payload_capacity()).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_named_after_the_file_they_are_written_to() {
        let dir = std::env::temp_dir().join(format!("nox-bench-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let charts = || vec![json!({ "file": "streams-throughput" }), json!({ "file": "other-chart" })];
        for (name, expected) in
            [("streams.json", "streams-throughput"), ("streams-mu50.json", "streams-mu50-throughput")]
        {
            let path = dir.join(name);
            write_report(&path, "streams", json!({}), json!({}), json!({}), charts()).unwrap();
            let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(written["charts"][0]["file"], expected);
            assert_eq!(written["charts"][1]["file"], "other-chart", "only the experiment's own prefix changes");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
