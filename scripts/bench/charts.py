#!/usr/bin/env python3
"""Render every chart described in bench/data/*.json.

Usage (from anywhere; prefer scripts/bench/charts.sh, which sets up the
pinned virtualenv bench/.venv first):

    bench/.venv/bin/python scripts/bench/charts.py [--data bench/data] [--out docs/benchmarks/charts]

Each `nox bench <experiment>` writes `bench/data/<experiment>.json` with a
`charts` list:

    {"file": "<name>-<suffix>", "title": ..., "kind": "line"|"cdf"|"bar",
     "x_label": ..., "y_label": ..., "log_x": false, "log_y": false,
     "series": [{"label": ..., "x": [...], "y": [...]}]}

and this script writes docs/benchmarks/charts/<file>.png and .svg with a
footer naming the commit, CPU model and time of the measurement (from the
file's `machine`). Files written before the envelope existed (sphinx.json,
network.json, fec_curve.json) have no `charts`; the adapters below derive
charts from their fields.

kind "cdf": a series with only `x` is a sample; its empirical CDF is drawn.
A series with `x` and `y` is drawn as given (a precomputed CDF).
kind "bar": `x` holds category names, `y` values; several series are grouped.
Optional series keys: "style" ("-", "--", ":"), "marker".
"""

import argparse
import datetime
import glob
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("charts.py: matplotlib is missing; run scripts/bench/charts.sh (creates bench/.venv from scripts/bench/requirements.txt)")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Byte-stable output: no dates in the files, fixed SVG ids.
plt.rcParams.update({"svg.hashsalt": "nox-bench", "font.size": 10, "figure.dpi": 100})


# Line series with at most this many points get a marker on each point unless they name one.
FEW_POINTS = 30


def footer_text(doc, path):
    m = doc.get("machine") or {}
    commit = (m.get("git_commit") or "unknown")[:12]
    if m.get("git_dirty"):
        commit += " (dirty tree)"
    cpu = m.get("cpu_model") or "unknown CPU"
    cpus = m.get("logical_cpus")
    if cpus:
        cpu += f", {cpus} logical CPUs"
    ts = m.get("timestamp_unix")
    when = datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if ts else "unknown time"
    load = m.get("load_average")
    load = f" · load {' '.join(load.split()[:3])}" if load else ""
    return f"{os.path.relpath(path, ROOT)} · commit {commit} · {cpu} · {when}{load}"


# ---------------------------------------------------------------- adapters


