"""relay.json (relay.md sections 2, 3, 5): request bodies and the pricing formulas."""

import json

import evm

from .common import check, VECTORS
from .registry import h0x


EXECUTE = b"execute((address,bytes,address,uint256,(address,uint256,uint256,bytes)))"


def relay_decode(body):
    """relay.md section 2: ("quote",) or ("submit", fields), or None (refused: malformed)."""
    if body == b"\x01":
        return ("quote",)
    if len(body) < 50 or body[0] != 2 or body[1] & ~3:
        return None
    calldata = body[50:]
    if len(calldata) > 32768 or calldata[:4] != evm.keccak256(EXECUTE)[:4]:
        return None
    bundle = evm.decode_bundle(calldata[4:])
    if bundle is None or evm.encode_bundle(*bundle) != calldata[4:]:
        return None
    return ("submit", body[1], int.from_bytes(body[2:10], "big"), body[10:30], body[30:50], calldata, bundle)


def ceil_div(a, b):
    return -(-a // b)


def check_relay():
    """relay.md sections 2, 3 and 5 (fee plan, gas limit, required fee, token price)."""
    v = json.loads((VECTORS / "relay.json").read_text())
    for c in v["valid"]:
        got = relay_decode(bytes.fromhex(c["body"]))
        check(got is not None, f"relay {c['name']}: refused")
        if got and got[0] == "submit":
            _, flags, chain, executor, relayer, calldata, bundle = got
            b = c["bundle"]
            want = (c["flags"], c["chain_id"], h0x(c["executor"]), h0x(c["relayer"]), h0x(c["calldata"]))
            check((flags, chain, executor, relayer, calldata) == want, f"relay {c['name']}: header fields")
            wb = (h0x(b["payment"]), h0x(b["payment_data"]), h0x(b["asset"]), int(b["fee"], 16), h0x(b["target"]),
                  int(b["value"], 16), int(b["gas"], 16), h0x(b["data"]))
            check(bundle == wb, f"relay {c['name']}: bundle")
    for c in v["invalid"]:
        check(relay_decode(bytes.fromhex(c["body"])) is None, f"relay {c['name']}: accepted")
    p = v["pricing"]
    f = p["fee_plan"]
    max_fee = ceil_div(f["next_base_fee"] * (10000 + f["headroom_bps"]), 10000) + f["priority_fee"]
    check(max_fee == f["max_fee_per_gas"], "relay: fee plan (step 7)")
    for pay, action_gas, extra, limit in p["gas_limit"]:
        want = ceil_div((pay + ceil_div(64 * action_gas, 63)) * (10000 + extra), 10000) + 10000
        check(want == limit, f"relay: L({pay}, {action_gas}) (step 9)")

    def required(gas, fee, margin):
        return ceil_div(gas * fee * (10000 + margin), 10000)

    r = p["required_wei"]
    check(required(r["gas_limit"], r["max_fee_per_gas"], r["margin_bps"]) == int(r["wei"], 16), "relay: required fee (step 11)")
    t = p["token"]
    ra, rw, sell, wei = (int(t[x], 16) for x in ("reserve_asset", "reserve_weth", "sell", "wei"))
    check(sell * 997 * rw // (ra * 1000 + sell * 997) == int(t["value_wei"], 16), "relay: getAmountOut")
    check(ra * wei * 1000 // ((rw - wei) * 997) + 1 == int(t["asset_needed"], 16), "relay: getAmountIn")
    q = v["quote"]
    check(int(q["prices"][0]["per_million_gas"], 16) == required(10**6, int(q["max_fee_per_gas"], 16), q["margin_bps"]),
          "relay: quote price per million gas (section 3)")
    return len(v["valid"]) + len(v["invalid"])
