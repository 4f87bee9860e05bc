#!/usr/bin/env bash
# The relayer under a flood of forged and simulate-only bundles, honest quotes measured with and
# without it (issue 29 item 5) -> bench/data/relayer-flood.json; docs/benchmarks/defi.md.
# Usage: scripts/bench/relayer-flood.sh [--quick] [--seconds N] [--flooders N]
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"
cargo run --release -q -p nox -- bench relayer-flood "$@"