def legacy_charts(doc, name):
    """Charts for result files that predate the `charts` field."""
    kind = doc.get("kind")
    if kind == "criterion-report":
        charts = []
        groups = {}
        for r in doc.get("results", []):
            groups.setdefault(r["group"], []).append(r)
        titles = {
            "per_hop": ("Sphinx forward hop and its steps (32 KiB packet)", "per-hop"),
            "create": ("Client side: packet, SURB and PoW costs", "create"),
            "schemes": ("Sphinx per scheme: hop, 3-hop creation, KEM (32 KiB)", "schemes"),
        }
        for group, rows in sorted(groups.items()):
            title, suffix = titles.get(group, (f"Criterion group {group}", group))
            rows = sorted(rows, key=lambda r: r["median_ns"])
            charts.append({
                "file": f"{name}-{suffix}", "title": title, "kind": "bar",
                "x_label": "benchmark", "y_label": "median time (µs), Criterion", "log_y": group == "create",
                "series": [{"label": "NOX (this machine)", "x": [r["benchmark"] for r in rows],
                            "y": [r["median_ns"] / 1000 for r in rows]}],
            })
        return charts
    if kind == "testnet-network":
        rates = doc.get("rates", [])
        offered = [r["offered_rate"] for r in rates]
        # Files of before the μ option was recorded ran at the testnet's 1 ms.
        mu = (doc.get("parameters") or {}).get("mean_delay_ms", 1)
        charts = [{
            "file": f"{name}-throughput", "title": "Testnet throughput: delivered vs offered (9 nodes, 3 hops)",
            "kind": "line", "x_label": "offered rate (packets/s)", "y_label": "delivered rate (packets/s)",
            "series": [
                {"label": "delivered", "x": offered, "y": [r["delivered_rate"] for r in rates], "marker": "o"},
                {"label": "ideal (delivered = offered)", "x": offered, "y": offered, "style": ":"},
            ],
        }, {
            "file": f"{name}-latency-percentiles", "title": f"Testnet one-way latency vs offered rate (μ = {mu:g} ms/hop)",
            "kind": "line", "x_label": "offered rate (packets/s)", "y_label": "latency (ms)",
            "series": [
                {"label": q, "x": offered, "y": [r["latency_ms"][q] for r in rates], "marker": "o"}
                for q in ("p50", "p90", "p99")
            ],
        }, {
            "file": f"{name}-latency-cdf", "title": "Testnet one-way latency CDF (client send → exit delivery)",
            "kind": "cdf", "x_label": "latency (ms)", "y_label": "fraction of packets",
            "series": [{"label": f"{r['offered_rate']:.0f} packets/s", "x": r.get("latency_samples_ms", [])} for r in rates],
        }]
        # Over-delayed fraction and queue depth: only files that recorded them (session 24 on).
        timed = [r for r in rates if (r.get("over_delayed") or {}).get("fraction") is not None]
        if timed:
            charts.append({
                "file": f"{name}-over-delayed",
                "title": f"Hops whose processing outlasted the drawn delay (μ = {mu:g} ms/hop)",
                "kind": "line", "x_label": "offered rate (packets/s)", "y_label": "over-delayed fraction of hops",
                "series": [{"label": "over-delayed", "x": [r["offered_rate"] for r in timed],
                            "y": [r["over_delayed"]["fraction"] for r in timed], "marker": "o"}],
            })
        queued = [r for r in rates if ((r.get("queue_depth") or {}).get("all_nodes") or {}).get("samples")]
        if queued:
            x = [r["offered_rate"] for r in queued]
            gauge = lambda r, g, q: r["queue_depth"]["all_nodes"][g][q]
            charts.append({
                "file": f"{name}-queue-depth",
                "title": f"Queue depth per node, 100 ms samples (μ = {mu:g} ms/hop)",
                "kind": "line", "x_label": "offered rate (packets/s)", "y_label": "packets",
                "series": [
                    {"label": f"{g.replace('_', ' ')} {q}", "x": x, "y": [gauge(r, g, q) for r in queued],
                     "marker": "o", "style": "-" if g == "mixer_held" else "--"}
                    for g in ("mixer_held", "worker_queue") for q in ("mean", "p99", "max")
                ],
            })
        return charts
    if kind == "fec-recovery-curve":
        curve = doc.get("curve", {})
        points = curve.get("points", [])
        d = curve.get("data_shards")
        by_ratio = {}
        for p in points:
            by_ratio.setdefault(p["ratio_per_mille"], []).append(p)
        series = []
        first = by_ratio.get(0) or next(iter(by_ratio.values()), [])
        series.append({"label": "no FEC", "x": [p["loss"] for p in first], "y": [p["without_fec"] for p in first],
                       "style": ":", "marker": "x"})
        for ratio, ps in sorted(by_ratio.items()):
            if ratio == 0:
                continue
            ps = sorted(ps, key=lambda p: p["loss"])
            series.append({"label": f"r = {ratio / 1000:g} (p = {ps[0]['parity_shards']}), simulated",
                           "x": [p["loss"] for p in ps], "y": [p["simulated"] for p in ps], "marker": "o"})
        return [{
            "file": f"{name}-recovery", "title": f"FEC recovery: reply delivered vs shard loss (d = {d})",
            "kind": "line", "x_label": "shard loss rate", "y_label": "P(reply recovered)", "series": series,
        }]
    return []


# ---------------------------------------------------------------- rendering


