//! Ratios, the summary table and the charts of `nox bench streams`.

use super::*;

/// Ratio `a / b` of two JSON numbers, to 3 significant digits (the ratios
/// span 10⁻⁵ to 10⁴).
pub(crate) fn ratio(a: &Value, b: &Value) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 && a > 0.0 => {
            let r = a / b;
            let scale = 10f64.powi(2 - r.log10().floor() as i32);
            json!((r * scale).round() / scale)
        }
        _ => Value::Null,
    }
}

/// The headline figures of one row.
pub(crate) fn pick(r: &Value) -> Value {
    json!({ "connect_answered_p50_ms": r["time_to_first_byte"]["connect_answered_ms"]["p50"],
        "first_byte_p50_ms": r["time_to_first_byte"]["first_byte_ms"]["p50"],
        "first_byte_p90_ms": r["time_to_first_byte"]["first_byte_ms"]["p90"],
        "download_mib_per_s": r["download"]["mib_per_s"],
        "concurrent_aggregate_mib_per_s": r["concurrent"]["aggregate_mib_per_s"],
        "concurrent_per_stream_p50_ms": r["concurrent"]["per_stream_complete_ms"]["p50"],
        "upload_mib_per_s": r["upload"]["mib_per_s"] })
}

/// Row `r`'s headline figures over `base`'s.
pub(crate) fn ratios(r: &Value, base: &Value) -> Value {
    let (r, base) = (pick(r), pick(base));
    let keys = [
        "first_byte_p50_ms",
        "first_byte_p90_ms",
        "download_mib_per_s",
        "concurrent_aggregate_mib_per_s",
        "upload_mib_per_s",
    ];
    Value::Object(keys.iter().map(|k| ((*k).to_owned(), ratio(&r[*k], &base[*k]))).collect())
}

/// The figures of one testnet's rows, and their ratios to the direct row and to cover off.
pub(crate) fn summarize(rows: &[Value]) -> Value {
    let direct = &rows[0];
    let mut out = serde_json::Map::new();
    for (i, row) in rows.iter().enumerate() {
        let mut entry = pick(row);
        if i > 0 {
            entry["ratio_to_direct"] = ratios(row, direct);
        }
        if i > 1 {
            entry["ratio_to_cover_off"] = ratios(row, &rows[1]);
        }
        out.insert(row["configuration"].as_str().unwrap_or("?").to_owned(), entry);
    }
    Value::Object(out)
}

pub(crate) fn charts(rows: &[Value], mean_delay_ms: f64) -> Vec<Value> {
    let bars: Vec<Value> = rows
        .iter()
        .map(|r| {
            let concurrent = format!("{} streams, aggregate", r["concurrent"]["streams"]);
            let points = [
                ("one stream, download".to_owned(), &r["download"]["mib_per_s"]),
                (concurrent, &r["concurrent"]["aggregate_mib_per_s"]),
                ("one stream, upload".to_owned(), &r["upload"]["mib_per_s"]),
            ];
            // A failed measurement has no figure: no bar rather than a zero.
            let (x, y): (Vec<String>, Vec<Value>) =
                points.into_iter().filter(|(_, v)| v.is_number()).map(|(k, v)| (k, v.clone())).unzip();
            json!({ "label": r["configuration"], "x": x, "y": y })
        })
        .collect();
    let cdfs: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut samples: Vec<f64> = r["time_to_first_byte"]["first_byte_samples_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            samples.sort_by(f64::total_cmp);
            cdf_series(r["configuration"].as_str().unwrap_or("?"), &samples)
        })
        .collect();
    vec![
        chart(
            "streams-throughput",
            &format!("SOCKS5 streams: throughput, mixnet (μ = {mean_delay_ms} ms) vs direct loopback"),
            "bar",
            ("transfer", "MiB/s"),
            (false, true),
            bars,
        ),
        chart(
            "streams-ttfb-cdf",
            &format!("SOCKS5 streams: time to first byte of GET /bytes/1024 (μ = {mean_delay_ms} ms)"),
            "cdf",
            ("time to first byte (ms)", "fraction"),
            (true, false),
            cdfs,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(ratio(&json!(0.057), &json!(1154.239)), json!(4.94e-5));
        assert_eq!(ratio(&json!(1087.82), &json!(0.128)), json!(8500.0));
        assert_eq!(ratio(&json!(1.0), &json!(3.0)), json!(0.333));
        assert_eq!(ratio(&json!(1.0), &Value::Null), Value::Null);
    }

    /// The direct path against the real test server: bodies and hashes are
    /// checked, and a wrong expectation is a failure, not a figure.
    #[test]
    fn transfers_are_checked() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let server = http_server_plain_on(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
            let expected = pattern(100_000);
            let t = get(Via::Direct, server, 100_000, &expected).await.unwrap();
            assert!(t.connected_ms <= t.first_byte_ms && t.first_byte_ms <= t.done_ms);
            let mut wrong = expected.clone();
            wrong[500] ^= 1;
            let e = get(Via::Direct, server, 100_000, &wrong).await.err().unwrap();
            assert!(e.contains("byte 500"), "{e}");
            let hash = sha256_hex(&expected);
            post(Via::Direct, server, &expected, &hash).await.unwrap();
            let e = post(Via::Direct, server, &expected[1..], &hash).await.err().unwrap();
            assert!(e.contains("expected"), "{e}");
            let e =
                get(Via::Direct, server, (nox_testnet::servers::MAX_BODY + 1) as usize, &expected).await.err().unwrap();
            assert!(e.contains("400"), "{e}");
        });
    }
}
