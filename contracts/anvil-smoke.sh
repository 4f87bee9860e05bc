#!/usr/bin/env bash
# The committed artifacts on a real node: start Anvil (default hardfork), deploy
# every contract from contracts/artifacts/*.json with cast, register two nodes,
# recompute the registry fingerprint off chain from nodesPage with cast's keccak
# and abi-encode (docs/spec/registry.md §3) and compare, then run a bundle whose
# action reverts through the executor with a payer's EIP-712 signature and check
# that the relayer was credited and can claim. No Solidity involved: this is what
# the Rust side does, written with the Foundry CLI.
set -euo pipefail
cd "$(dirname "$0")"
T=../tools/node_modules/.bin
A=artifacts

fail() { echo "anvil-smoke: FAIL: $*" >&2; exit 1; }

port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
work=$(mktemp -d)
"$T/anvil" --port "$port" --config-out "$work/anvil.json" >"$work/anvil.log" 2>&1 &
anvil_pid=$!
trap 'kill "$anvil_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
R="http://127.0.0.1:$port"
for _ in $(seq 50); do
  [ -s "$work/anvil.json" ] && "$T/cast" chain-id --rpc-url "$R" >/dev/null 2>&1 && break
  sleep 0.2
done
key() { node -e "console.log(require('$work/anvil.json').private_keys[$1])"; }
acct() { "$T/cast" wallet address --private-key "$(key "$1")"; }
bytecode() { node -e "console.log(require('./$A/$1.json').bytecode.object)"; }
deploy() { # name, constructor signature, args...
  local name=$1
  shift
  "$T/cast" send --rpc-url "$R" --private-key "$(key 0)" --json --create "$(bytecode "$name")" "$@" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).contractAddress))'
}
send() { # key index, to, signature, args...
  local k=$1
  shift
  "$T/cast" send --rpc-url "$R" --private-key "$(key "$k")" "$@" >/dev/null
}
call() { "$T/cast" call --rpc-url "$R" "$@"; }

OP1=$(acct 1)
OP2=$(acct 2)
PAYER=$(acct 3)
RELAYER=$(acct 4)
E18=000000000000000000
TOKEN=$(deploy NoxStakeToken "constructor(address,uint256)" "$(acct 0)" "1000000$E18")
REG=$(deploy NodeRegistry "constructor(address,uint256,uint64,uint16)" "$TOKEN" "1000$E18" 60 1000)
EXEC=$(deploy BatchExecutor "constructor()")
PAY=$(deploy Erc20Payment "constructor(address)" "$EXEC")
LEDGER=$(call "$EXEC" "ledger()(address)")
echo "deployed: token $TOKEN registry $REG executor $EXEC ledger $LEDGER payment $PAY"

# two nodes register
for i in 1 2; do
  op=$(acct $i)
  send 0 "$TOKEN" "transfer(address,uint256)" "$op" "2000$E18"
  send $i "$TOKEN" "approve(address,uint256)" "$REG" "2000$E18"
  send $i "$REG" "register(bytes32,bytes32,string,uint8,uint256)" \
    "$("$T/cast" keccak "identity $i")" "$("$T/cast" keccak "link $i")" "127.0.0.1:900$i" $i "${i}000$E18"
done
[ "$(call "$REG" "nodeCount()(uint256)")" = 2 ] || fail "nodeCount"

# fingerprint recomputed off chain from nodesPage, at one block
block=$("$T/cast" block-number --rpc-url "$R")
chain=$("$T/cast" chain-id --rpc-url "$R")
hashes=()
n=$("$T/cast" call --rpc-url "$R" --block "$block" "$REG" "nodeCount()(uint256)")
[ "$n" = 2 ] || fail "nodeCount at block $block is $n"
for i in 0 1; do
  # one NodeView per call, decoded field by field
  one=$("$T/cast" call --rpc-url "$R" --block "$block" "$REG" \
    "nodesPage(uint256,uint256)((address,bytes32,bytes32,string,uint8,uint256)[])" $i 1)
  fields=$(echo "$one" | node -e '
let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
  const m=s.match(/^\[\((0x[0-9a-fA-F]{40}), (0x[0-9a-f]{64}), (0x[0-9a-f]{64}), "(.*)", (\d+), (\d+)/);
  console.log(m.slice(1).join("\n"))})')
  mapfile -t f <<<"$fields"
  rec=$("$T/cast" abi-encode "f(address,bytes32,bytes32,bytes32,uint8,uint256,uint64)" \
    "${f[0]}" "${f[1]}" "${f[2]}" "$("$T/cast" keccak "${f[3]}")" "${f[4]}" "${f[5]}" 0)
  hashes+=("$("$T/cast" keccak "$rec")")
done
mine=$("$T/cast" keccak "$("$T/cast" abi-encode "f(uint256,address,bytes32,bytes32)" "$chain" "$REG" "${hashes[@]}")")
theirs=$("$T/cast" call --rpc-url "$R" --block "$block" "$REG" "fingerprint()(bytes32)")
[ "$mine" = "$theirs" ] || fail "fingerprint: recomputed $mine, contract $theirs"
echo "fingerprint at block $block: $theirs (recomputed off chain: equal)"

# a bundle whose action reverts (the executor has no tokens to transfer): relayer still paid
send 0 "$TOKEN" "transfer(address,uint256)" "$PAYER" "10$E18"
send 3 "$TOKEN" "approve(address,uint256)" "$PAY" "10$E18"
fee="1$E18"
data=$("$T/cast" calldata "transfer(address,uint256)" "$PAYER" 1)
agas=100000
ahash=$(call "$EXEC" "executionHash(address,bytes,uint256,uint256)(bytes32,uint256)" "$TOKEN" "$data" "$fee" "$agas" | head -1)
deadline=$(($(date +%s) + 3600))
digest=$(call "$PAY" "paymentDigest(address,address,uint256,address,bytes32,uint256,uint256)(bytes32)" \
  "$PAYER" "$TOKEN" "$fee" "$RELAYER" "$ahash" 7 "$deadline")
sig=$("$T/cast" wallet sign --no-hash --private-key "$(key 3)" "$digest")
pdata=$("$T/cast" abi-encode "f((address,address,uint256,uint256,uint256,bytes))" \
  "($PAYER,$TOKEN,$fee,7,$deadline,$sig)")
bundle="($PAY,$pdata,$TOKEN,$fee,($TOKEN,0,$agas,$data))"
simulated=$(call --from "$RELAYER" "$EXEC" "execute((address,bytes,address,uint256,(address,uint256,uint256,bytes)))(bool)" "$bundle")
[ "$simulated" = false ] || fail "the action should fail (simulation says success=$simulated)"
send 4 "$EXEC" "execute((address,bytes,address,uint256,(address,uint256,uint256,bytes)))" "$bundle"
credited=$(call "$LEDGER" "balanceOf(address,address)(uint256)" "$RELAYER" "$TOKEN" | cut -d' ' -f1)
[ "$credited" = "$fee" ] || fail "relayer credited $credited, expected $fee"
send 4 "$LEDGER" "claim(address,address)" "$TOKEN" "$RELAYER"
claimed=$(call "$TOKEN" "balanceOf(address)(uint256)" "$RELAYER" | cut -d' ' -f1)
[ "$claimed" = "$fee" ] || fail "relayer claimed $claimed, expected $fee"
echo "bundle with a reverting action: relayer credited and claimed $fee"
echo "anvil-smoke: ok"
