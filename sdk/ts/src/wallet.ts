// The shielded wallet in the SDK (issue 31): a seed held in memory, the pool view synced from the
// chain through the caller's provider (a NoxProvider: every `eth_getLogs` crosses the mixnet), the
// shielded address and balances. The keys, note opening, the pool view and its JSON are nox-wasm's,
// the same Rust `nox wallet` runs: a seed gives the same address and, over the same chain, the same
// notes in either.
//
// Kept between page loads (sealed): `NoxWallet.create` / `restore` / `unlock` seal the seed under a
// passphrase in `nox wallet`'s `wallet.key` format (seal.ts) and keep it, with the pool view
// sealed in `nox wallet`'s `state` format and the sync cursor, in a WalletStore (store.ts:
// IndexedDB in browsers); the synced view is saved at least every LOG_PAGE blocks and at the head, so a reload resumes at the next
// block instead of the pool's first.

import type { Eip1193 } from "./bounds.js";
import { NoxError } from "./errors.js";
import { NoxWasm } from "./nox_wasm.mjs";
import { SEED_LEN, openSeed, openState, sealSeed, sealState, wipe } from "./seal.js";
import type { SyncCursor, WalletStore } from "./store.js";
import type { WalletSyncWorker } from "./wallet-sync.js";

/**
 * Blocks per `eth_getLogs` page at most (`nox_chain::pool_sync::LOG_PAGE`: an exit's default
 * bound). A page whose answer does not fit the reply (refused `too-large` or `not-enough-surbs`:
 * the request's SURBs carry ~255 × 3.7 KiB at most, 16 KiB by default, and a pool log is ~1 KB of
 * JSON) is asked again as two halves, down to one block; the span doubles again (up to
 * `LOG_PAGE`) after an answer of at most half the most logs an answer carried in this sync.
 */
export const LOG_PAGE = 1000;

/** An `eth_getLogs` refusal that a smaller block range can avoid: the answer was too large. */
function answerTooLarge(error: unknown): boolean {
  const statusOf = (e: unknown): unknown =>
    typeof e === "object" && e !== null
      ? ((e as { status?: unknown }).status ?? (e as { data?: { status?: unknown } }).data?.status)
      : undefined;
  const status = statusOf(error) ?? statusOf((error as { cause?: unknown } | null)?.cause);
  return status === "too-large" || status === "not-enough-surbs";
}

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
  /** `eth_getLogs` pages read. */
  pages: number;
  /** Pages refused as too large and asked again in halves. */
  halved: number;
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
  /**
   * Runs each page's trial decryption in this Worker instead of on the caller's thread (a
   * browser page: ~265 ms per 1,000 logs otherwise, a long task per page). The caller starts
   * (`WalletSyncWorker.start`) and terminates it; one Worker can serve several wallets.
   */
  syncWorker?: WalletSyncWorker;
}

/** Where a sealed wallet is kept, and under which passphrase. */
export interface SealedWalletOptions extends Omit<WalletOptions, "seed" | "view"> {
  /**
   * The passphrase the seed is sealed under (Argon2id). A `Uint8Array` is wiped after use; a
   * string cannot be (JavaScript strings are immutable).
   */
  passphrase: string | Uint8Array;
  /** Where the sealed key, the sealed view and the sync cursor are kept (IndexedDbWalletStore in a browser). */
  store?: WalletStore;
  /** The wallet's name in the store (default "default"). */
  walletId?: string;
}

