// The client's defence against a lying exit (issue 29 item 3), the same rules
// and constants as the Rust client (crates/nox-pay/src/bounds.rs): every figure
// of a relayer's quote is bounded by the caller's OWN reading of the chain —
// taken through its own provider (`readChainFees` over a `NoxProvider`, so
// through the mixnet), never from the exit that quotes — and the fee about to
// be proved by a ceiling. A refusal is a `QuoteRefusedError` naming the figure,
// the quoted value and the bound: nothing should be proved or sent after one.
//
// With b the latest block's base fee and t the suggested tip:
//   base_fee        ≤ b × 1.125²  (the next block's, one block of drift)
//   priority_fee    ≤ 2 × max(t, 1 gwei)
//   max_fee_per_gas ≤ 2 × (base_fee bound × 1.25 + max(t, 1 gwei))
//   margin_bps, gas_extra_bps ≤ 5000; payment_gas ≤ 600,000; insertion_gas ≤ 225,000
//   ETH price per million gas ≤ ⌈10⁶ × max_fee_per_gas × (1 + margin)⌉ (the quote's own bounded figures)
//   a token price: worth (by the caller's own reading) ≤ the ETH bound + 10 %
// Default ceiling: 3 × (600,000 + action gas) × own max fee (next base × 1.25 + tip), in wei.

import { NoxError } from "./errors.js";
import type { RelayQuote } from "./relay.js";

/** Largest margin over cost a quote may carry, basis points (50 %). */
export const MAX_MARGIN_BPS = 5_000;
/** Largest extra gas above simulation a quote may carry, basis points (50 %). */
export const MAX_GAS_EXTRA_BPS = 5_000;
/** Largest `payment_gas` a quote may claim (a whole ZK payment is < 500,000 gas). */
export const MAX_PAYMENT_GAS = 600_000n;
/**
 * Largest `insertion_gas` (the two outputs' share of an `insertBatch`) a quote
 * may claim: two notes of a batch of at least six (`insertBatch` < 600,000 gas;
 * a full batch of 32 ≈ 34,000).
 */
export const MAX_INSERTION_GAS = 225_000n;
/** The tip assumed at least, wei per gas. */
export const MIN_TIP_WEI = 1_000_000_000n;
/** How much the base fee can rise per block, basis points. */
export const BASE_FEE_RISE_BPS = 1_250;
/** Headroom of a max fee over the next base fee, basis points. */
export const MAX_FEE_HEADROOM_BPS = 2_500;
/** Factor between the caller's own figures and what a quoted fee figure may reach. */
export const QUOTE_TOLERANCE = 2n;
/** How much more a token fee may be worth than the ETH bound, basis points. */
export const TOKEN_PRICE_TOLERANCE_BPS = 1_000;
/** The default ceiling is this many times the caller's own estimate. */
export const DEFAULT_CEILING_FACTOR = 3n;

const BPS = 10_000n;
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** The caller's own reading of the chain's fees, wei per gas. */
export interface ChainReading {
  /** The latest block's base fee. */
  baseFee: bigint;
  /** `eth_maxPriorityFeePerGas`. */
  priorityFee: bigint;
}

/** The most a quote's fee figures may be, wei per gas. */
export interface FeeBounds {
  baseFee: bigint;
  priorityFee: bigint;
  maxFeePerGas: bigint;
}

/** A quote or a fee refused by the bounds; nothing should be proved or sent. */
export class QuoteRefusedError extends NoxError {
  /** The figure (`base_fee`, `payment_gas`, `price`, `ceiling`, …). */
  readonly figure: string;
  /** The quoted value (or the fee). */
  readonly quoted: bigint;
  /** The bound it broke. */
  readonly bound: bigint;

  constructor(figure: string, quoted: bigint, bound: bigint, message?: string) {
    super(
      "refused",
      message ??
        `the exit's quote is refused: its ${figure} is ${quoted}, above the bound ${bound} from this client's own reading of the chain`,
    );
    this.name = "QuoteRefusedError";
    this.figure = figure;
    this.quoted = quoted;
    this.bound = bound;
  }
}

