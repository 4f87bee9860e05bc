// The quote bounds (issue 29 item 3), as in crates/nox-pay/src/bounds.rs: an
// honest quote passes; a lying exit that quotes 100× or inflates payment_gas
// is refused with the figure, the value and the bound; the ceiling refuses the
// largest quote the bounds admit. The constants are checked against the Rust
// source so the two clients cannot drift apart.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as nox from "../dist/index.js";

const GWEI = 1_000_000_000n;
const ETH = "0x0000000000000000000000000000000000000000";
const TOKEN = "0x0707070707070707070707070707070707070707";
const hex = (n) => "0x" + n.toString(16);

// The relayer's own quote at its default policy (margin 10 %, headroom 25 %, tip 1 gwei).
function honest(next) {
  const maxFee = (next * 12_500n + 9_999n) / 10_000n + GWEI;
  const perMillion = (1_000_000n * maxFee * 11_000n + 9_999n) / 10_000n;
  return {
    chain_id: 31337,
    executor: "0x" + "01".repeat(20),
    relayer: "0x" + "02".repeat(20),
    pool: "0x" + "03".repeat(20),
    block: 10,
    base_fee: hex(next),
    priority_fee: hex(GWEI),
    max_fee_per_gas: hex(maxFee),
    margin_bps: 1000,
    gas_extra_bps: 2000,
    prices: [
      { asset: ETH, per_million_gas: hex(perMillion) },
      { asset: TOKEN, per_million_gas: "0x5" },
    ],
    payment_gas: 420000,
  };
}

const reading = (baseFee) => ({ baseFee, priorityFee: GWEI });

function refused(fn, figure) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof nox.QuoteRefusedError, String(e));
    assert.equal(e.figure, figure);
    assert.ok(e.quoted > e.bound);
    for (const part of [figure, String(e.quoted), String(e.bound)]) {
      assert.ok(e.message.includes(part), `${e.message} names ${part}`);
    }
    return true;
  });
}

test("an honest quote passes, also one block later", () => {
  for (const base of [7n, GWEI, 30n * GWEI, 500n * GWEI]) {
    const r = reading(base);
    for (const next of [nox.nextBaseFee(r), (nox.nextBaseFee(r) * 11_250n + 9_999n) / 10_000n]) {
      nox.checkQuote(honest(next), r);
    }
  }
});

test("a lying exit quoting 100x is refused", () => {
  const r = reading(GWEI);
  const q = honest(nox.nextBaseFee(r));
  refused(() => nox.checkQuote({ ...q, base_fee: hex(BigInt(q.base_fee) * 100n) }, r), "base_fee");
  refused(() => nox.checkQuote({ ...q, priority_fee: hex(100n * GWEI) }, r), "priority_fee");
  refused(
    () =>
      nox.checkQuote(
        { ...q, max_fee_per_gas: hex(BigInt(q.max_fee_per_gas) * 100n), prices: [{ asset: ETH, per_million_gas: hex(BigInt(q.prices[0].per_million_gas) * 100n) }] },
        r,
      ),
    "max_fee_per_gas",
  );
  refused(() => nox.checkQuote({ ...q, prices: [{ asset: ETH, per_million_gas: hex(BigInt(q.prices[0].per_million_gas) * 100n) }] }, r), "price per million gas");
});

test("an inflated payment_gas and uncapped margins are refused", () => {
  const r = reading(GWEI);
  const q = honest(nox.nextBaseFee(r));
  nox.checkQuote({ ...q, payment_gas: 600000, margin_bps: 5000, gas_extra_bps: 5000 }, r);
  refused(() => nox.checkQuote({ ...q, payment_gas: 42_000_000 }, r), "payment_gas");
  refused(() => nox.checkQuote({ ...q, margin_bps: 5001 }, r), "margin_bps");
  refused(() => nox.checkQuote({ ...q, gas_extra_bps: 5001 }, r), "gas_extra_bps");
  // The outputs' insertion share: a full batch's passes, two notes alone per batch do not.
  nox.checkQuote({ ...q, insertion_gas: 225000 }, r);
  refused(() => nox.checkQuote({ ...q, insertion_gas: 866000 }, r), "insertion_gas");
  assert.equal(
    nox.feeFromQuote({ ...q, insertion_gas: 54078 }, ETH, 0, 100) - nox.feeFromQuote(q, ETH, 0, 100),
    (BigInt(q.prices[0].per_million_gas) * 54078n) / 1_000_000n,
    "the insertion share is priced",
  );
});

