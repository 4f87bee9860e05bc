#!/usr/bin/env bash
# Runs every fuzz target for a few seconds from its seed corpus.
# Usage: scripts/fuzz-smoke.sh [seconds-per-target]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-10}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}-fuzz"
targets=$(cargo +nightly fuzz list)
cargo +nightly fuzz build $targets >/dev/null 2>&1 || cargo +nightly fuzz build
for target in $targets; do
  mkdir -p "corpus/$target"
  # Work on a copy so the committed seed corpus does not grow.
  work=$(mktemp -d)
  cp -r "corpus/$target/." "$work/" 2>/dev/null || true
  log=$(mktemp)
  status=0
  cargo +nightly fuzz run "$target" "$work" -- -max_total_time="$seconds" -rss_limit_mb=2048 >"$log" 2>&1 || status=$?
  echo "fuzz $target (${seconds}s): $(grep -E '^Done' "$log" || echo 'no summary')"
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz target $target failed" >&2
    exit "$status"
  fi
  rm -f "$log"
done
