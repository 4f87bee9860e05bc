// Private paid transactions from the SDK (issue 31): what `nox tx send` (an action) and
// `nox tx withdraw` (value to an address) do natively, step by step and with the same rules:
//
// 1. ask an exit's relayer for its quote through the mixnet (`relayQuote`);
// 2. check every figure of it against this client's OWN reading of the chain, taken through its
//    own provider (a NoxProvider: through the mixnet, never from the exit that quotes) — the
//    higher base fee of the latest block and of the quote's block (at most 64 blocks old) — and
//    the fee (125 % of the quoted price) against a ceiling (bounds.ts = nox-pay's bounds);
// 3. sync the shielded wallet, prepare the transaction that pays that fee to that relayer, bound
//    to the action's execution hash, and prove it in the prover Worker;
// 4. encode `BatchExecutor.execute(Bundle)` (nox-wasm: nox-relayer's ABI, as nox-pay) and hand it
//    to the same exit's relayer (`relaySubmit`), which answers once it is mined.

import {
  type ChainReading,
  type Eip1193,
  checkCeiling,
  checkQuote,
  defaultCeilingWei,
  feeFromQuote,
} from "./bounds.js";
import { NoxError } from "./errors.js";
import { ownDataFeeWei } from "./rollup-fee.js";
import type { ProvedTransfer, ProverProgress, TransferProver } from "./prover.js";
import type { RelayOutcome, RelayQuote, RelaySubmission } from "./relay.js";
import type { NoxWallet } from "./wallet.js";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** How many blocks before the client's latest block a quote may have been read at (as `nox tx`). */
export const MAX_QUOTE_AGE_BLOCKS = 64;
/** The fee paid, in percent of the quoted price (`nox tx --fee-percent`'s default). */
export const DEFAULT_FEE_PERCENT = 125;
/** Gas an action is given when the transaction names none (`nox tx send --action-gas`'s default). */
export const DEFAULT_ACTION_GAS = 100_000;

/** The relay side of a `NoxClient`. */
export interface Relay {
  relayQuote(exit?: string): Promise<{ exit: string; quote: RelayQuote }>;
  relaySubmit(exit: string, submission: RelaySubmission, options?: { timeoutMs?: number }): Promise<RelayOutcome>;
}

/** A transaction to send privately: what `eth_sendTransaction` carries (hex quantities or bigints). */
export interface PrivateTransaction {
  /** The called contract, or the receiver of `value`. */
  to: string;
  /** Calldata (hex); a call with data is a paid action made by the relayer's BatchExecutor. */
  data?: string;
  /**
   * Wei to `to` out of the shielded balance (a paid withdrawal; only without `data`: relayers
   * do not front value to a call).
   */
  value?: string | bigint | number;
  /** The action's gas (bound into the payment); default 100,000. */
  gas?: string | bigint | number;
}

/** A sent private transaction. */
export interface PrivateSent {
  txHash: string;
  /** The relayer's answer (`included` with its block and gas, or `pending`). */
  outcome: RelayOutcome;
  /** The fee paid, wei. */
  fee: bigint;
  /** The exit (node id) whose relayer sent it. */
  exit: string;
  /** Milliseconds per part: quote, own reading and bounds, sync, proof, submission to answer. */
  timings: { quoteMs: number; boundsMs: number; syncMs: number; proveMs: number; submitMs: number };
}

/** Settings of the private sender. */
export interface PrivateSenderOptions {
  wallet: NoxWallet;
  prover: TransferProver;
  /** The relay client (a NoxClient). */
  relay: Relay;
  /** This client's own chain reads (a NoxProvider of the same client: through the mixnet). */
  provider: Eip1193;
  /** The exit to use (node id); default a random exit per transaction. */
  exit?: string;
  /** Percent of the quoted price paid (default 125). */
  feePercent?: number;
  /** The most one transaction may pay, wei; default 3 × (600,000 + action gas) × own max fee. */
  maxFee?: bigint;
  /** Seconds the payment stays valid (default 600). */
  validFor?: number;
  /** Milliseconds to wait for the relayer's answer (it answers once the transaction is mined). */
  submitTimeoutMs?: number;
  /** Stages of the proof (the Worker's progress). */
  onProgress?: (p: ProverProgress) => void;
}

