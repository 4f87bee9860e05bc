//! `nox bench http-overhead`: an HTTP GET through the mixnet (the exits'
//! HTTP service, `RequestBody::Http`) against the same GET sent directly
//! (plain HTTP/1.1 over loopback from this process) to the same local server.

use std::{sync::Arc, time::Instant};

use nox_client::ClientConfig;
use nox_message::{HttpRequestMsg, HttpResponseMsg, RequestBody};
use serde_json::{Value, json};

use crate::harness::{
    BenchError, CommonArgs, MakeRequest, Net, cdf_series, chart, client, err, quiet_layout, reply_shape, round3,
    run_requests, stats, write_envelope,
};
use nox_testnet::Layout;
use nox_testnet::servers::{bind_loopback, direct_get, http_server_on};

/// Options of `nox bench http-overhead`.
#[derive(clap::Args)]
pub struct HttpOverheadArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Response body sizes, bytes.
    #[arg(long, value_delimiter = ',', default_value = "1024,102400")]
    sizes: Vec<usize>,
    /// Requests per size and path (quick: 20).
    #[arg(long, default_value_t = 200)]
    requests: u64,
}

/// Headroom for the HTTP response's status and headers in the SURB budget.
const HEAD_ROOM: usize = 1024;

/// Runs `nox bench http-overhead`.
pub fn run(args: &HttpOverheadArgs) -> Result<(), BenchError> {
    let requests = if args.common.quick { 20 } else { args.requests };
    // One server per size, bound before the testnet starts: the exits may
    // reach exactly these addresses and nothing else on loopback.
    let listeners = args.sizes.iter().map(|_| bind_loopback().map_err(err)).collect::<Result<Vec<_>, _>>()?;
    let exit_allow = listeners.iter().map(|l| l.local_addr().map_err(err)).collect::<Result<Vec<_>, _>>()?;
    let net = Net::up(&args.common.dir, &Layout { exit_allow, ..quiet_layout(args.common.base_port) })?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let rows = runtime.block_on(async {
        let handle = client(&net.dir, ClientConfig::default()).await?;
        let mut rows = Vec::new();
        for (&size, listener) in args.sizes.iter().zip(listeners) {
            let server = http_server_on(listener, vec![0x42; size]).map_err(err)?;
            let mut direct = Vec::new();
            for _ in 0..requests {
                let started = Instant::now();
                let got = direct_get(server, "/object").await.map_err(err)?;
                if got != size {
                    return Err(err(format!("direct fetch returned {got} bytes, not {size}")));
                }
                direct.push(started.elapsed().as_secs_f64() * 1e3);
            }
            let url = format!("http://{server}/object");
            let make: MakeRequest = Arc::new(move |_| {
                RequestBody::Http(HttpRequestMsg {
                    method: "GET".into(),
                    url: url.clone(),
                    headers: vec![],
                    body: vec![],
                })
            });
            let check = Arc::new(move |b: &[u8]| HttpResponseMsg::decode(b).is_ok_and(|r| r.body.len() == size));
            let _warm = run_requests(&handle, make.clone(), check.clone(), size + HEAD_ROOM, 3, 1).await;
            let mut mixed = run_requests(&handle, make, check, size + HEAD_ROOM, requests, 1).await;
            let direct_stats = stats(&mut direct);
            let mixed_stats = stats(&mut mixed.rtts_ms);
            let ratio = |q: &str| mixed_stats[q].as_f64().zip(direct_stats[q].as_f64()).map(|(m, d)| m / d.max(1e-9));
            let (d, p, surbs) = reply_shape(size + HEAD_ROOM, &ClientConfig::default(), 0.05);
            println!("{size} B: direct {direct_stats} mixnet {mixed_stats}");
            rows.push(
                json!({ "response_bytes": size, "reply_data_shards": d, "reply_parity_shards": p, "surbs": surbs,
                "direct_ms": direct_stats, "mixnet_ms": mixed_stats, "mixnet_failures": mixed.failures,
                "overhead_ratio_p50": ratio("p50"), "overhead_ratio_p90": ratio("p90"),
                "added_ms_p50": mixed_stats["p50"].as_f64().zip(direct_stats["p50"].as_f64()).map(|(m, d)| m - d),
                "direct_samples_ms": direct.iter().map(|v| round3(*v)).collect::<Vec<_>>(),
                "mixnet_samples_ms": mixed.rtts_ms.iter().map(|v| round3(*v)).collect::<Vec<_>>() }),
            );
        }
        Ok::<_, BenchError>(rows)
    })?;
    drop(net);
    let label = |r: &Value| format!("{} B", r["response_bytes"]);
    let bar = |what: &str, q: &str| -> Value {
        json!({ "label": format!("{what} {q}"), "x": rows.iter().map(label).collect::<Vec<_>>(),
            "y": rows.iter().map(|r| r[format!("{what}_ms")][q].clone()).collect::<Vec<_>>() })
    };
    let mut cdfs = Vec::new();
    for row in &rows {
        for what in ["direct", "mixnet"] {
            let samples: Vec<f64> = row[format!("{what}_samples_ms")]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            cdfs.push(cdf_series(&format!("{what}, {}", label(row)), &samples));
        }
    }
    let charts = vec![
        chart(
            "http-overhead-bar",
            "HTTP GET: direct vs through the mixnet (μ = 1 ms)",
            "bar",
            ("response size", "latency (ms)"),
            (false, true),
            vec![bar("direct", "p50"), bar("mixnet", "p50"), bar("direct", "p90"), bar("mixnet", "p90")],
        ),
        chart("http-overhead-cdf", "HTTP GET latency CDF", "cdf", ("latency (ms)", "fraction"), (true, false), cdfs),
    ];
    let summary: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({ "response_bytes": r["response_bytes"], "direct_p50_ms": r["direct_ms"]["p50"],
            "mixnet_p50_ms": r["mixnet_ms"]["p50"], "mixnet_p90_ms": r["mixnet_ms"]["p90"],
            "overhead_ratio_p50": r["overhead_ratio_p50"], "added_ms_p50": r["added_ms_p50"] })
        })
        .collect();
    let parameters = json!({ "nodes": 9, "layers": 3, "mean_delay_ms": 1.0, "sizes": args.sizes,
        "requests_per_point": requests, "sequential": true, "client": "ClientConfig::default (loss 0.05, target 0.99)",
        "server": "local HTTP/1.1 server in the bench process, connection: close" });
    write_envelope(&args.common, "http-overhead", parameters, json!(rows), json!({ "sizes": summary }), charts)
}
