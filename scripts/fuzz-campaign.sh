#!/usr/bin/env bash
# A fuzzing campaign: every fuzz target for a fixed number of executions (10^6 by default),
# one after another, from its seed corpus. Not part of CI (it takes about an hour on 2 cores);
# results are recorded in fuzz/README.md. A crash stops nothing: every target runs, the
# summary names the ones that failed and the script exits non-zero.
# Usage: scripts/fuzz-campaign.sh [executions-per-target] [target ...]
set -uo pipefail
cd "$(dirname "$0")/../fuzz"
runs="${1:-1000000}"
shift || true
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}-fuzz"
targets="${*:-$(cargo +nightly fuzz list)}"
cargo +nightly fuzz build $targets >/dev/null 2>&1 || cargo +nightly fuzz build || exit 1
failed=""
printf '%-20s %12s %8s %6s %7s  %s\n' target executions seconds cov corpus result
for target in $targets; do
  # Work on a copy so the committed seed corpus does not grow; crashes go to fuzz/artifacts/.
  work=$(mktemp -d)
  cp -r "corpus/$target/." "$work/" 2>/dev/null || true
  log=$(mktemp)
  start=$(date +%s)
  status=0
  cargo +nightly fuzz run "$target" "$work" -- -runs="$runs" -rss_limit_mb=2048 >"$log" 2>&1 || status=$?
  done_line=$(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)
  executions=$(sed -E 's/^Done ([0-9]+) runs.*/\1/' <<<"$done_line")
  # libFuzzer's last status line: "#N DONE cov: C ft: F corp: K/..."
  final=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$final" | cut -d' ' -f2)
  corpus=$(grep -oE 'corp: [0-9]+' <<<"$final" | cut -d' ' -f2)
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    result="FAILED (status $status; log $log)"
    failed="$failed $target"
    tail -n 30 "$log" >&2
  fi
  printf '%-20s %12s %8s %6s %7s  %s\n' "$target" "${executions:-?}" "$(($(date +%s) - start))" "${cov:-?}" \
    "${corpus:-?}" "$result"
  [ "$status" -eq 0 ] && rm -f "$log"
  rm -rf "$work"
done
if [ -n "$failed" ]; then
  echo "failed:$failed (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