test("an L2's data fee is priced and bounded by the caller's own figure (issue 33)", () => {
  const r = reading(GWEI);
  const q = honest(nox.nextBaseFee(r));
  // On an L1 (no own figure) a made-up data fee is refused: it would be paid for nothing.
  refused(() => nox.checkQuote({ ...q, l1_data_gas: 1_000_000 }, r), "l1_data_gas");
  // On an L2 it may be worth up to twice the caller's own figure, and is priced as gas.
  const own = BigInt(q.max_fee_per_gas) * 1_000_000n;
  nox.checkQuote({ ...q, l1_data_gas: 2_000_000 }, r, ETH, undefined, own);
  refused(() => nox.checkQuote({ ...q, l1_data_gas: 2_000_001 }, r, ETH, undefined, own), "l1_data_gas");
  assert.equal(
    nox.feeFromQuote({ ...q, l1_data_gas: 1_000_000 }, ETH, 0, 100) - nox.feeFromQuote(q, ETH, 0, 100),
    (BigInt(q.prices[0].per_million_gas) * 1_000_000n) / 1_000_000n,
    "the data fee is priced as gas",
  );
});

test("token fees need the caller's own price reading", () => {
  const r = reading(GWEI);
  const q = honest(nox.nextBaseFee(r));
  const bound = nox.ethPriceBound(q);
  assert.throws(() => nox.checkQuote(q, r, TOKEN), /own reading/);
  nox.checkQuote(q, r, TOKEN, bound);
  refused(() => nox.checkQuote(q, r, TOKEN, bound * 100n), "token price per million gas (in wei)");
});

test("the default ceiling admits an honest fee and refuses the largest quote the bounds allow", () => {
  const r = reading(GWEI);
  const q = honest(nox.nextBaseFee(r));
  const ceiling = { defaultWei: nox.defaultCeilingWei(r, 100_000) };
  const fee = nox.feeFromQuote(q, ETH, 100_000);
  nox.checkCeiling(fee, fee, ceiling);
  const b = nox.feeBounds(r);
  const worst = { ...q, max_fee_per_gas: hex(b.maxFeePerGas), margin_bps: 5000, gas_extra_bps: 5000, payment_gas: 600000 };
  worst.prices = [{ asset: ETH, per_million_gas: hex(nox.ethPriceBound(worst)) }];
  nox.checkQuote(worst, r);
  const worstFee = nox.feeFromQuote(worst, ETH, 100_000);
  refused(() => nox.checkCeiling(worstFee, worstFee, ceiling), "fee");
  nox.checkCeiling(worstFee, worstFee, { maxFee: worstFee });
  refused(() => nox.checkCeiling(worstFee, worstFee, { maxFee: worstFee - 1n }), "fee");
});

test("the fee reading goes through the given provider", async () => {
  const asked = [];
  const provider = {
    request: async ({ method }) => {
      asked.push(method);
      return method === "eth_getBlockByNumber" ? { baseFeePerGas: "0x3b9aca00" } : "0x77359400";
    },
  };
  assert.deepEqual(await nox.readChainFees(provider), { baseFee: GWEI, priorityFee: 2n * GWEI });
  assert.deepEqual(asked, ["eth_getBlockByNumber", "eth_maxPriorityFeePerGas"]);
});

test("the constants are the Rust client's", () => {
  const rust = readFileSync(new URL("../../../crates/nox-pay/src/bounds.rs", import.meta.url), "utf8");
  const constant = (name) => BigInt(rust.match(new RegExp(`pub const ${name}: \\w+ = ([0-9_]+);`))[1].replaceAll("_", ""));
  for (const name of ["MAX_MARGIN_BPS", "MAX_GAS_EXTRA_BPS", "BASE_FEE_RISE_BPS", "MAX_FEE_HEADROOM_BPS", "TOKEN_PRICE_TOLERANCE_BPS"]) {
    assert.equal(BigInt(nox[name]), constant(name), name);
  }
  for (const name of ["MAX_PAYMENT_GAS", "MAX_INSERTION_GAS", "MIN_TIP_WEI", "QUOTE_TOLERANCE", "DEFAULT_CEILING_FACTOR"]) {
    assert.equal(nox[name], constant(name), name);
  }
});
