// The paid relay (docs/spec/relay.md): ask an exit's relayer for its price,
// then hand it a bundle — `BatchExecutor.execute(Bundle)` calldata carrying the
// zero-knowledge gas payment — to sign, send and pay for on chain. Both go to
// the same exit (`NoxClient.relayQuote` / `relaySubmit` pin it).

import { NoxError } from "./errors.js";

/** A relayer's price list (relay.md §3, Quote). Amounts are 0x hex (uint256). */
export interface RelayQuote {
  chain_id: number;
  executor: string;
  relayer: string;
  pool: string;
  block: number;
  base_fee: string;
  priority_fee: string;
  max_fee_per_gas: string;
  margin_bps: number;
  gas_extra_bps: number;
  prices: { asset: string; per_million_gas: string }[];
  payment_gas: number;
  /** Gas charged for the outputs' insertion share (absent from an older relayer: 0). */
  insertion_gas?: number;
  /** An L2's data fee as gas at `max_fee_per_gas` (absent on an L1: 0; docs/design/l2-fees.md). */
  l1_data_gas?: number;
}

/** A relayer's answer to a bundle (relay.md §3, Submit), tagged by `outcome`. */
export type RelayOutcome =
  | {
      outcome: "included";
      tx_hash: string;
      block: number;
      gas_used: number;
      gas_limit: number;
      effective_gas_price: string;
      action_success: boolean;
      fee: string;
      asset: string;
      bumps: number;
      prepare_ms: number;
      inclusion_ms: number;
    }
  | { outcome: "simulated"; gas_used: number; gas_limit: number; action_success: boolean; required_fee: string; prepare_ms: number }
  | { outcome: "pending"; tx_hash: string; detail: string }
  | { outcome: "refused"; reason: string; detail: string; required_fee?: string };

/** A bundle for the relayer (relay.md §2, Submit). */
export interface RelaySubmission {
  /** The chain the bundle was built for. */
  chainId: bigint | number;
  /** The `BatchExecutor` it is addressed to (0x, 20 bytes). */
  executor: string;
  /** The relayer the payment credits (0x, 20 bytes): the quote's `relayer`. */
  relayer: string;
  /** Exactly `BatchExecutor.execute(Bundle)` calldata, at most 32 768 bytes. */
  calldata: Uint8Array;
  /** Submit even if the action reverts in simulation (the fee is paid either way). */
  payOnRevert?: boolean;
  /** Price and simulate only; never submit. */
  simulateOnly?: boolean;
}

/** Largest calldata a relayer accepts (relay.md §2). */
export const MAX_CALLDATA = 32_768;

/** The Quote request body: op 0x01 alone. */
export const QUOTE_BODY = Uint8Array.of(0x01);

function address(text: string, what: string): Uint8Array {
  if (!/^0x[0-9a-fA-F]{40}$/.test(text)) {
    throw new NoxError("bad-input", `${what}: expected a 0x-prefixed 20-byte address`);
  }
  const out = new Uint8Array(20);
  for (let i = 0; i < 20; i++) {
    out[i] = Number.parseInt(text.slice(2 + 2 * i, 4 + 2 * i), 16);
  }
  return out;
}

/** The Submit request body: 0x02 ‖ flags ‖ chain_id (8, big-endian) ‖ executor ‖ relayer ‖ calldata. */
export function submitBody(submission: RelaySubmission): Uint8Array {
  const chainId = BigInt(submission.chainId);
  if (chainId < 0n || chainId >= 1n << 64n) {
    throw new NoxError("bad-input", "chainId must fit in 64 bits");
  }
  if (submission.calldata.length > MAX_CALLDATA) {
    throw new NoxError("bad-input", `calldata of ${submission.calldata.length} bytes exceeds ${MAX_CALLDATA}`);
  }
  const out = new Uint8Array(50 + submission.calldata.length);
  out[0] = 0x02;
  out[1] = (submission.payOnRevert ? 0x01 : 0) | (submission.simulateOnly ? 0x02 : 0);
  new DataView(out.buffer).setBigUint64(2, chainId, false);
  out.set(address(submission.executor, "executor"), 10);
  out.set(address(submission.relayer, "relayer"), 30);
  out.set(submission.calldata, 50);
  return out;
}

/** An `Ok` relay answer's JSON object. */
export function parseRelayAnswer<T>(body: Uint8Array): T {
  try {
    const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new Error("not an object");
    }
    return value as T;
  } catch (error) {
    throw new NoxError("refused", `the relayer's answer is not a JSON object: ${String(error)}`);
  }
}
