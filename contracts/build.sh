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
CONTRACTS=(NoxStakeToken NodeRegistry RewardLedger BatchExecutor Erc20Payment IPayment ShieldedPool TransferVerifier InsertVerifier PoseidonT4 SwapAdaptor)
# Not compiled here: the npm packages' own compiled artifacts (tools/package.json), copied in the
# same shape. Uniswap v2 core and periphery, and WETH9.
NPM_ARTIFACTS=(
  "UniswapV2Factory:@uniswap/v2-core/build/UniswapV2Factory.json"
  "UniswapV2Pair:@uniswap/v2-core/build/UniswapV2Pair.json"
  "UniswapV2Router02:@uniswap/v2-periphery/build/UniswapV2Router02.json"
  "WETH9:canonical-weth/build/contracts/WETH9.json"
)

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

# The npm artifacts: abi and bytecode as published. The router finds pairs by CREATE2 with the
# pair's init-code hash compiled into it, so the pair bytecode we deploy must hash to it.
node - ../tools/node_modules "$dest" "${NPM_ARTIFACTS[@]}" <<'JS'
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const [modules, dest, ...entries] = process.argv.slice(2);
const hex = (s) => (s.startsWith('0x') ? s : '0x' + s);
const code = (x) => hex(typeof x === 'string' ? x : x.object);
for (const entry of entries) {
  const [name, file] = entry.split(':');
  const full = JSON.parse(fs.readFileSync(path.join(modules, file), 'utf8'));
  const bytecode = code(full.bytecode ?? full.evm.bytecode);
  const deployed = code(full.deployedBytecode ?? full.evm.deployedBytecode);
  const artifact = { abi: full.abi, bytecode: { object: bytecode }, deployedBytecode: { object: deployed } };
  fs.writeFileSync(path.join(dest, name + '.json'), JSON.stringify(artifact, null, 2) + '\n');
}
JS

pair_hash=$("$(dirname "$FORGE")/cast" keccak "$(node -e 'process.stdout.write(require(process.argv[1]).bytecode.object)' "$(cd "$dest" && pwd)/UniswapV2Pair.json")")
init_code_hash=0x96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f
if [ "$pair_hash" != "$init_code_hash" ]; then
  echo "error: the npm UniswapV2Pair bytecode hashes to $pair_hash, not the router's init-code hash $init_code_hash" >&2
  exit 1
fi
if ! grep -q "${init_code_hash#0x}" "$dest/UniswapV2Router02.json"; then
  echo "error: UniswapV2Router02 does not carry the pair init-code hash $init_code_hash" >&2
  exit 1
fi

if [ "$mode" = check ]; then
  if ! diff -r artifacts "$dest" >/dev/null; then
    echo "error: contracts/artifacts/ is stale: the sources compile to different artifacts." >&2
    diff -rq artifacts "$dest" >&2 || true
    echo "       Run contracts/build.sh and commit contracts/artifacts/." >&2
    exit 1
  fi
  echo "contracts/artifacts/ matches the sources and npm packages (${#CONTRACTS[@]} + ${#NPM_ARTIFACTS[@]} artifacts; Uniswap pair init-code hash checked)"
else
  echo "wrote ${#CONTRACTS[@]} + ${#NPM_ARTIFACTS[@]} artifacts to contracts/artifacts/"
fi
