#!/usr/bin/env bash
# CI performance regression gate: instruction counts under callgrind, not
# wall time (a shared, noisy 2-core machine moves wall time by 10-20 %;
# instruction counts of a fixed-seed workload move by well under 1 %).
#
#   scripts/bench/regression.sh            compare with bench/baseline.json
#   scripts/bench/regression.sh --update   measure and rewrite the baseline
#   scripts/bench/regression.sh --update W...  measure only workloads W and
#                                          merge them into the baseline (the
#                                          other entries stay unchanged)
#
# Each workload of `nox-gate` (crates/nox-gate: the same code as `nox bench
# hop-instructions`, in a binary of only the pure crates it touches) runs twice
# under `valgrind --tool=callgrind`, with --count N and --count 0; the
# difference divided by N is the instruction count of one operation (process
# start-up and set-up cancel out). The gate fails if any operation costs more
# than baseline x (1 + NOX_GATE_THRESHOLD), default 0.05 (5 %). The binary is
# the cargo profile bench-quick's (NOX_GATE_PROFILE), the baseline's profile;
# the baseline also names its binary, and one of another binary is refused.
# Docs: docs/benchmarks/README.md, "Regression gate"; docs/ci.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"

mode=check
only=""
case "${1:-}" in
  "") ;;
  --update) mode=update; shift; only="$*" ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--update [WORKLOAD...]]" >&2; exit 2 ;;
esac
threshold="${NOX_GATE_THRESHOLD:-0.05}"
baseline=bench/baseline.json

if ! command -v valgrind >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "regression gate: valgrind missing, installing it with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
  else
    echo "regression gate FAILED: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
  fi
fi

# Always the same build, so the counts compare: `nox-gate` (crates/nox-gate) in the cargo profile
# bench-quick (release optimisation with 16 codegen units, no cross-crate LTO, no debug
# information). Until session 30 the gate measured the whole `nox` binary (`nox bench
# hop-instructions`, `--features observe,chaos`), whose cold build cost CI ~1,300 s beside the
# tests; nox-gate links only nox-sphinx, nox-fec, nox-link's pure core, nox-relay, nox-mixing and
# nox-replay (docs/ci.md, session 30). The baseline names the profile and the binary it was
# recorded on, and a baseline of another one is refused (their counts do not compare).
# NOX_GATE_PROFILE=bench-observe measures the publication profile instead (for a comparison).
profile="${NOX_GATE_PROFILE:-bench-quick}"
binary=nox-gate
echo "regression gate: building the gate's binary (cargo build --profile $profile -p nox-gate)"
cargo build --profile "$profile" --locked -q -p nox-gate
bin="$CARGO_TARGET_DIR/$profile/$binary"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# workload and N (operations counted); kept small so the gate takes ~1 minute.
# packet-3-hops: one packet end to end (client build, then per hop link
# seal + open, admit, process, record, mixer insert + pop): the gate on
# end-to-end per-packet CPU, i.e. on throughput, in instructions.
workloads="sphinx-hop:20 sphinx-create:10 fec-encode:6 fec-decode:6 packet-3-hops:5"
if [ -n "$only" ]; then
  selected=""
  for item in $workloads; do
    for name in $only; do
      [ "${item%%:*}" = "$name" ] && selected="$selected $item"
    done
  done
  [ -n "$selected" ] || { echo "regression gate: no workload named: $only" >&2; exit 2; }
  workloads=$selected
fi

