// Where a browser wallet keeps itself between page loads (issue 31): the sealed seed
// (`wallet.key`), the sealed pool view (`nox wallet`'s `state` format: the notes, their spent
// marks, the tree and the last block read) and the sync cursor, one record set per wallet id.
// `IndexedDbWalletStore` in browsers (one database per wallet id), `MemoryWalletStore` in Node
// (which has no IndexedDB) and tests. Nothing here is readable without the seed except the
// cursor (the pool, the first and last block read).

import { NoxError } from "./errors.js";

/** Where a wallet's sync stands (kept in the clear: no note, no key). */
export interface SyncCursor {
  /** The shielded pool the view is of (0x, lower case). */
  pool: string;
  /** The pool's deployment block: nothing before it is read. */
  fromBlock: number;
  /** The last block the sealed view has read: a sync resumes at the next one. */
  lastBlock: number;
}

/** One wallet's stored records. */
export interface WalletRecord {
  /** The seed sealed under the passphrase (`wallet.key`'s bytes). */
  sealedKey?: Uint8Array;
  /** The pool view sealed under the seed's state key (`nox wallet`'s `state` file's bytes). */
  state?: Uint8Array;
  /** The sync cursor matching `state`. */
  cursor?: SyncCursor;
}

/** A wallet store: records per wallet id. `put` replaces only the fields it is given, atomically. */
export interface WalletStore {
  get(walletId: string): Promise<WalletRecord | undefined>;
  put(walletId: string, record: WalletRecord): Promise<void>;
  /** Forgets the wallet (its sealed key, state and cursor). */
  delete(walletId: string): Promise<void>;
}

function checkId(walletId: string): void {
  if (typeof walletId !== "string" || walletId.length === 0 || walletId.length > 128) {
    throw new NoxError("bad-input", "a wallet id is a non-empty string of at most 128 characters");
  }
}

function copy(r: WalletRecord): WalletRecord {
  const out: WalletRecord = {};
  if (r.sealedKey !== undefined) out.sealedKey = r.sealedKey.slice();
  if (r.state !== undefined) out.state = r.state.slice();
  if (r.cursor !== undefined) out.cursor = { ...r.cursor };
  return out;
}

/** Records in memory (Node, tests): gone with the process. Copies in and out. */
export class MemoryWalletStore implements WalletStore {
  readonly #wallets = new Map<string, WalletRecord>();

  async get(walletId: string): Promise<WalletRecord | undefined> {
    checkId(walletId);
    const r = this.#wallets.get(walletId);
    return r === undefined ? undefined : copy(r);
  }

  async put(walletId: string, record: WalletRecord): Promise<void> {
    checkId(walletId);
    this.#wallets.set(walletId, { ...this.#wallets.get(walletId), ...copy(record) });
  }

  async delete(walletId: string): Promise<void> {
    checkId(walletId);
    this.#wallets.delete(walletId);
  }
}

const OBJECTS = "wallet";
const FIELDS = ["sealedKey", "state", "cursor"] as const;

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(new NoxError("bad-input", `IndexedDB: ${String(r.error)}`, { cause: r.error }));
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    const fail = () => reject(new NoxError("bad-input", `IndexedDB: ${String(tx.error)}`, { cause: tx.error }));
    tx.onerror = fail;
    tx.onabort = fail;
  });
}

/**
 * Records in IndexedDB: one database per wallet id (`<prefix><walletId>`) with one object
 * store whose keys are the record's fields; a `put` is one transaction (the sealed state and its
 * cursor change together, so a reload never resumes a cursor ahead of its notes).
 */
export class IndexedDbWalletStore implements WalletStore {
  readonly #idb: IDBFactory;
  readonly #prefix: string;

  constructor(options: { prefix?: string; indexedDB?: IDBFactory } = {}) {
    const idb = options.indexedDB ?? globalThis.indexedDB;
    if (idb === undefined) throw new NoxError("bad-input", "no IndexedDB here (in Node, use MemoryWalletStore)");
    this.#idb = idb;
    this.#prefix = options.prefix ?? "nox-wallet:";
  }

  async #open(walletId: string): Promise<IDBDatabase> {
    checkId(walletId);
    const r = this.#idb.open(this.#prefix + walletId, 1);
    r.onupgradeneeded = () => {
      if (!r.result.objectStoreNames.contains(OBJECTS)) r.result.createObjectStore(OBJECTS);
    };
    return request(r);
  }

  async get(walletId: string): Promise<WalletRecord | undefined> {
    const db = await this.#open(walletId);
    try {
      const tx = db.transaction(OBJECTS, "readonly");
      const objects = tx.objectStore(OBJECTS);
      const values = await Promise.all(FIELDS.map((f) => request(objects.get(f))));
      const out: Record<string, unknown> = {};
      FIELDS.forEach((f, i) => {
        if (values[i] !== undefined) out[f] = values[i];
      });
      return Object.keys(out).length === 0 ? undefined : (out as WalletRecord);
    } finally {
      db.close();
    }
  }

  async put(walletId: string, record: WalletRecord): Promise<void> {
    const db = await this.#open(walletId);
    try {
      const tx = db.transaction(OBJECTS, "readwrite");
      const objects = tx.objectStore(OBJECTS);
      for (const f of FIELDS) {
        const v = record[f];
        if (v !== undefined) objects.put(v, f);
      }
      await done(tx);
    } finally {
      db.close();
    }
  }

  async delete(walletId: string): Promise<void> {
    checkId(walletId);
    await request(this.#idb.deleteDatabase(this.#prefix + walletId));
  }
}