function quantity(x: string | bigint | number | undefined, what: string): bigint {
  if (x === undefined) return 0n;
  try {
    const v = BigInt(x);
    if (v < 0n) throw new Error("negative");
    return v;
  } catch {
    throw new NoxError("bad-input", `${what}: not a quantity`);
  }
}

async function rpc<T>(provider: Eip1193, method: string, params: unknown[] = []): Promise<T> {
  return (await provider.request({ method, params })) as T;
}

/**
 * This client's own fee reading (`nox tx`'s `fee_reading`): the higher of the base fees of its
 * latest block and of the block the quote names (refused if that is more than 64 blocks old),
 * and the suggested tip.
 */
export async function readQuoteFees(provider: Eip1193, quoteBlock: number): Promise<ChainReading & { latest: bigint; timestamp: bigint }> {
  const block = await rpc<{ number: string; baseFeePerGas?: string; timestamp: string } | null>(
    provider,
    "eth_getBlockByNumber",
    ["latest", false],
  );
  if (block === null) throw new NoxError("refused", "reading the base fee: no latest block");
  const latest = BigInt(block.number);
  let baseFee = BigInt(block.baseFeePerGas ?? 0);
  const q = BigInt(quoteBlock);
  if (q < latest) {
    if (latest - q > BigInt(MAX_QUOTE_AGE_BLOCKS)) {
      throw new NoxError(
        "refused",
        `the exit's quote was read at block ${q}, ${latest - q} blocks before this client's latest block ${latest} ` +
          `(at most ${MAX_QUOTE_AGE_BLOCKS}): ask for a fresh quote; nothing was proved, spent or sent`,
      );
    }
    const at = await rpc<{ baseFeePerGas?: string } | null>(provider, "eth_getBlockByNumber", [`0x${q.toString(16)}`, false]);
    if (at === null) throw new NoxError("refused", `reading the base fee at the quote's block ${q}: no such block`);
    const b = BigInt(at.baseFeePerGas ?? 0);
    if (b > baseFee) baseFee = b;
  }
  const priorityFee = BigInt(await rpc<string>(provider, "eth_maxPriorityFeePerGas"));
  return { baseFee, priorityFee, latest, timestamp: BigInt(block.timestamp) };
}

/** Sends private paid transactions from a shielded wallet. */
export class PrivateSender {
  readonly #o: PrivateSenderOptions;
  /** One transaction at a time: two at once would pick the same notes. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Nullifiers of transactions the relayer broadcast but had not mined when it answered. */
  readonly #pending: string[] = [];

  constructor(options: PrivateSenderOptions) {
    this.#o = options;
  }

  /** The wallet it pays from. */
  get wallet(): NoxWallet {
    return this.#o.wallet;
  }