def render(chart, doc, path, out_dir):
    kind = chart.get("kind", "line")
    fig, ax = plt.subplots(figsize=(8, 5))
    series = chart.get("series") or []
    if not series:
        raise ValueError("no series")
    if kind == "bar":
        cats = []
        for s in series:
            for c in s["x"]:
                if str(c) not in cats:
                    cats.append(str(c))
        height = 0.8 / len(series)
        fig.set_size_inches(8, max(3.0, 0.35 * len(cats) * max(1, len(series) / 2) + 1.5))
        for i, s in enumerate(series):
            values = dict(zip(map(str, s["x"]), s["y"]))
            ys = [j + (i - (len(series) - 1) / 2) * height for j in range(len(cats))]
            vals = [values.get(c, 0) for c in cats]
            bars = ax.barh(ys, vals, height=height, label=s.get("label"))
            ax.bar_label(bars, labels=[f"{v:,.3g}" if v else "" for v in vals], padding=2, fontsize=8)
        ax.set_yticks(range(len(cats)))
        ax.set_yticklabels(cats, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(chart.get("y_label", ""))
        ax.set_ylabel(chart.get("x_label", ""))
        if chart.get("log_y") or chart.get("log_x"):
            ax.set_xscale("log")
        ax.margins(x=0.15)
    else:
        for s in series:
            x = list(s.get("x") or [])
            y = list(s.get("y") or [])
            style = s.get("style", "-")
            if kind == "cdf" and not y:
                if not x:
                    continue
                x = sorted(x)
                y = [(i + 1) / len(x) for i in range(len(x))]
                ax.step(x, y, where="post", linestyle=style, label=f"{s.get('label', '')} (n = {len(x)})")
            elif kind == "cdf":
                ax.step(x, y, where="post", linestyle=style, label=s.get("label"))
            else:
                # A line through few measured points shows them (the line between is not data).
                marker = s.get("marker") or ("o" if len(x) <= FEW_POINTS else None)
                ax.plot(x, y, linestyle=style, marker=marker, markersize=4, label=s.get("label"))
        ax.set_xlabel(chart.get("x_label", ""))
        ax.set_ylabel(chart.get("y_label", ""))
        if chart.get("log_x"):
            ax.set_xscale("log")
        if chart.get("log_y"):
            ax.set_yscale("log")
        if kind == "cdf":
            ax.set_ylim(0, 1.01)
        ax.grid(True, which="both", alpha=0.3)
    ax.set_title(chart.get("title", chart["file"]))
    if any(s.get("label") for s in series):
        ax.legend(fontsize=8, loc="best")
    fig.text(0.01, 0.005, footer_text(doc, path), fontsize=6.5, color="#555555", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    base = os.path.join(out_dir, chart["file"])
    fig.savefig(base + ".png", dpi=120, metadata={"Software": None})
    fig.savefig(base + ".svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return base


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "charts"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    written, errors, skipped = [], [], []
    for path in sorted(glob.glob(os.path.join(args.data, "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            errors.append(f"{path}: unreadable JSON: {e}")
            continue
        charts = doc.get("charts")
        source = "charts"
        if not charts:
            charts = legacy_charts(doc, name)
            source = "adapter"
        if not charts:
            skipped.append(f"{os.path.basename(path)}: no `charts` field and no adapter for kind {doc.get('kind')!r}")
            continue
        for chart in charts:
            try:
                base = render(chart, doc, path, args.out)
                written.append((os.path.relpath(base, ROOT), os.path.basename(path), source))
            except Exception as e:  # one bad chart must not hide the others
                errors.append(f"{path}: chart {chart.get('file')!r}: {type(e).__name__}: {e}")
    # Across the μ sweep (bench/data/network-mu<μ>.json, docs/benchmarks/network.md): one series per μ.
    sweep = []
    for path in sorted(glob.glob(os.path.join(args.data, "network-mu*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue  # already reported above
        rates = [r for r in doc.get("rates", []) if (r.get("over_delayed") or {}).get("fraction") is not None]
        if rates:
            sweep.append(((doc.get("parameters") or {}).get("mean_delay_ms", 1), rates, doc))
    if len(sweep) > 1:
        sweep.sort(key=lambda t: t[0])
        doc = sweep[0][2]  # the footer names the first run's commit and machine
        for chart in ({
            "file": "network-mu-over-delayed", "title": "Over-delayed fraction of hops vs offered rate, per μ",
            "kind": "line", "x_label": "offered rate (packets/s)", "y_label": "over-delayed fraction of hops",
            "series": [{"label": f"μ = {mu:g} ms", "x": [r["offered_rate"] for r in rs],
                        "y": [r["over_delayed"]["fraction"] for r in rs], "marker": "o"} for mu, rs, _ in sweep],
        }, {
            "file": "network-mu-latency-p50", "title": "One-way latency p50 vs offered rate, per μ",
            "kind": "line", "x_label": "offered rate (packets/s)", "y_label": "latency p50 (ms)", "log_y": True,
            "series": [{"label": f"μ = {mu:g} ms", "x": [r["offered_rate"] for r in rs],
                        "y": [r["latency_ms"]["p50"] for r in rs], "marker": "o"} for mu, rs, _ in sweep],
        }):
            try:
                base = render(chart, doc, os.path.join(args.data, "network-mu*.json"), args.out)
                written.append((os.path.relpath(base, ROOT), "network-mu*.json", "sweep"))
            except Exception as e:
                errors.append(f"network-mu*.json: chart {chart['file']!r}: {type(e).__name__}: {e}")
    for base, src, how in written:
        print(f"  {base}.png/.svg  <- {src} ({how})")
    for s in skipped:
        print(f"  skipped {s}")
    for e in errors:
        print(f"  ERROR {e}", file=sys.stderr)
    print(f"charts.py: {len(written)} charts written to {os.path.relpath(args.out, ROOT)}, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
