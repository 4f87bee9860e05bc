#!/usr/bin/env bash
# Anonymity and attack benchmarks -> bench/data/{anonymity-*,attacks-*,fec-arq}.json
# Usage: scripts/bench/anonymity.sh [--quick|--full] [--out-dir DIR]
#   --quick (default): CI-sized, about half a minute in total.
#   --full: μ ∈ {0,1,10,50} ms, users {5,20,50}, cover {0,1,2,5}/s, 10 s phases (~3-4 min).
# `nox bench anonymity` starts its own testnets (state in .nox-bench-anonymity,
# ports 23000..) with [observe] on; nothing else should use those ports meanwhile. It runs the
# benchmark build of nox (--features observe,chaos, profile bench-observe), never target/release/nox.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"
mode=--quick
out=bench/data
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=--quick ;;
    --full) mode= ;;
    --out-dir) out="$2"; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
# The benchmark build: nodes need the [observe] timing log, which the default binary does not
# have. A profile of its own keeps it out of target/release (the production binary).
cargo build --profile bench-observe --features observe,chaos -q -p nox
nox="$CARGO_TARGET_DIR/bench-observe/nox"
"$nox" bench anonymity $mode --out-dir "$out"
"$nox" bench attacks $mode --out-dir "$out"
"$nox" bench fec-arq $mode --out-dir "$out"
