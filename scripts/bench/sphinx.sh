#!/usr/bin/env bash
# Sphinx micro-benchmarks -> bench/data/sphinx.json (medians, machine, commit).
# Usage: scripts/bench/sphinx.sh [criterion args, e.g. --measurement-time 3]
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"
args=("$@")
start=$(date +%s)
cargo bench -p nox-sphinx --bench sphinx -- "${args[@]}"
# The report needs any build of `nox`: run_all.sh passes its benchmark binary (NOX_BIN) so the
# suite does not build the release profile of the whole workspace once more.
if [ -n "${NOX_BIN:-}" ]; then nox=("$NOX_BIN"); else nox=(cargo run --release -q -p nox --); fi
"${nox[@]}" bench criterion-report \
  --criterion-dir "$CARGO_TARGET_DIR/criterion" --groups per_hop,create,schemes \
  --command "scripts/bench/sphinx.sh ${args[*]}" --since-unix "$start" --out bench/data/sphinx.json
