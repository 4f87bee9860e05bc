#!/usr/bin/env bash
# Runs every fuzz target for a few seconds from its seed corpus.
# Usage: scripts/fuzz-smoke.sh [seconds-per-target]
#
# Short runs (under 60 s a target, e.g. the 3 s of scripts/test.sh) build with 16 codegen units
# per crate: cargo-fuzz's release default is 1 (faster fuzzing: more inlining under the sanitizer
# coverage passes), which serialises the compile of every instrumented crate; a smoke run's claim
# (each harness builds with AddressSanitizer and coverage, loads its corpus and runs) does not
# need the faster execution (docs/ci.md, session 29). From 60 s a target, and in
# scripts/fuzz-campaign.sh, cargo-fuzz's default is kept. NOX_FUZZ_CODEGEN_UNITS overrides.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-10}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}-fuzz"
if [ "$seconds" -lt 60 ]; then cgu="${NOX_FUZZ_CODEGEN_UNITS:-16}"; else cgu="${NOX_FUZZ_CODEGEN_UNITS:-}"; fi
# The same build options for `build` and every `run`, so no run rebuilds anything.
build_opts=()
if [ -n "$cgu" ]; then build_opts=(--codegen-units "$cgu"); fi
targets=$(cargo +nightly fuzz list)
# No target named: cargo fuzz builds them all, in one cargo invocation.
cargo +nightly fuzz build ${build_opts[@]+"${build_opts[@]}"}
for target in $targets; do
  mkdir -p "corpus/$target"
  # Work on a copy so the committed seed corpus does not grow.
  work=$(mktemp -d)
  cp -r "corpus/$target/." "$work/" 2>/dev/null || true
  log=$(mktemp)
  status=0
  cargo +nightly fuzz run ${build_opts[@]+"${build_opts[@]}"} "$target" "$work" -- -max_total_time="$seconds" -rss_limit_mb=2048 >"$log" 2>&1 || status=$?
  echo "fuzz $target (${seconds}s): $(grep -E '^Done' "$log" || echo 'no summary')"
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz target $target failed" >&2
    exit "$status"
  fi
  rm -f "$log"
done
