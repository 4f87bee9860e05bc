//! `nox bench surb-rtt` and `nox bench reply-loss`: SURB round trips and
//! FEC-protected reply delivery on the multi-process testnet, with the real
//! client (`nox-client`) in this process.

use std::time::Duration;

use nox_client::ClientConfig;
use nox_message::{HttpRequestMsg, HttpResponseMsg, RequestBody};
use serde_json::{Value, json};

use crate::harness::{
    BenchError, CommonArgs, Net, RunResult, cdf_series, chart, client, echo_run, err, quiet_layout, reply_shape,
    round3, run_requests, shard_capacity, stats, wilson95, write_envelope,
};
use nox_testnet::Layout;
use nox_testnet::servers::{bind_loopback, http_server_on};

/// Options of `nox bench surb-rtt`.
#[derive(clap::Args)]
pub struct SurbRttArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Bytes of the multi-fragment echo.
    #[arg(long, default_value_t = 64 * 1024)]
    multi_bytes: usize,
    /// Requests in flight in the concurrent runs.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

/// Options of `nox bench reply-loss`.
#[derive(clap::Args)]
pub struct ReplyLossArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Data shards of the reply (its size is chosen to need exactly d).
    #[arg(long, default_value_t = 11)]
    data_shards: usize,
    /// Requests per loss rate and client (quick: 30).
    #[arg(long, default_value_t = 200)]
    requests: u64,
    /// Injected reply loss rates to sweep (quick: 0,0.1,0.3).
    #[arg(long, value_delimiter = ',', default_value = "0,0.05,0.1,0.2,0.3")]
    losses: Vec<f64>,
}

fn runtime() -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)
}

/// Client without FEC: budget for no loss, so SURBs = d and the exit has no spare for parity.
pub fn no_fec() -> ClientConfig {
    ClientConfig { loss: 0.0, timeout: Duration::from_secs(5), ..ClientConfig::default() }
}

/// One variant's row: shape, sequential and concurrent statistics.
fn rtt_row(label: &str, len: usize, core: &ClientConfig, seq: &mut RunResult, conc: &mut RunResult) -> Value {
    let (d, p, surbs) = reply_shape(len, core, 0.05);
    json!({ "variant": label, "reply_bytes": len, "data_shards": d, "parity_shards": p, "surbs": surbs,
        "client_loss": core.loss, "client_target": core.target,
        "sequential": { "rtt_ms": stats(&mut seq.rtts_ms), "failures": seq.failures, "requests_per_s": seq.rate(),
            "samples_ms": seq.rtts_ms.iter().map(|v| round3(*v)).collect::<Vec<_>>() },
        "concurrent": { "rtt_ms": stats(&mut conc.rtts_ms), "failures": conc.failures, "requests_per_s": conc.rate(),
            "samples_ms": conc.rtts_ms.iter().map(|v| round3(*v)).collect::<Vec<_>>() } })
}

