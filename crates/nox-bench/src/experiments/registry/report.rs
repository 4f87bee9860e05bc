//! The summary table and charts of `nox bench registry`, relative to the smallest registry.

use super::*;

pub(crate) fn summarise(results: &[Value]) -> Value {
    let Some(base) = results.first() else { return json!({}) };
    let get = |r: &Value, path: &[&str]| path.iter().fold(r, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN);
    let ratio = |r: &Value, path: &[&str]| round3(get(r, path) / get(base, path));
    let rows: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({
                "nodes": r["nodes"],
                "refresh_rpc_calls": r["rpc"]["refresh"]["calls"],
                "refresh_bytes": r["rpc"]["refresh"]["total_bytes"],
                "refresh_p50_ms": r["time_ms"]["refresh"]["p50"],
                "refresh_p95_ms": r["time_ms"]["refresh"]["p95"],
                "snapshot_at_p50_ms": r["time_ms"]["snapshot_at"]["p50"],
                "local_verification_p50_ms": r["time_ms"]["local_verification"]["p50"],
                "topology_verify_p50_ms": r["time_ms"]["topology_document_verify"]["p50"],
                "registration_s": r["registration"]["seconds"],
                "gas_fingerprint": r["gas"]["fingerprint"],
                "gas_nodes_page_all": r["gas"]["nodes_page_all"],
                "refresh_us_per_node": r["per_node"]["refresh_us"],
                "bytes_per_node": r["per_node"]["refresh_bytes"],
                "relative_to_smallest": {
                    "nodes": ratio(r, &["nodes"]),
                    "rpc_calls": ratio(r, &["rpc", "refresh", "calls"]),
                    "bytes": ratio(r, &["rpc", "refresh", "total_bytes"]),
                    "refresh_time": ratio(r, &["time_ms", "refresh", "p50"]),
                    "local_verification_time": ratio(r, &["time_ms", "local_verification", "p50"]),
                    "topology_verify_time": ratio(r, &["time_ms", "topology_document_verify", "p50"]),
                    "gas_fingerprint": ratio(r, &["gas", "fingerprint"]),
                },
            })
        })
        .collect();
    json!({ "baseline_nodes": base["nodes"], "rows": rows })
}

pub(crate) fn charts(results: &[Value]) -> Vec<Value> {
    let xs: Vec<f64> = results.iter().map(|r| r["nodes"].as_f64().unwrap_or(f64::NAN)).collect();
    let col = |path: &[&str]| -> Vec<f64> {
        results.iter().map(|r| path.iter().fold(r, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)).collect()
    };
    let s = |label: &str, y: Vec<f64>| json!({ "label": label, "x": xs, "y": y, "marker": "o" });
    let bytes_kib: Vec<f64> = col(&["rpc", "refresh", "total_bytes"]).iter().map(|b| round3(b / 1024.0)).collect();
    vec![
        chart(
            "registry-time",
            "Topology refresh from the registry: time vs registered nodes",
            "line",
            ("registered nodes", "time (ms)"),
            (true, true),
            vec![
                s("RegistryView::refresh, p50 (RPC + verify)", col(&["time_ms", "refresh", "p50"])),
                s("RegistryView::refresh, p95", col(&["time_ms", "refresh", "p95"])),
                s("local fingerprint + membership, p50", col(&["time_ms", "local_verification", "p50"])),
                s(
                    "topology document verify (Trust::Registry), p50",
                    col(&["time_ms", "topology_document_verify", "p50"]),
                ),
            ],
        ),
        chart(
            "registry-rpc",
            "Topology refresh from the registry: RPC calls and bytes",
            "line",
            ("registered nodes", "count / KiB"),
            (true, true),
            vec![
                s("JSON-RPC calls per refresh", col(&["rpc", "refresh", "calls"])),
                s("KiB per refresh (HTTP, both ways)", bytes_kib),
            ],
        ),
        chart(
            "registry-gas",
            "eth_call gas of the registry views (eth_estimateGas)",
            "line",
            ("registered nodes", "gas"),
            (true, true),
            vec![
                s("fingerprint()", col(&["gas", "fingerprint"])),
                s("registryState()", col(&["gas", "registry_state"])),
                s("nodesPage(0, N): whole list in one call", col(&["gas", "nodes_page_all"])),
            ],
        ),
    ]
}
