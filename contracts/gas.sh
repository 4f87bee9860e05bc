#!/usr/bin/env bash
# Gas of typical successful calls (test/GasScenario.t.sol), each top-level call
# measured as its own transaction (--isolate: intrinsic 21,000 gas, calldata and
# cold storage included).
#
#   contracts/gas.sh           per-function table (forge --gas-report), as in docs/benchmarks/gas.md
#   contracts/gas.sh --check   fail if any scenario's gas differs from gas-snapshot.txt
#   contracts/gas.sh --update  rewrite gas-snapshot.txt (commit it with the change that moved gas)
set -euo pipefail
cd "$(dirname "$0")"
FORGE=../tools/node_modules/.bin/forge
args=(--offline --isolate --match-contract GasScenario)
case "${1:-}" in
  "") exec "$FORGE" test "${args[@]}" --gas-report ;;
  --check)
    # forge snapshot exits 0 when a scenario's setUp fails (it only compares what ran): a
    # failing scenario must fail the gate too.
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    status=0
    "$FORGE" snapshot "${args[@]}" --check gas-snapshot.txt 2>&1 | tee "$log" || status=$?
    if grep -q "failing test" "$log"; then
      echo "error: a gas scenario failed (above): the gate measured nothing for it." >&2
      exit 1
    fi
    # forge 1.7.1's `snapshot --check` prints "Diff in …" yet exits 0: the diff lines decide.
    if [ "$status" -ne 0 ] || grep -q "^Diff in " "$log"; then
      echo "error: contract gas changed (diff above). Intended? contracts/gas.sh --update, update docs/benchmarks/gas.md, commit." >&2
      exit 1
    fi ;;
  --update) exec "$FORGE" snapshot "${args[@]}" --snap gas-snapshot.txt ;;
  *) echo "usage: $0 [--check|--update]" >&2; exit 2 ;;
esac