count_instructions() { # workload count -> total instructions (Ir) of the run
  local out="$work/$1.$2.cg"
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" \
      --workload "$1" --count "$2" >"$work/$1.$2.log" 2>&1; then
    echo "regression gate FAILED: the workload $1 (count $2) did not run under valgrind:" >&2
    tail -20 "$work/$1.$2.log" >&2
    exit 1
  fi
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

: >"$work/measured.tsv"
for item in $workloads; do
  name=${item%%:*}
  n=${item##*:}
  zero=$(count_instructions "$name" 0)
  full=$(count_instructions "$name" "$n")
  printf '%s\t%s\t%s\t%s\n' "$name" "$n" "$zero" "$full" >>"$work/measured.tsv"
done

python3 - "$mode" "$threshold" "$baseline" "$work/measured.tsv" "$(valgrind --version)" "$only" "$profile" "$binary" <<'PY'
import json, os, platform, subprocess, sys, time
mode, threshold, baseline_path, measured_path, valgrind, only, profile, binary = sys.argv[1:9]
threshold = float(threshold)
measured = {}
for line in open(measured_path):
    name, n, zero, full = line.split()
    measured[name] = {"count": int(n), "instructions_per_op": (int(full) - int(zero)) // int(n)}

def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None

def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return None

def baseline_profile(doc):
    # Baselines before session 29 carry no profile: they were recorded on bench-observe.
    return doc.get("machine", {}).get("cargo_profile", "bench-observe")

def baseline_binary(doc):
    # Baselines before session 30 carry no binary: they were recorded on `nox bench hop-instructions`.
    return doc.get("machine", {}).get("binary", "nox")

def refuse_other_build(doc, what):
    if baseline_profile(doc) != profile or baseline_binary(doc) != binary:
        print(f"regression gate{what}: {baseline_path} was recorded on {baseline_binary(doc)} "
              f"(cargo profile {baseline_profile(doc)}), this build is {binary} ({profile}); their "
              f"instruction counts do not compare. Record a baseline on this build "
              f"(scripts/bench/regression.sh --update with no workload)", file=sys.stderr)
        sys.exit(1)

if mode == "update" and only:
    # Partial update: merge the measured workloads, keep every other entry
    # and the machine block; each merged entry records where it was measured.
    doc = json.load(open(baseline_path))
    refuse_other_build(doc, " (a partial update would mix two builds)")
    for name, m in measured.items():
        m["measured_at"] = {"git_commit": git("rev-parse", "HEAD"), "timestamp_unix": int(time.time()),
                            "valgrind": valgrind}
        doc["workloads"][name] = m
        print(f"  {name:<14} {m['instructions_per_op']:>14,} instructions/op")
    with open(baseline_path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"regression gate: merged {', '.join(measured)} into {baseline_path}")
    sys.exit(0)

if mode == "update":
    doc = {
        "what": "instructions per operation (callgrind Ir), scripts/bench/regression.sh",
        "threshold": threshold,
        "machine": {"cpu_model": cpu_model(), "valgrind": valgrind,
                    "rustc": subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.strip(),
                    "cargo_profile": profile, "binary": binary,
                    "git_commit": git("rev-parse", "HEAD"), "timestamp_unix": int(time.time())},
        "workloads": measured,
    }
    with open(baseline_path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    for name, m in measured.items():
        print(f"  {name:<14} {m['instructions_per_op']:>14,} instructions/op")
    print(f"regression gate: wrote {baseline_path}")
    sys.exit(0)

if not os.path.exists(baseline_path):
    print(f"regression gate FAILED: no baseline {baseline_path}; create it with scripts/bench/regression.sh --update", file=sys.stderr)
    sys.exit(1)
base_doc = json.load(open(baseline_path))
refuse_other_build(base_doc, " FAILED")
base = base_doc["workloads"]
failures = []
print(f"\n{'workload':<14} {'baseline':>14} {'measured':>14} {'change':>8}  limit +{threshold*100:.1f} %")
for name, m in measured.items():
    if name not in base:
        failures.append(f"{name}: not in the baseline (run --update)")
        print(f"{name:<14} {'-':>14} {m['instructions_per_op']:>14,} {'':>8}  NEW")
        continue
    b = base[name]["instructions_per_op"]
    change = m["instructions_per_op"] / b - 1
    verdict = "ok"
    if change > threshold:
        verdict = "REGRESSION"
        failures.append(f"{name}: {m['instructions_per_op']:,} instructions/op vs baseline {b:,} (+{change*100:.1f} % > +{threshold*100:.1f} %)")
    elif change < -threshold:
        verdict = "faster: consider --update"
    print(f"{name:<14} {b:>14,} {m['instructions_per_op']:>14,} {change*100:>+7.2f}%  {verdict}")
if failures:
    print("\nregression gate FAILED:", file=sys.stderr)
    for f in failures:
        print("  " + f, file=sys.stderr)
    print("If the slow-down is intended, rewrite the baseline: scripts/bench/regression.sh --update", file=sys.stderr)
    sys.exit(1)
print("\nregression gate: ok")
PY
