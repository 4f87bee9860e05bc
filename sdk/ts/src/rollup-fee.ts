// This client's own figure of a paid bundle's L1 data fee on a rollup (issue 33; `nox tx`'s
// `nox_wallet_io::l2fee`, docs/design/l2-fees.md "The client"): it bounds the `l1_data_gas` an
// exit's relayer quotes (`checkQuote`'s `ownDataFeeWei`), so an honest quote on an L2 passes and a
// lying exit cannot charge more than twice the real data fee — nor any on an L1.
//
// The chain's fee model comes from the same table as the relayer's (nox_chain::l2fee::FeeModel::
// for_chain); a chain id the table does not know is an OP-stack chain if the GasPriceOracle
// predeploy has code, else an L1. The fee is asked of the chain itself, through this client's own
// provider (the mixnet): the OP-stack oracle's `getL1Fee(bytes)` — the chain's own formula,
// Ecotone or Fjord — or Arbitrum's `ArbGasInfo.getPricesInWei()` (wei per L1 byte × (length + 16),
// the native upper bound). The bytes are the module's `payDataFeeSample` (the relayer's reference
// bundle shape with this bundle's action length, plus a signed envelope).

import type { Eip1193 } from "./bounds.js";
import { NoxError } from "./errors.js";

/** The OP-stack fee oracle predeploy (the same address on every OP-stack chain). */
export const GAS_PRICE_ORACLE = "0x420000000000000000000000000000000000000F";
/** Arbitrum's `ArbGasInfo` precompile. */
export const ARB_GAS_INFO = "0x000000000000000000000000000000000000006C";

/** How a chain charges for a transaction's data. */
export type FeeModel = "l1" | "op-stack" | "arbitrum";

// nox_chain::l2fee::FeeModel::for_chain, the same ids.
const L1_CHAINS = new Set([1n, 11_155_111n, 17_000n, 560_048n, 31_337n, 1_337n]);
const OP_CHAINS = new Set([10n, 11_155_420n, 8_453n, 84_532n, 7_777_777n, 34_443n, 130n, 1_301n, 57_073n, 480n]);
const ARBITRUM_CHAINS = new Set([42_161n, 42_170n, 421_614n]);

/** `getL1Fee(bytes)` and `getPricesInWei()` selectors. */
const GET_L1_FEE = "49948e0e";
const GET_PRICES_IN_WEI = "41b247a8";
/** What `getL1Fee` adds to the unsigned bytes it is given for the signature (OP stack). */
const OP_SIGNATURE_BYTES = 68;

async function call(provider: Eip1193, to: string, data: string, what: string): Promise<string> {
  try {
    return (await provider.request({ method: "eth_call", params: [{ to, data }, "latest"] })) as string;
  } catch (e) {
    throw new NoxError("refused", `${what}: ${e instanceof Error ? e.message : String(e)}; nothing was proved, spent or sent`);
  }
}

function word(hex: string, index: number, what: string): bigint {
  const body = hex.startsWith("0x") ? hex.slice(2) : hex;
  const w = body.slice(index * 64, index * 64 + 64);
  if (w.length !== 64) throw new NoxError("refused", `${what}: a short answer (${body.length / 2} bytes)`);
  return BigInt(`0x${w}`);
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The fee model of chain `chainId`: the table, else an OP-stack chain if the oracle has code. */
export async function feeModel(provider: Eip1193, chainId: bigint): Promise<FeeModel> {
  if (L1_CHAINS.has(chainId)) return "l1";
  if (OP_CHAINS.has(chainId)) return "op-stack";
  if (ARBITRUM_CHAINS.has(chainId)) return "arbitrum";
  const code = (await provider.request({ method: "eth_getCode", params: [GAS_PRICE_ORACLE, "latest"] })) as string;
  return code === "0x" || code === "" ? "l1" : "op-stack";
}

/**
 * This client's own figure (wei) of the L1 data fee of the transaction whose bytes are `sample`
 * (the module's `payDataFeeSample`), asked of chain `chainId` through `provider`; 0 on an L1.
 */
export async function ownDataFeeWei(provider: Eip1193, chainId: bigint, sample: Uint8Array): Promise<bigint> {
  const model = await feeModel(provider, chainId);
  if (model === "l1") return 0n;
  if (model === "op-stack") {
    // getL1Fee(bytes): the unsigned transaction; the oracle adds the signature's 68 bytes itself.
    const unsigned = sample.subarray(0, Math.max(0, sample.length - OP_SIGNATURE_BYTES));
    const len = unsigned.length.toString(16).padStart(64, "0");
    const body = toHex(unsigned).padEnd(Math.ceil(unsigned.length / 32) * 64, "0");
    const data = `0x${GET_L1_FEE}${(32).toString(16).padStart(64, "0")}${len}${body}`;
    return word(await call(provider, GAS_PRICE_ORACLE, data, "GasPriceOracle.getL1Fee"), 0, "GasPriceOracle.getL1Fee");
  }
  const prices = await call(provider, ARB_GAS_INFO, `0x${GET_PRICES_IN_WEI}`, "ArbGasInfo.getPricesInWei");
  return BigInt(sample.length + 16) * word(prices, 1, "ArbGasInfo.getPricesInWei");
}
