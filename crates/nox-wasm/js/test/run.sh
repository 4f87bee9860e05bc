#!/usr/bin/env bash
# Builds the nox-wasm module (wasm32-unknown-unknown, release) and the native
# peer (wasm_peer example), then runs the Node cross-checks. Used by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --locked --release --target wasm32-unknown-unknown -p nox-wasm --lib
# --workspace: features resolved as `cargo test --workspace` resolves them, so after
# that step (which builds every example) this is a no-op instead of a rebuild.
cargo build --locked --workspace --example wasm_peer --example prover_peer
NOX_WASM="$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/nox_wasm.wasm" \
NOX_WASM_PEER="$CARGO_TARGET_DIR/debug/examples/wasm_peer" \
NOX_PROVER_PEER="$CARGO_TARGET_DIR/debug/examples/prover_peer" \
  node --test crates/nox-wasm/js/test/nox_wasm.test.mjs crates/nox-wasm/js/test/prover.test.mjs
