#!/usr/bin/env bash
# The example dapps end to end: packs the SDK (npm pack runs its build and copies the module into
# dist/), installs the tarball into each example, builds them, and runs test.mjs (headless Chromium,
# https:// pages, a `nox testnet up --tls` network with Anvil). Needs the nox binary and the module as
# sdk/ts's tests do (NOX_BIN, NOX_WASM or CARGO_TARGET_DIR), the prover_peer example for the Vite
# page's split proof (NOX_PROVER_PEER, default <target>/debug/examples/prover_peer:
# `cargo build -p nox-wasm --examples`), and the npm registry for vite.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pack="$(mktemp -d)"
trap 'rm -rf "$pack"' EXIT
(cd "$here/../ts" && npm pack --pack-destination "$pack" >/dev/null 2>"$pack/pack.log") || { cat "$pack/pack.log"; exit 1; }
tarball="$(ls "$pack"/nox-mixnet-sdk-*.tgz)"
for app in plain vite; do
  (cd "$here/$app" && npm install --no-audit --no-fund --no-save "$tarball" >/dev/null && npm run --silent build >/dev/null)
done
cd "$here" && node --test --test-concurrency=1 test.mjs
