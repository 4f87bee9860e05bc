#!/usr/bin/env bash
# The transfer prover in WebAssembly (Node, the SDK's Worker in Node, the Worker in headless
# Chromium) against native, in one run: docs/benchmarks/wasm.md, "The transfer prover".
#   bash scripts/bench/wasm-prover.sh [proofs, default 3] [output json, default bench/data/wasm-prover.json] [workers, default 1,2]
# Workers: the SDK prover's Worker counts measured in the same run (Node and Chromium; issue 31).
# CHROMIUM=<binary> picks the browser (default /usr/bin/chromium if present; CHROMIUM= to skip it).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"
proofs="${1:-3}"
out="${2:-bench/data/wasm-prover.json}"
workers="${3:-1,2}"
echo "uptime before: $(uptime)" >&2
chromium="${CHROMIUM-$( [ -x /usr/bin/chromium ] && echo /usr/bin/chromium || true)}"
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --locked --release --target wasm32-unknown-unknown -p nox-wasm --lib
cargo build --locked --release -p nox-wasm --example prover_peer
npm run build --prefix sdk/ts >/dev/null
node sdk/ts/bench/prover.mjs \
  --wasm "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/nox_wasm.wasm" \
  --peer "$CARGO_TARGET_DIR/release/examples/prover_peer" \
  --proofs "$proofs" --workers "$workers" --out "$out" ${chromium:+--chromium "$chromium"}
echo "uptime after: $(uptime)" >&2