const divCeil = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;
const scaleUp = (x: bigint, bps: number): bigint => divCeil(x * (BPS + BigInt(bps)), BPS);
const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** The most the next block's base fee can be (× 1.125). */
export function nextBaseFee(r: ChainReading): bigint {
  return scaleUp(r.baseFee, BASE_FEE_RISE_BPS);
}

/** The tip assumed: the chain's suggestion, at least 1 gwei. */
export function tip(r: ChainReading): bigint {
  return max(r.priorityFee, MIN_TIP_WEI);
}

/** The caller's own max fee per gas: next base fee × 1.25 + tip. */
export function ownMaxFeePerGas(r: ChainReading): bigint {
  return scaleUp(nextBaseFee(r), MAX_FEE_HEADROOM_BPS) + tip(r);
}

/** The bounds on a quote's fee figures. */
export function feeBounds(r: ChainReading): FeeBounds {
  const baseFee = scaleUp(nextBaseFee(r), BASE_FEE_RISE_BPS);
  return {
    baseFee,
    priorityFee: tip(r) * QUOTE_TOLERANCE,
    maxFeePerGas: (scaleUp(baseFee, MAX_FEE_HEADROOM_BPS) + tip(r)) * QUOTE_TOLERANCE,
  };
}

/** The default ceiling, wei. */
export function defaultCeilingWei(r: ChainReading, actionGas: bigint | number, ownDataFeeWei = 0n): bigint {
  // On an L2, plus 3 × the caller's own figure of the data fee (nox-pay's
  // `default_ceiling_with_data_fee_wei`).
  return DEFAULT_CEILING_FACTOR * ((MAX_PAYMENT_GAS + BigInt(actionGas)) * ownMaxFeePerGas(r) + ownDataFeeWei);
}

/** The most a quote's ETH price per million gas may be (the relayer's formula at its own bounded figures). */
export function ethPriceBound(quote: RelayQuote): bigint {
  const margin = Math.min(quote.margin_bps, MAX_MARGIN_BPS);
  return divCeil(1_000_000n * BigInt(quote.max_fee_per_gas) * (BPS + BigInt(margin)), BPS);
}

function atMost(figure: string, quoted: bigint, bound: bigint): void {
  if (quoted > bound) {
    throw new QuoteRefusedError(figure, quoted, bound);
  }
}

function priceOf(quote: RelayQuote, asset: string): bigint {
  const price = quote.prices.find((p) => p.asset.toLowerCase() === asset.toLowerCase());
  if (price === undefined) {
    throw new NoxError("refused", `the exit's quote has no price for ${asset}`);
  }
  return BigInt(price.per_million_gas);
}

/**
 * Checks every figure of `quote` against the caller's own `reading`, and the
 * price of the fee asset (`asset`, the zero address for ETH). For a token,
 * `tokenValueWei` is what the caller's own reading of the token's pair says
 * `per_million_gas` of it is worth in wei; without it a token fee is refused.
 */