function equal(a: Uint8Array, b: Uint8Array | undefined): boolean {
  return b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
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
  #store: { store: WalletStore; id: string } | undefined;
  #closed = false;
  #sealedKey: Uint8Array | undefined;
  readonly #provider: Eip1193;
  readonly #pool: string;
  readonly #fromBlock: number;
  #view: string;
  #syncing: Promise<SyncReport> | undefined;
  readonly #syncWorker: WalletSyncWorker | undefined;
  /** The balances of `view`, read by the sync Worker (`balances()` then parses nothing here). */
  #balances: { view: string; balances: WalletBalances } | undefined;
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
    this.#syncWorker = options.syncWorker;
    this.address = m.walletAddress(this.#seed);
  }

  /** Opens the wallet (no chain read yet: call `sync`). The caller keeps (and wipes) its `seed`. */
  static async open(options: WalletOptions): Promise<NoxWallet> {
    const m = options.module instanceof NoxWasm ? options.module : await NoxWasm.instantiate(options.module);
    return new NoxWallet(m, options);
  }

  /**
   * A new wallet: a fresh seed from the platform's CSPRNG, sealed under `passphrase` and kept in
   * `store` (if given) under `walletId`. Refused if the store already holds a wallet of that id.
   */
  static async create(options: SealedWalletOptions): Promise<NoxWallet> {
    const seed = crypto.getRandomValues(new Uint8Array(SEED_LEN));
    try {
      return await NoxWallet.#sealed(options, seed, undefined, true);
    } finally {
      wipe(seed);
      if (options.passphrase instanceof Uint8Array) wipe(options.passphrase);
    }
  }

  /**
   * The wallet of a sealed key (`wallet.key`: from `exportKeyFile`, another page, or `nox wallet
   * new`). With a store, the sealed key is kept there and the sync resumes from the view stored
   * under `walletId` (if any: it must be this wallet's and this pool's). A wrong passphrase or an
   * altered byte throws `NoxError` "wrong-passphrase"; another format "bad-key-file".
   */
  static async restore(options: SealedWalletOptions & { sealed: Uint8Array }): Promise<NoxWallet> {
    const m = options.module instanceof NoxWasm ? options.module : await NoxWasm.instantiate(options.module);
    let seed: Uint8Array | undefined;
    try {
      seed = openSeed(m, options.sealed, options.passphrase);
      return await NoxWallet.#sealed({ ...options, module: m }, seed, options.sealed.slice(), false);
    } finally {
      wipe(seed);
      if (options.passphrase instanceof Uint8Array) wipe(options.passphrase);
    }
  }

  /** The wallet kept in `store` under `walletId` (a page reload): its sealed key opened with `passphrase`. */
  static async unlock(options: SealedWalletOptions & { store: WalletStore }): Promise<NoxWallet> {
    const record = await options.store.get(options.walletId ?? "default");
    if (record?.sealedKey === undefined) {
      throw new NoxError("bad-input", `no sealed wallet "${options.walletId ?? "default"}" in the store`);
    }
    return NoxWallet.restore({ ...options, sealed: record.sealedKey });
  }

  static async #sealed(
    options: SealedWalletOptions,
    seed: Uint8Array,
    sealed: Uint8Array | undefined,
    fresh: boolean,
  ): Promise<NoxWallet> {
    const m = options.module instanceof NoxWasm ? options.module : await NoxWasm.instantiate(options.module);
    const id = options.walletId ?? "default";
    const record = await options.store?.get(id);
    if (fresh && record !== undefined) {
      throw new NoxError("bad-input", `the store already holds a wallet "${id}" (delete it first)`);
    }
    let view: string | undefined;
    const pool = options.pool.toLowerCase();
    if (record?.state !== undefined && record.cursor !== undefined) {
      if (record.cursor.pool !== pool) {
        throw new NoxError("bad-input", `wallet "${id}" in the store is of pool ${record.cursor.pool}, not ${pool}`);
      }
      try {
        view = openState(m, seed, record.state);
      } catch (e) {
        throw new NoxError("bad-input", `wallet "${id}" in the store belongs to another seed, or its state was altered`, {
          cause: e,
        });
      }
    }
    if (!fresh && view === undefined && record?.sealedKey !== undefined && !equal(record.sealedKey, sealed)) {
      // Never overwrite what may be another wallet's only sealed key.
      throw new NoxError("bad-input", `the store holds another sealed key under "${id}" (delete it first)`);
    }
    const wallet = new NoxWallet(m, { ...options, module: m, seed, ...(view === undefined ? {} : { view }) });
    wallet.#sealedKey = sealed ?? sealSeed(m, seed, options.passphrase);
    if (options.store !== undefined) {
      wallet.#store = { store: options.store, id };
      // The key already stored under this id opens this wallet's state: it stays.
      if (record?.sealedKey === undefined) await options.store.put(id, { sealedKey: wallet.#sealedKey });
    }
    return wallet;
  }

  /** The shielded pool. */
  get pool(): string {
    return this.#pool;
  }

  /** The pool view's JSON (`nox wallet`'s state format): save it to resume a sync. */
  get view(): string {
    this.#check();
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
    this.#check();
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
    let pages = 0;
    let halved = 0;
    let span = LOG_PAGE;
    // The most logs one answer carried: a page of at most half as many may double its span again.
    let mostLogs = 0;
    // The last block whose view is in the store: a view is saved at the head and otherwise once
    // per LOG_PAGE blocks, so small pages (a busy pool through the mixnet) do not seal and write
    // the whole view (2 MB for 10,000 notes) each.
    let savedAt = from - 1;
    const pool = hexBytes(this.#pool, 20, "pool");
    while (from <= head) {
      const to = Math.min(from + span - 1, head);
      let page: unknown[];
      try {
        page = (await this.#provider.request({
          method: "eth_getLogs",
          params: [{ address: this.#pool, fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }],
        })) as unknown[];
      } catch (error) {
        if (to > from && answerTooLarge(error)) {
          span = Math.ceil((to - from + 1) / 2);
          halved++;
          this.#check();
          continue;
        }
        throw error;
      }
      if (!Array.isArray(page)) throw new NoxError("refused", "eth_getLogs did not answer an array");
      pages++;
      mostLogs = Math.max(mostLogs, page.length);
      if (span < LOG_PAGE && 2 * page.length <= mostLogs) span = Math.min(LOG_PAGE, 2 * span);
      this.#check();
      let sealed: Uint8Array | undefined;
      const save = this.#store !== undefined && (to === head || to - savedAt >= LOG_PAGE);
      if (this.#syncWorker !== undefined) {
        const synced = await this.#syncWorker.sync(this.#seed, view, page, pool, to, {
          balances: to === head,
          seal: save,
        });
        this.#check(); // closed while the Worker ran
        view = synced.view;
        sealed = synced.sealed;
        if (synced.balances !== undefined) this.#balances = { view, balances: synced.balances };
      } else {
        view = this.#m.walletSync(this.#seed, view, page, pool, to);
      }
      logs += page.length;
      from = to + 1;
      this.#view = view;
      if (save) {
        await this.#save(to, sealed);
        savedAt = to;
      }
    }
    this.#view = view;
    return { head, logs, ms: performance.now() - started, pages, halved };
  }

  /**
   * Saves the view (sealed: `sealed` if the sync Worker sealed it, else here) and its cursor in
   * one store write: a reload resumes after `lastBlock`.
   */
  async #save(lastBlock: number, sealed?: Uint8Array): Promise<void> {
    if (this.#store === undefined) return;
    const cursor: SyncCursor = { pool: this.#pool, fromBlock: this.#fromBlock, lastBlock };
    await this.#store.store.put(this.#store.id, { state: sealed ?? sealState(this.#m, this.#seed, this.#view), cursor });
  }

  #check(): void {
    if (this.#closed) throw new NoxError("closed", "the wallet was closed (its seed wiped)");
  }

  /** Wipes the seed from memory (zeroes its bytes); the wallet refuses every later call. */
  close(): void {
    wipe(this.#seed);
    this.#closed = true;
  }

  /**
   * Balances per asset, from the view as last synced. With a `syncWorker` the sync's last page
   * reads them in the Worker; otherwise (and for a view not synced here) the module parses the
   * view on this thread (~40–90 ms for a 10,000-note pool's 2 MB view in Chromium).
   */
  balances(): WalletBalances {
    if (this.#balances !== undefined && this.#balances.view === this.#view) return structuredClone(this.#balances.balances);
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
  exportKeyFile(passphrase: string | Uint8Array): Uint8Array {
    this.#check();
    return sealSeed(this.#m, this.#seed, passphrase);
  }

  /**
   * The seed sealed under the passphrase it was created or restored with (`wallet.key`'s bytes:
   * what the store keeps; `nox wallet restore --from` opens it). Undefined for `open`.
   */
  get sealedKey(): Uint8Array | undefined {
    return this.#sealedKey?.slice();
  }

  /** @internal The seed, for the prover Worker (a copy). */
  seedCopy(): Uint8Array {
    this.#check();
    return this.#seed.slice();
  }

  /** @internal The module (execution hash, bundle encoding). */
  get module(): NoxWasm {
    return this.#m;
  }
}
