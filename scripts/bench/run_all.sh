#!/usr/bin/env bash
# Regenerates every benchmark: bench/data/*.json and docs/benchmarks/charts/.
#
#   scripts/bench/run_all.sh [--quick|--full]     (default --quick)
#
# --quick  each `nox bench <experiment> --quick`, short Criterion runs
#          (warm-up 0.3 s, 0.5 s measurement, 10 samples); < 15 minutes on 2 cores.
#          Smoke-test quality: fewer rates, samples and trials.
# --full   each experiment with its default (publication) parameters and
#          Criterion with 1 s warm-up / 4 s measurement; about an hour on
#          2 cores. The committed bench/data/*.json should come from here.
#
# Either mode overwrites bench/data/*.json; `git diff --stat bench/data`
# shows what changed. Experiments missing from this build of `nox` are
# skipped with a message (they are being added on other branches); a failing
# experiment is reported and the others still run; the exit status is 1 if
# any experiment failed. Env: NOX_BENCH_TIMEOUT (seconds per experiment).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/nox/target}"

mode=quick
case "${1:---quick}" in
  --quick) mode=quick ;;
  --full) mode=full ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--quick|--full]" >&2; exit 2 ;;
esac
if [ "$mode" = quick ]; then timeout_s="${NOX_BENCH_TIMEOUT:-150}"; else timeout_s="${NOX_BENCH_TIMEOUT:-1800}"; fi

started=$(date +%s)
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
record() { printf '%-18s %-8s %6ss  %s\n' "$1" "$2" "$3" "$4" >>"$summary"; }

# The benchmark build: release settings plus the nodes' [observe] timing log (the anonymity
# experiments need it) and their [chaos] link fault layer (the soak needs it); the default
# binary refuses both. Its own profile keeps it out of target/release. --full builds the
# publication profile bench-observe (release: one codegen unit, thin LTO); --quick, a smoke run
# whose numbers are not published, the cheaper bench-quick (16 codegen units, no cross-crate
# LTO, no debug information), the build the CI gate measures too (Cargo.toml, docs/ci.md).
# NOX_BENCH_PROFILE overrides either.
if [ "$mode" = quick ]; then profile="${NOX_BENCH_PROFILE:-bench-quick}"; else profile="${NOX_BENCH_PROFILE:-bench-observe}"; fi
echo "==> building the benchmark binary (cargo build --profile $profile --features observe,chaos -p nox)"
cargo build --profile "$profile" --features observe,chaos --locked -q -p nox
nox="$CARGO_TARGET_DIR/$profile/nox"

# Network: surb-rtt reply-loss http-overhead latency-vs-delay concurrency
# scaling testnet in-process fec-curve; anonymity: anonymity cover attacks fec-arq (cover: sender
# entropy, round trip and upstream bytes vs the client's λ_P with real nox-clients);
# pool-anonymity: the shielded pool's deposit→withdrawal linking per wallet policy (simulation, seconds);
# anonymity-scale: sender anonymity at 100–10,000 users per cover profile and the statistical
# disclosure attack over days (simulation; quick 3 s, full ~2 min);
# chain: registry (topology refresh from the NodeRegistry on Anvil; needs
# `npm install --prefix tools`, done on first use).
# defi: an anonymous paid transaction, a private Uniswap swap and a gas-paid withdrawal through
# the mixnet and an exit's relayer, users at once, public baselines, economics (real processes,
# Anvil; ~2 min in quick mode, so a doubled timeout).
# relayer-flood: a relayer on Anvil flooded with forged and simulate-only bundles while an honest
# client asks for quotes (in process; ~1 min, quick ~30 s).
# soak: the testnet under load with nodes SIGKILLed, link loss, the directory and the chain's
# RPC down (~2 min in quick mode, so a doubled timeout).
# frontier: anonymity (1,000 users, simulation) × cost × round trip (model) over λ_P × μ (quick < 10 s).
# hosts: the testnet on loopback and on a namespace per node over the three-regions WAN, one run
# (needs root and `ip netns`; ~1 min).
experiments="fec-curve testnet hosts in-process surb-rtt reply-loss http-overhead latency-vs-delay concurrency scaling anonymity cover attacks fec-arq pool-anonymity anonymity-scale registry defi relayer-flood soak packet-size profiles frontier"

