// The shielded wallet in the SDK (issue 31): a seed held in memory, the pool view synced from the
// chain through the caller's provider (a NoxProvider: every `eth_getLogs` crosses the mixnet), the
// shielded address and balances. The keys, note opening, the pool view and its JSON are nox-wasm's,
// the same Rust `nox wallet` runs: a seed gives the same address and, over the same chain, the same
// notes in either.

import type { Eip1193 } from "./bounds.js";
import { NoxError } from "./errors.js";
import { NoxWasm } from "./nox_wasm.mjs";

/** Blocks per `eth_getLogs` page (`nox_chain::pool_sync::LOG_PAGE`: an exit's default bound). */
export const LOG_PAGE = 1000;

/** One asset's balance (`nox wallet balance`'s figures; amounts are decimal strings of base units). */
export interface AssetBalance {
  /** `uint160(asset)` as a 32-byte hex word (0 for ETH). */
  asset: string;
  /** In inserted notes: spendable now. */
  spendable: string;
  /** In notes queued for insertion (change, fresh payments): spendable once inserted. */
  pending: string;
  largest: string;
  largest_pair: string;
  notes: number;
}

/** The wallet's balances and the view's position. */
export interface WalletBalances {
  root: string;
  next_leaf: number;
  assets: AssetBalance[];
}

/** What a sync did. */
export interface SyncReport {
  /** The chain's head when the sync started: the view is synced to it. */
  head: number;
  /** Pool logs read. */
  logs: number;
  /** Milliseconds spent. */
  ms: number;
}

/** How to open a wallet. */
export interface WalletOptions {
  /** The 32-byte wallet seed (`nox wallet`'s `seed` file holds the same). Kept in memory only. */
  seed: Uint8Array;
  /** The nox-wasm module: its bytes, a compiled module, or an instance (shared with other users). */
  module: BufferSource | WebAssembly.Module | NoxWasm;
  /** Where chain reads go: a NoxProvider (through the mixnet). */
  provider: Eip1193;
  /** The shielded pool (0x, 20 bytes). */
  pool: string;
  /** The pool's deployment block (nothing before it is read). */
  fromBlock?: number;
  /** A view saved earlier (`wallet.view`): sync resumes from its last block. */
  view?: string;
}

function hexBytes(text: string, length: number, what: string): Uint8Array {
  const clean = text.startsWith("0x") ? text.slice(2) : text;
  if (clean.length !== 2 * length || !/^[0-9a-fA-F]*$/.test(clean)) {
    throw new NoxError("bad-input", `${what}: expected ${length} bytes of hex`);
  }
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = Number.parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** A shielded wallet synced from the chain through the mixnet. */
export class NoxWallet {
  readonly #m: NoxWasm;
  readonly #seed: Uint8Array;
  readonly #provider: Eip1193;
  readonly #pool: string;
  readonly #fromBlock: number;
  #view: string;
  #syncing: Promise<SyncReport> | undefined;
  /** The shielded payment address (`nox1…`), as `nox wallet address` prints it. */
  readonly address: string;

  private constructor(m: NoxWasm, options: WalletOptions) {
    if (!(options.seed instanceof Uint8Array) || options.seed.length !== 32) {
      throw new NoxError("bad-input", "the wallet seed must be 32 bytes");
    }
    this.#m = m;
    this.#seed = options.seed.slice();
    this.#provider = options.provider;
    hexBytes(options.pool, 20, "pool");
    this.#pool = options.pool.toLowerCase();
    this.#fromBlock = options.fromBlock ?? 0;
    this.#view = options.view ?? "";
    this.address = m.walletAddress(this.#seed);
  }

  /** Opens the wallet (no chain read yet: call `sync`). */
  static async open(options: WalletOptions): Promise<NoxWallet> {
    const m = options.module instanceof NoxWasm ? options.module : await NoxWasm.instantiate(options.module);
    return new NoxWallet(m, options);
  }

  /** The shielded pool. */
  get pool(): string {
    return this.#pool;
  }

  /** The pool view's JSON (`nox wallet`'s state format): save it to resume a sync. */
  get view(): string {
    return this.#view;
  }

  /** The last block the view has read. */
  get lastBlock(): number {
    if (this.#view === "") return 0;
    return (JSON.parse(this.#view) as { last_block?: number }).last_block ?? 0;
  }

  /**
   * Reads the pool's events since the view's last block, page by page, through the provider,
   * and applies them (new notes, spends, insertions). A concurrent call waits for the running one.
   */
  sync(): Promise<SyncReport> {
    if (this.#syncing === undefined) {
      this.#syncing = this.#sync().finally(() => {
        this.#syncing = undefined;
      });
    }
    return this.#syncing;
  }

  async #sync(): Promise<SyncReport> {
    const started = performance.now();
    const head = Number(BigInt((await this.#provider.request({ method: "eth_blockNumber", params: [] })) as string));
    let from = Math.max(this.lastBlock + 1, this.#fromBlock);
    let view = this.#view;
    let logs = 0;
    const pool = hexBytes(this.#pool, 20, "pool");
    while (from <= head) {
      const to = Math.min(from + LOG_PAGE - 1, head);
      const page = (await this.#provider.request({
        method: "eth_getLogs",
        params: [{ address: this.#pool, fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }],
      })) as unknown[];
      if (!Array.isArray(page)) throw new NoxError("refused", "eth_getLogs did not answer an array");
      view = this.#m.walletSync(this.#seed, view, page, pool, to);
      logs += page.length;
      from = to + 1;
    }
    this.#view = view;
    return { head, logs, ms: performance.now() - started };
  }

  /** Balances per asset, from the view as last synced. */
  balances(): WalletBalances {
    return this.#m.walletBalances(this.#view) as WalletBalances;
  }

  /** The balance of one asset (ETH by default): spendable and pending, in base units. */
  balance(asset = "0x0000000000000000000000000000000000000000"): { spendable: bigint; pending: bigint } {
    const word = BigInt(asset);
    const a = this.balances().assets.find((x) => BigInt(`0x${x.asset}`) === word);
    return { spendable: BigInt(a?.spendable ?? 0), pending: BigInt(a?.pending ?? 0) };
  }

  /**
   * The seed sealed under `passphrase` in `nox wallet`'s `wallet.key` format (Argon2id,
   * ChaCha20-Poly1305): `nox wallet restore --from <file>` restores this wallet natively.
   */
  exportKeyFile(passphrase: string): Uint8Array {
    return this.#m.walletSealKey(this.#seed, passphrase);
  }

  /** @internal The seed, for the prover Worker (a copy). */
  seedCopy(): Uint8Array {
    return this.#seed.slice();
  }

  /** @internal The module (execution hash, bundle encoding). */
  get module(): NoxWasm {
    return this.#m;
  }
}