/// Runs `nox bench surb-rtt`.
pub fn surb_rtt(args: &SurbRttArgs) -> Result<(), BenchError> {
    let count: u64 = if args.common.quick { 30 } else { 300 };
    let net = Net::up(&args.common.dir, &quiet_layout(args.common.base_port))?;
    let fec = ClientConfig { timeout: Duration::from_secs(5), ..ClientConfig::default() };
    let variants: [(&str, usize, ClientConfig); 4] = [
        ("1 packet, no FEC (d=1, p=0)", 64, no_fec()),
        ("1 packet, default policy", 64, fec.clone()),
        ("multi-fragment, no FEC (p=0)", args.multi_bytes, no_fec()),
        ("multi-fragment, FEC (default policy)", args.multi_bytes, fec),
    ];
    let rows = runtime()?.block_on(async {
        let mut rows = Vec::new();
        for (label, len, core) in &variants {
            let handle = client(&net.dir, core.clone()).await?;
            let _warm = echo_run(&handle, *len, 3, 1).await;
            let mut seq = echo_run(&handle, *len, count, 1).await;
            let mut conc = echo_run(&handle, *len, count, args.concurrency).await;
            let row = rtt_row(label, *len, core, &mut seq, &mut conc);
            println!("{label}: sequential {} concurrent {}", row["sequential"]["rtt_ms"], row["concurrent"]["rtt_ms"]);
            rows.push(row);
        }
        Ok::<_, BenchError>(rows)
    })?;
    drop(net);
    let samples = |row: &Value, mode: &str| -> Vec<f64> {
        row[mode]["samples_ms"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
    };
    let cdf = |mode: &str| -> Vec<Value> {
        rows.iter().map(|r| cdf_series(r["variant"].as_str().unwrap_or(""), &samples(r, mode))).collect()
    };
    let p50s = |mode: &str| -> Value {
        json!({ "label": format!("p50, {mode}"), "x": rows.iter().map(|r| r["variant"].clone()).collect::<Vec<_>>(),
            "y": rows.iter().map(|r| r[mode]["rtt_ms"]["p50"].clone()).collect::<Vec<_>>() })
    };
    let headline = |i: usize, mode: &str| rows.get(i).map(|r| r[mode]["rtt_ms"].clone());
    let summary = json!({
        "single_packet_no_fec_sequential_ms": headline(0, "sequential"),
        "multi_fragment_no_fec_sequential_ms": headline(2, "sequential"),
        "multi_fragment_fec_sequential_ms": headline(3, "sequential"),
        "multi_fragment_fec_concurrent_ms": headline(3, "concurrent"),
        "target_p50_ms": 12.0, "paper_p50_ms": 218.8,
    });
    let charts = vec![
        chart(
            "surb-rtt-cdf",
            "SURB round trip, sequential (μ = 1 ms, 3+3 hops)",
            "cdf",
            ("RTT (ms)", "fraction"),
            (false, false),
            cdf("sequential"),
        ),
        chart(
            "surb-rtt-cdf-concurrent",
            &format!("SURB round trip, {} in flight", args.concurrency),
            "cdf",
            ("RTT (ms)", "fraction"),
            (false, false),
            cdf("concurrent"),
        ),
        chart(
            "surb-rtt-p50",
            "SURB RTT median by reply shape",
            "bar",
            ("variant", "p50 RTT (ms)"),
            (false, false),
            vec![p50s("sequential"), p50s("concurrent")],
        ),
    ];
    let parameters = json!({ "nodes": 9, "layers": 3, "hops_each_way": 3, "mean_delay_ms": 1.0,
        "requests_per_run": count, "concurrency": args.concurrency, "multi_bytes": args.multi_bytes,
        "exit_reply_loss_estimate": 0.05, "exit_reply_target": 0.999, "cover_traffic": false });
    write_envelope(&args.common, "surb-rtt", parameters, json!(rows), summary, charts)
}

/// Measured delivery next to Theorem 1 (and its 95 % interval).
pub fn theorem_row(d: usize, p: usize, loss: f64, delivered: u64, requests: u64) -> Value {
    let theory = nox_fec::recovery_probability(d, p, loss);
    let (lo, hi) = wilson95(delivered, requests);
    json!({ "data_shards": d, "parity_shards": p, "loss": loss, "requests": requests, "delivered": delivered,
        "delivery_rate": delivered as f64 / requests.max(1) as f64, "wilson95": [lo, hi],
        "theorem1": theory, "theorem1_within_ci95": (lo..=hi).contains(&theory) })
}

/// Runs `nox bench reply-loss`.
pub fn reply_loss(args: &ReplyLossArgs) -> Result<(), BenchError> {
    let (requests, losses) =
        if args.common.quick { (30, vec![0.0, 0.1, 0.3]) } else { (args.requests, args.losses.clone()) };
    let estimate = 0.1;
    // The HTTP body is sized so that the encoded response needs exactly d shards.
    let capacity = shard_capacity();
    let body_len = capacity * args.data_shards.saturating_sub(1) + capacity / 2;
    let expected = body_len + 512;
    let with_fec = ClientConfig { loss: 0.1, target: 0.98, timeout: Duration::from_secs(2), ..ClientConfig::default() };
    let without = ClientConfig { timeout: Duration::from_secs(2), ..no_fec() };
    let (d, p, surbs) = reply_shape(expected, &with_fec, estimate);
    let (d0, p0, surbs0) = reply_shape(expected, &without, estimate);
    println!("reply of {body_len} B: FEC d={d} p={p} ({surbs} SURBs); no FEC d={d0} p={p0} ({surbs0} SURBs)");
    let mut rows = Vec::new();
    for &loss in &losses {
        let layout =
            Layout { inject_reply_loss: loss, reply_loss_estimate: estimate, ..quiet_layout(args.common.base_port) };
        // The server's address is the one local destination the exits may reach.
        let listener = bind_loopback().map_err(err)?;
        let layout = Layout { exit_allow: vec![listener.local_addr().map_err(err)?], ..layout };
        let net = Net::up(&args.common.dir, &layout)?;
        let (fec_run, plain_run, packets) = runtime()?.block_on(async {
            let server = http_server_on(listener, vec![0x5a; body_len]).map_err(err)?;
            let url = format!("http://{server}/reply");
            let make = std::sync::Arc::new(move |_| {
                RequestBody::Http(HttpRequestMsg {
                    method: "GET".into(),
                    url: url.clone(),
                    headers: vec![],
                    body: vec![],
                })
            });
            let check =
                std::sync::Arc::new(move |b: &[u8]| HttpResponseMsg::decode(b).is_ok_and(|r| r.body.len() == body_len));
            let fec_client = client(&net.dir, with_fec.clone()).await?;
            let before = net.exit_metric("nox_exit_reply_packets_total");
            let fec_run = run_requests(&fec_client, make.clone(), check.clone(), expected, requests, 8).await;
            let packets = net.exit_metric("nox_exit_reply_packets_total") - before;
            let plain_client = client(&net.dir, without.clone()).await?;
            let plain_run = run_requests(&plain_client, make, check, expected, requests, 16).await;
            Ok::<_, BenchError>((fec_run, plain_run, packets))
        })?;
        let fec_row = theorem_row(d, p, loss, fec_run.rtts_ms.len() as u64, requests);
        let plain_row = theorem_row(d0, p0, loss, plain_run.rtts_ms.len() as u64, requests);
        println!(
            "loss {loss}: FEC {} (Theorem 1 {}), no FEC {}",
            fec_row["delivery_rate"], fec_row["theorem1"], plain_row["delivery_rate"]
        );
        rows.push(json!({ "injected_loss": loss, "fec": fec_row, "no_fec": plain_row,
            "fec_reply_packets_per_request": packets as f64 / requests.max(1) as f64,
            "injected_drops_total": net.exit_metric("nox_exit_reply_packets_injected_loss_total") }));
    }
    let series = |label: &str, pick: &dyn Fn(&Value) -> Value| {
        json!({ "label": label, "x": losses.iter().map(|l| l * 100.0).collect::<Vec<_>>(),
            "y": rows.iter().map(pick).collect::<Vec<_>>() })
    };
    let charts = vec![chart(
        "reply-loss-delivery",
        &format!("Reply delivery vs injected loss (d={d})"),
        "line",
        ("injected reply loss (%)", "delivery rate"),
        (false, false),
        vec![
            series(&format!("measured, FEC p={p}"), &|r| r["fec"]["delivery_rate"].clone()),
            series(&format!("Theorem 1, p={p}"), &|r| r["fec"]["theorem1"].clone()),
            series("measured, no FEC", &|r| r["no_fec"]["delivery_rate"].clone()),
            series("(1-loss)^d, no FEC", &|r| r["no_fec"]["theorem1"].clone()),
        ],
    )];
    let at10 = rows.iter().find(|r| r["injected_loss"].as_f64().is_some_and(|l| (l - 0.1).abs() < 1e-9));
    let summary = json!({ "data_shards": d, "parity_shards": p, "reply_body_bytes": body_len,
        "delivery_at_10pct_fec": at10.map(|r| r["fec"]["delivery_rate"].clone()),
        "theorem1_at_10pct": nox_fec::recovery_probability(d, p, 0.1),
        "delivery_at_10pct_no_fec": at10.map(|r| r["no_fec"]["delivery_rate"].clone()),
        "requests_per_point": requests, "target": 0.98 });
    let parameters = json!({ "nodes": 9, "layers": 3, "mean_delay_ms": 1.0, "reply_body_bytes": body_len,
        "shard_capacity": capacity, "fec_client": { "loss": 0.1, "target": 0.98, "surbs": surbs },
        "no_fec_client": { "loss": 0.0, "surbs": surbs0 }, "exit_reply_loss_estimate": estimate,
        "exit_reply_target": 0.999, "client_timeout_s": 2, "concurrency": { "fec": 8, "no_fec": 16 },
        "losses": losses, "requests_per_point": requests });
    write_envelope(&args.common, "reply-loss", parameters, json!(rows), summary, charts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theorem_row_compares_with_the_interval() {
        let row = theorem_row(11, 4, 0.1, 197, 200);
        let theory = row["theorem1"].as_f64().unwrap_or(0.0);
        assert!((theory - 0.987).abs() < 0.001, "{theory}");
        assert_eq!(row["theorem1_within_ci95"], true);
        assert_eq!(theorem_row(11, 4, 0.1, 150, 200)["theorem1_within_ci95"], false);
        assert!((theorem_row(11, 0, 0.1, 0, 1)["theorem1"].as_f64().unwrap_or(0.0) - 0.9f64.powi(11)).abs() < 1e-12);
    }

    #[test]
    fn policy_gives_the_reply_shapes_we_report() {
        let capacity = shard_capacity();
        let expected = capacity * 10 + capacity / 2 + 512;
        let fec = ClientConfig { loss: 0.1, target: 0.98, ..ClientConfig::default() };
        assert_eq!(reply_shape(expected, &fec, 0.1), (11, 4, 15));
        assert_eq!(reply_shape(expected, &no_fec(), 0.1), (11, 0, 11));
        assert_eq!(reply_shape(64, &no_fec(), 0.05), (1, 0, 1));
        assert_eq!(reply_shape(64, &ClientConfig::default(), 0.05), (1, 1, 2));
    }
}
