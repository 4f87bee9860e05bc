// The client's own L1 data-fee figure (issue 33), as crates/nox-wallet-io/src/l2fee.rs: the chain
// kind from the same table (unknown ids probed for the OP-stack oracle), the fee asked of the
// chain's own oracle on the module's sample bytes, and the quote bound it drives: an honest L2
// quote passes, an inflated one is refused, an L1 accepts no data fee. The provider here is a
// stand-in EIP-1193 object that decodes what the SDK sends (the real-chain reading is tested
// natively on Anvil: crates/nox-wallet-io/tests/l2fee.rs); the sample comes from the real module.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as nox from "../dist/index.js";
import { NoxWasm } from "../dist/nox_wasm.mjs";
import { WASM } from "./testnet-helper.mjs";

const GWEI = 1_000_000_000n;
const ETH = "0x0000000000000000000000000000000000000000";
const POOL = "0x" + "5f".repeat(20);
const hex = (n) => "0x" + n.toString(16);
const word = (n) => n.toString(16).padStart(64, "0");

/** A chain answering the oracle's `getL1Fee(bytes)` as `perByte × (len + 68)`, recording calls. */
function chain({ oracleCode = "0x", perByte = 1_000_000n, arbPerByte = 0n } = {}) {
  const calls = [];
  return {
    calls,
    async request({ method, params }) {
      if (method === "eth_getCode") {
        assert.equal(params[0].toLowerCase(), nox.GAS_PRICE_ORACLE.toLowerCase());
        return oracleCode;
      }
      if (method === "eth_call") {
        const { to, data } = params[0];
        calls.push({ to, data });
        if (to.toLowerCase() === nox.GAS_PRICE_ORACLE.toLowerCase()) {
          assert.equal(data.slice(0, 10), "0x49948e0e", "getL1Fee(bytes)");
          assert.equal(BigInt("0x" + data.slice(10, 74)), 32n, "the bytes' offset");
          const len = Number(BigInt("0x" + data.slice(74, 138)));
          assert.equal((data.length - 138) / 2, Math.ceil(len / 32) * 32, "padded to whole words");
          return "0x" + word(perByte * BigInt(len + 68));
        }
        if (to.toLowerCase() === nox.ARB_GAS_INFO.toLowerCase()) {
          assert.equal(data, "0x41b247a8", "getPricesInWei()");
          return "0x" + [1n, arbPerByte, 3n, 4n, 5n, 6n].map(word).join("");
        }
      }
      throw new Error(`unexpected ${method}`);
    },
  };
}

function quote(maxFee, l1DataGas) {
  return {
    chain_id: 8453,
    executor: "0x" + "01".repeat(20),
    relayer: "0x" + "02".repeat(20),
    pool: POOL,
    block: 10,
    base_fee: hex(GWEI),
    priority_fee: hex(GWEI),
    max_fee_per_gas: hex(maxFee),
    margin_bps: 1000,
    gas_extra_bps: 2000,
    prices: [{ asset: ETH, per_million_gas: hex((1_000_000n * maxFee * 11_000n + 9_999n) / 10_000n) }],
    payment_gas: 420000,
    l1_data_gas: Number(l1DataGas),
  };
}

test("the chain table is the Rust one, and an unknown chain is probed for the oracle", async () => {
  const src = readFileSync(new URL("../../../crates/nox-chain/src/l2fee.rs", import.meta.url), "utf8");
  const arm = (name) => {
    const m = src.match(new RegExp(`([0-9_ |]+)=> Some\\(Self::${name}\\)`));
    return m[1].split("|").map((s) => BigInt(s.trim().replaceAll("_", "")));
  };
  const none = chain();
  for (const id of arm("L1")) assert.equal(await nox.feeModel(none, id), "l1", `chain ${id}`);
  for (const id of arm("OpStack")) assert.equal(await nox.feeModel(none, id), "op-stack", `chain ${id}`);
  for (const id of arm("Arbitrum")) assert.equal(await nox.feeModel(none, id), "arbitrum", `chain ${id}`);
  assert.equal(await nox.feeModel(chain(), 424_242n), "l1");
  assert.equal(await nox.feeModel(chain({ oracleCode: "0x6000" }), 424_242n), "op-stack");
});

test("the own figure is the chain's fee of the module's sample; the bound follows it", async () => {
  const module = await NoxWasm.instantiate(readFileSync(WASM));
  const sample = module.payDataFeeSample(POOL, 132);
  assert.ok(sample.length > 900, `a paid bundle with an action is ~1.2 kB (${sample.length})`);
  assert.throws(() => module.payDataFeeSample("0x12", 0));

  // OP stack: the oracle is given the unsigned bytes (sample − 68) and adds the 68 itself.
  const op = chain({ perByte: 5_000_000n });
  const own = await nox.ownDataFeeWei(op, 8453n, sample);
  assert.equal(own, 5_000_000n * BigInt(sample.length));
  assert.equal(op.calls.length, 1);

  // The honest relayer quotes the same fee as gas at its max fee: accepted (before this, every
  // client bounded the data fee by 0 and refused it).
  const maxFee = 2n * GWEI;
  const honestGas = (own + maxFee - 1n) / maxFee;
  const reading = { baseFee: GWEI, priorityFee: GWEI };
  assert.throws(() => nox.checkQuote(quote(maxFee, honestGas), reading, ETH), /l1_data_gas/);
  nox.checkQuote(quote(maxFee, honestGas), reading, ETH, undefined, own);
  // The attack: more than twice the client's figure is refused.
  const bound = (2n * own + maxFee - 1n) / maxFee;
  nox.checkQuote(quote(maxFee, bound), reading, ETH, undefined, own);
  assert.throws(() => nox.checkQuote(quote(maxFee, bound + 1n), reading, ETH, undefined, own), /l1_data_gas/);
  // The default ceiling grows by 3 × the figure.
  assert.equal(nox.defaultCeilingWei(reading, 0, own) - nox.defaultCeilingWei(reading, 0), 3n * own);

  // Arbitrum: wei per L1 byte × (length + 16).
  assert.equal(await nox.ownDataFeeWei(chain({ arbPerByte: 7n }), 42_161n, sample), 7n * BigInt(sample.length + 16));
  // An L1: no call, no fee.
  const l1 = chain();
  assert.equal(await nox.ownDataFeeWei(l1, 1n, sample), 0n);
  assert.equal(l1.calls.length, 0);
});
