#!/usr/bin/env bash
# Compile the contracts and write the artifacts the Rust side reads
# (artifacts/<Name>.json: abi, bytecode.object, deployedBytecode.object — the
# Foundry artifact shape that alloy's sol! macro takes).
#
#   contracts/build.sh          rebuild and rewrite artifacts/
#   contracts/build.sh --check  rebuild and fail if artifacts/ differs from the build
#
# Needs `npm install --prefix tools` (forge, solcjs, OpenZeppelin, forge-std).
# Compiler version and settings are fixed in foundry.toml, so the artifacts are
# reproducible byte for byte.
set -euo pipefail
cd "$(dirname "$0")"
FORGE=../tools/node_modules/.bin/forge
CONTRACTS=(NoxStakeToken NodeRegistry RewardLedger BatchExecutor Erc20Payment IPayment ShieldedPool GasPaymentVerifier InsertVerifier PoseidonT4)

mode=write
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if [ ! -x "$FORGE" ]; then
  echo "error: $FORGE is missing: run 'npm install --prefix tools' first" >&2
  exit 1
fi

# The same build (and cache) as `forge test`: after a test run this is instant.
"$FORGE" build --quiet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dest=artifacts
if [ "$mode" = check ]; then
  dest="$tmp/artifacts"
fi
mkdir -p "$dest"

node - out "$dest" "${CONTRACTS[@]}" <<'JS'
const fs = require('fs');
const path = require('path');
const [outDir, dest, ...names] = process.argv.slice(2);
// Every source file is <Name>.sol somewhere under src/; forge writes out/<Name>.sol/<Name>.json.
for (const name of names) {
  const full = JSON.parse(fs.readFileSync(path.join(outDir, name + '.sol', name + '.json'), 'utf8'));
  const artifact = {
    abi: full.abi,
    bytecode: { object: full.bytecode.object },
    deployedBytecode: { object: full.deployedBytecode.object },
  };
  fs.writeFileSync(path.join(dest, name + '.json'), JSON.stringify(artifact, null, 2) + '\n');
}
JS

if [ "$mode" = check ]; then
  if ! diff -r artifacts "$dest" >/dev/null; then
    echo "error: contracts/artifacts/ is stale: the sources compile to different artifacts." >&2
    diff -rq artifacts "$dest" >&2 || true
    echo "       Run contracts/build.sh and commit contracts/artifacts/." >&2
    exit 1
  fi
  echo "contracts/artifacts/ matches the sources (${#CONTRACTS[@]} artifacts)"
else
  echo "wrote ${#CONTRACTS[@]} artifacts to contracts/artifacts/"
fi
