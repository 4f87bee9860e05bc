#!/usr/bin/env bash
# Runs the network experiments on the multi-process testnet and writes one
# JSON file each under bench/data/ (see docs/benchmarks/network.md).
#
#   scripts/bench/network.sh            # full sizes (a few minutes on 2 cores)
#   scripts/bench/network.sh --quick    # CI sizes (about a minute)
#   scripts/bench/network.sh --quick surb-rtt reply-loss   # a subset
set -euo pipefail
cd "$(dirname "$0")/../.."

mode=()
if [[ "${1:-}" == "--quick" ]]; then
    mode=(--quick)
    shift
fi
experiments=("$@")
if [[ ${#experiments[@]} -eq 0 ]]; then
    experiments=(surb-rtt reply-loss http-overhead latency-vs-delay concurrency scaling)
fi

cargo build --release -p nox
nox="${CARGO_TARGET_DIR:-target}/release/nox"
for experiment in "${experiments[@]}"; do
    echo "== nox bench $experiment ${mode[*]:-} (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
    "$nox" bench "$experiment" "${mode[@]}"
done