# Extra flags for subcommands that predate --quick.
legacy_quick_flags() {
  case "$1" in
    fec-curve) echo "--trials 200" ;;
    testnet) echo "--rates 1000,3000,5000 --seconds 1" ;;
    hosts) echo "--rates 250,1000,2000 --seconds 1 --echoes 10" ;;
    *) echo "" ;;
  esac
}

failed=0
for exp in $experiments; do
  if ! help=$("$nox" bench "$exp" --help 2>/dev/null); then
    echo "==> SKIP $exp: this build of nox has no 'nox bench $exp' (pending on another branch)"
    record "$exp" skipped 0 "pending: nox bench $exp not in this build"
    continue
  fi
  flags=()
  if [ "$mode" = quick ]; then
    if grep -q -- '--quick' <<<"$help"; then
      flags=(--quick)
    else
      read -r -a flags <<<"$(legacy_quick_flags "$exp")"
    fi
  fi
  exp_timeout=$timeout_s
  case "$exp" in defi | soak) exp_timeout=$((timeout_s * 2)) ;; esac
  echo "==> nox bench $exp ${flags[*]:-} (timeout ${exp_timeout}s)"
  t0=$(date +%s)
  log="$(mktemp)"
  if timeout "$exp_timeout" "$nox" bench "$exp" ${flags[@]+"${flags[@]}"} 2>&1 | tee "$log"; then
    record "$exp" ok $(( $(date +%s) - t0 )) "$(grep -o 'wrote [^ ]*' "$log" | head -1 || true)"
  else
    status=${PIPESTATUS[0]}
    failed=1
    reason="exit $status"
    [ "$status" = 124 ] && reason="timed out after ${exp_timeout}s"
    echo "==> FAILED nox bench $exp: $reason" >&2
    record "$exp" FAILED $(( $(date +%s) - t0 )) "$reason (log above)"
  fi
  rm -f "$log"
done

echo "==> Criterion: Sphinx micro-benchmarks (scripts/bench/sphinx.sh)"
if [ "$mode" = quick ]; then
  # 37 benchmarks: 0.3 s warm-up + 0.5 s of 10 samples each still gives every median (session 28:
  # 0.5 s + 1 s of 20 samples took ~70 s of the 106 s step; docs/ci.md).
  crit=(--warm-up-time 0.3 --measurement-time 0.5 --sample-size 10)
else
  crit=(--warm-up-time 1 --measurement-time 4)
fi
t0=$(date +%s)
if NOX_BIN="$nox" bash scripts/bench/sphinx.sh "${crit[@]}"; then
  record criterion-sphinx ok $(( $(date +%s) - t0 )) "wrote bench/data/sphinx.json"
else
  failed=1
  record criterion-sphinx FAILED $(( $(date +%s) - t0 )) "scripts/bench/sphinx.sh failed"
fi

echo "==> charts (scripts/bench/charts.sh)"
t0=$(date +%s)
if bash scripts/bench/charts.sh; then
  record charts ok $(( $(date +%s) - t0 )) "docs/benchmarks/charts/"
else
  failed=1
  record charts FAILED $(( $(date +%s) - t0 )) "scripts/bench/charts.sh failed"
fi

echo
echo "==> summary ($mode mode, $(( $(date +%s) - started )) s in all; machine load: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-18s %-8s %7s  %s\n' experiment status time notes
cat "$summary"
if [ "$failed" != 0 ]; then
  echo "run_all: some experiments FAILED (see above)" >&2
  exit 1
fi
echo "run_all: done; review 'git diff --stat bench/data docs/benchmarks/charts' before committing"
