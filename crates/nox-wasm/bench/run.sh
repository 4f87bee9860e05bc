#!/usr/bin/env bash
# WASM (Node, and headless Chromium if installed) vs native Sphinx benchmark,
# in one run (docs/benchmarks/wasm.md).
#   bash crates/nox-wasm/bench/run.sh [seconds per operation, default 2] [output json]
# CHROMIUM=<binary> picks the browser (default: `chromium` on PATH; CHROMIUM= to skip it).
set -euo pipefail
cd "$(dirname "$0")/../../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"
seconds="${1:-2}"
out="${2:-bench/data/wasm.json}"
chromium="${CHROMIUM-$(command -v chromium || true)}"
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --locked --release --target wasm32-unknown-unknown -p nox-wasm --lib
cargo build --locked --release -p nox-wasm --example wasm_peer
node crates/nox-wasm/bench/bench.mjs \
  --wasm "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/nox_wasm.wasm" \
  --peer "$CARGO_TARGET_DIR/release/examples/wasm_peer" \
  --seconds "$seconds" --rounds "${ROUNDS:-3}" --out "$out" ${chromium:+--chromium "$chromium"}