export function checkQuote(
  quote: RelayQuote,
  reading: ChainReading,
  asset = ZERO_ADDRESS,
  tokenValueWei?: bigint,
  ownDataFeeWei = 0n,
): void {
  const b = feeBounds(reading);
  atMost("base_fee", BigInt(quote.base_fee), b.baseFee);
  atMost("priority_fee", BigInt(quote.priority_fee), b.priorityFee);
  atMost("max_fee_per_gas", BigInt(quote.max_fee_per_gas), b.maxFeePerGas);
  atMost("margin_bps", BigInt(quote.margin_bps), BigInt(MAX_MARGIN_BPS));
  atMost("gas_extra_bps", BigInt(quote.gas_extra_bps), BigInt(MAX_GAS_EXTRA_BPS));
  atMost("payment_gas", BigInt(quote.payment_gas), MAX_PAYMENT_GAS);
  atMost("insertion_gas", BigInt(quote.insertion_gas ?? 0), MAX_INSERTION_GAS);
  // An L2's data fee (issue 33): worth at most twice the caller's own figure of it at the
  // quote's max fee (`ownDataFeeWei`, 0 on an L1 or without a reading: then none is accepted).
  const maxFee = BigInt(quote.max_fee_per_gas);
  atMost("l1_data_gas", BigInt(quote.l1_data_gas ?? 0), maxFee === 0n ? 0n : divCeil(2n * ownDataFeeWei, maxFee));
  const price = priceOf(quote, asset);
  const ethBound = ethPriceBound(quote);
  if (BigInt(asset) === 0n) {
    atMost("price per million gas", price, ethBound);
  } else {
    if (tokenValueWei === undefined) {
      throw new NoxError("refused", `a fee in token ${asset} needs the caller's own reading of its price: pay in ETH`);
    }
    atMost("token price per million gas (in wei)", tokenValueWei, divCeil(ethBound * (BPS + BigInt(TOKEN_PRICE_TOLERANCE_BPS)), BPS));
  }
}

/**
 * The gas limit a quote prices (nox_relayer::price::gas_limit):
 * `(payment + ⌈action_gas · 64/63⌉) · (1 + extra) + 10 000`.
 */
export function gasLimit(payment: bigint, actionGas: bigint, extraBps: number): bigint {
  return scaleUp(payment + divCeil(actionGas * 64n, 63n), extraBps) + 10_000n;
}

/**
 * The fee `quote` asks in `asset` for an action of `actionGas` (0: a payment-only
 * bundle), at `percent` % (125 as `nox tx`): the gas limit plus the outputs'
 * insertion share plus an L2's data fee as gas (`Quote::fee_for_action`).
 */
export function feeFromQuote(quote: RelayQuote, asset: string, actionGas: bigint | number, percent = 125): bigint {
  const gas =
    gasLimit(BigInt(quote.payment_gas), BigInt(actionGas), quote.gas_extra_bps) +
    BigInt(quote.insertion_gas ?? 0) +
    BigInt(quote.l1_data_gas ?? 0);
  const priced = divCeil(priceOf(quote, asset) * gas, 1_000_000n);
  return (priced * BigInt(percent)) / 100n;
}

/**
 * Checks the fee about to be proved against the ceiling: `maxFee` (in the
 * asset) if the user gave one, else the default in wei on `feeValueWei`.
 */
export function checkCeiling(
  fee: bigint,
  feeValueWei: bigint,
  ceiling: { maxFee: bigint } | { defaultWei: bigint },
): void {
  if ("maxFee" in ceiling) {
    if (fee > ceiling.maxFee) {
      throw new QuoteRefusedError("fee", fee, ceiling.maxFee, `the fee ${fee} is above the ceiling ${ceiling.maxFee} (maxFee)`);
    }
  } else if (feeValueWei > ceiling.defaultWei) {
    throw new QuoteRefusedError(
      "fee",
      feeValueWei,
      ceiling.defaultWei,
      `the fee ${feeValueWei} wei is above the default ceiling ${ceiling.defaultWei} wei (3 × (600,000 + action gas) × own max fee per gas)`,
    );
  }
}

/** An EIP-1193 provider (a `NoxProvider`: reads go through the mixnet). */
export interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

/** The caller's own fee reading through `provider`: the latest base fee and the suggested tip. */
export async function readChainFees(provider: Eip1193): Promise<ChainReading> {
  const block = (await provider.request({ method: "eth_getBlockByNumber", params: ["latest", false] })) as {
    baseFeePerGas?: string;
  } | null;
  if (block === null) {
    throw new NoxError("refused", "the chain has no latest block");
  }
  const priority = (await provider.request({ method: "eth_maxPriorityFeePerGas", params: [] })) as string;
  return { baseFee: BigInt(block.baseFeePerGas ?? 0), priorityFee: BigInt(priority) };
}
