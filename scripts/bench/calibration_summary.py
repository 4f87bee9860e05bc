#!/usr/bin/env python3
"""Simulated vs measured sender entropy and top-1 of the anonymity calibration runs (issue 32).

Reads the `nox bench cover --simulate N` outputs named on the command line (default: the
calibration files of docs/benchmarks/anonymity.md) and writes
bench/data/anonymity-calibration-summary.json: one row per measured phase with its simulated
counterpart, and grouped bar charts (measured vs simulated entropy, and top-1) per file, which
scripts/bench/charts.sh renders. Derived data only: no figure here is not in the input files.

    python3 scripts/bench/calibration_summary.py [bench/data/anonymity-calibration-*.json ...]
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT = [
    "anonymity-calibration-10-40s.json",
    "anonymity-calibration-30-40s.json",
    "anonymity-calibration-10-15s.json",
    "anonymity-calibration-30-15s.json",
    "anonymity-calibration-10-2.75.json",
    "anonymity-calibration-30-2.75.json",
]


def main():
    paths = sys.argv[1:] or [os.path.join(ROOT, "bench", "data", f) for f in DEFAULT]
    rows, charts, machine = [], [], None
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        name = os.path.splitext(os.path.basename(path))[0]
        machine = machine or doc.get("machine")
        cats, measured, simulated, m_top1, s_top1 = [], [], [], [], []
        for r in doc["results"]:
            e, s = r.get("entropy", {}), r.get("simulated") or {}
            if e.get("mean_bits") is None or s.get("mean_bits") is None:
                continue
            cat = f"μ {r['mu_ms']:g} ms, λ_P {r['cover_rate']:g}/s"
            if any(x.get("repeat", 0) > 0 for x in doc["results"]):
                cat += f", phase {r.get('repeat', 0) + 1}"
            cats.append(cat)
            measured.append(e["mean_bits"])
            simulated.append(s["mean_bits"])
            m_top1.append(e["top1_accuracy"])
            s_top1.append(s["top1_accuracy"])
            rows.append({
                "source": os.path.relpath(path, ROOT), "clients": r["clients"], "active": r["active_clients"],
                "mu_ms": r["mu_ms"], "cover_rate": r["cover_rate"], "messages": e["messages"],
                "measured_bits": e["mean_bits"], "simulated_bits": s["mean_bits"],
                "simulated_range_bits": s.get("per_run_bits"),
                "measured_top1": e["top1_accuracy"], "simulated_top1": s["top1_accuracy"],
                "difference_bits": s.get("difference_bits"), "difference_top1": s.get("difference_top1"),
                "within_tolerance": s.get("within_tolerance"),
            })
        clients = doc["results"][0]["clients"] if doc["results"] else "?"
        for metric, m, sim, label in (("entropy", measured, simulated, "mean bits"), ("top1", m_top1, s_top1, "top-1 accuracy")):
            charts.append({
                "file": f"{name}-sim-vs-measured-{metric}", "kind": "bar",
                "title": f"{clients} clients: simulated vs measured {label} ({name})",
                "x_label": "point", "y_label": label,
                "series": [{"label": "testnet (measured)", "x": cats, "y": m},
                           {"label": "simulator (mean of runs)", "x": cats, "y": sim}],
            })
    within = sum(1 for r in rows if r["within_tolerance"])
    out = {
        "experiment": "anonymity-calibration-summary",
        "command": "python3 scripts/bench/calibration_summary.py " + " ".join(os.path.relpath(p, ROOT) for p in paths),
        # The first input's machine (the charts' footer); every input names its own.
        "machine": machine or {},
        "parameters": {"inputs": [os.path.relpath(p, ROOT) for p in paths], "derived": True},
        "results": rows,
        "summary": {"points": len(rows), "within_tolerance": within},
        "charts": charts,
    }
    dest = os.path.join(ROOT, "bench", "data", "anonymity-calibration-summary.json")
    with open(dest, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {os.path.relpath(dest, ROOT)}: {len(rows)} points, {within} within tolerance")


if __name__ == "__main__":
    main()