  /**
   * Quote, bound, sync, prove, submit; resolves once the relayer answers with the transaction
   * mined (or broadcast and still pending). Rejects with a `NoxError` (a `QuoteRefusedError`
   * when the quote or the fee broke a bound: then nothing was proved, spent or sent).
   */
  send(tx: PrivateTransaction): Promise<PrivateSent> {
    const run = this.#queue.then(
      () => this.#send(tx),
      () => this.#send(tx),
    );
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #send(tx: PrivateTransaction): Promise<PrivateSent> {
    const o = this.#o;
    const wallet = o.wallet;
    if (typeof tx !== "object" || tx === null || typeof tx.to !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(tx.to)) {
      throw new NoxError("bad-input", "a private transaction needs `to` (0x, 20 bytes): contract creation is not relayed");
    }
    const data = tx.data ?? "0x";
    if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) throw new NoxError("bad-input", "data: expected 0x-prefixed hex bytes");
    const value = quantity(tx.value, "value");
    const hasData = data.length > 2;
    if (value > 0n && hasData) {
      throw new NoxError(
        "bad-input",
        "a private call cannot carry value (relayers do not front it): send the value first, then the call",
      );
    }
    // A payment-only bundle (value to `to`, as `nox tx withdraw`), or a paid call (`nox tx send`).
    const withdrawal = value > 0n || !hasData;
    const action = withdrawal
      ? { target: ZERO_ADDRESS, data: "0x", gas: 0 }
      : { target: tx.to, data, gas: Number(tx.gas === undefined ? BigInt(DEFAULT_ACTION_GAS) : quantity(tx.gas, "gas")) };
    if (!Number.isSafeInteger(action.gas)) throw new NoxError("bad-input", "gas: too large");

    const t0 = performance.now();
    const { exit, quote } = await o.relay.relayQuote(o.exit);
    const t1 = performance.now();
    const chainId = BigInt(await rpc<string>(o.provider, "eth_chainId"));
    if (BigInt(quote.chain_id) !== chainId || quote.pool.toLowerCase() !== wallet.pool) {
      throw new NoxError(
        "refused",
        `the exit's relayer serves pool ${quote.pool} on chain ${quote.chain_id}, this wallet pool ${wallet.pool} on chain ${chainId}`,
      );
    }
    const reading = await readQuoteFees(o.provider, quote.block);
    // On an L2 the quote's data fee is bounded by this client's own figure of it (0 on an L1:
    // then any claimed data fee is refused), read through its own provider.
    const actionLen = (action.data.length - 2) / 2;
    const ownDataFee = await ownDataFeeWei(o.provider, chainId, wallet.module.payDataFeeSample(wallet.pool, actionLen));
    checkQuote(quote, reading, ZERO_ADDRESS, undefined, ownDataFee);
    const fee = feeFromQuote(quote, ZERO_ADDRESS, action.gas, o.feePercent ?? DEFAULT_FEE_PERCENT);
    checkCeiling(
      fee,
      fee,
      o.maxFee !== undefined ? { maxFee: o.maxFee } : { defaultWei: defaultCeilingWei(reading, action.gas, ownDataFee) },
    );
    if (hasData && !withdrawal) {
      // A call with calldata to an address without code does nothing and still pays (`nox tx send`).
      const code = await rpc<string>(o.provider, "eth_getCode", [tx.to, "latest"]);
      if (code === "0x" || code === "") {
        throw new NoxError("bad-input", `${tx.to} has no code: a call to it would do nothing and still pay the fee`);
      }
    }
    const t2 = performance.now();
    await wallet.sync();
    const t3 = performance.now();
    const executionHash = wallet.module.payExecutionHash({ ...action, fee: fee.toString() });
    const request: Record<string, unknown> = {
      outputs: [],
      fee: fee.toString(),
      relayer: quote.relayer,
      execution_hash: Array.from(executionHash, (b) => b.toString(16).padStart(2, "0")).join(""),
      chain_id: Number(chainId),
      pool: wallet.pool,
      deadline: Number(reading.timestamp) + (o.validFor ?? 600),
      // Notes of a transaction still pending are not spent again (the sync has not seen it yet).
      avoid: [...this.#pending],
    };
    if (value > 0n) {
      request.public_out = value.toString();
      request.recipient = tx.to;
    }
    let proved: ProvedTransfer;
    const seed = wallet.seedCopy();
    try {
      proved = await o.prover.prove({ seed, view: wallet.view, request }, o.onProgress);
    } catch (e) {
      throw new NoxError("bad-input", `the wallet could not prove the payment: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      seed.fill(0); // the Worker got its own copy (structured clone)
    }
    const t4 = performance.now();
    const calldata = wallet.module.payBundle(proved.description, proved.proof, { pool: wallet.pool, ...action });
    const outcome = await o.relay.relaySubmit(
      exit,
      { chainId, executor: quote.executor, relayer: quote.relayer, calldata },
      o.submitTimeoutMs !== undefined ? { timeoutMs: o.submitTimeoutMs } : undefined,
    );
    const t5 = performance.now();
    if (outcome.outcome === "refused") {
      throw new NoxError(
        "refused",
        `the relayer refused the bundle (${outcome.reason}): ${outcome.detail}` +
          (outcome.required_fee !== undefined ? `; a fee of at least ${outcome.required_fee} would be accepted now` : ""),
      );
    }
    if (outcome.outcome === "simulated") throw new NoxError("refused", "the relayer only simulated the bundle");
    if (outcome.outcome === "pending") this.#pending.push(...proved.description.inputs.map((i) => i.nullifier));
    return {
      txHash: outcome.tx_hash,
      outcome,
      fee,
      exit,
      timings: { quoteMs: t1 - t0, boundsMs: t2 - t1, syncMs: t3 - t2, proveMs: t4 - t3, submitMs: t5 - t4 },
    };
  }
}
