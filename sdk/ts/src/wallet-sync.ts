// The wallet's sync off the main thread (issue 31): trial decryption of every pool note (and the
// view's JSON) costs ~265 ms of CPU per `eth_getLogs` page of 1,000 logs in Chromium, a long task
// per page when `NoxWallet` calls the module on the page's thread. A `WalletSyncWorker` owns a
// module instance in a Worker (./wallet-worker.js); `NoxWallet` given one (`syncWorker`) posts it
// each page (the logs, the view, a copy of the seed that the Worker zeroes after the page) and
// takes the new view back. The chain reads, the store writes and the wallet's state stay where
// they were: only the module's `walletSync` moves.

import { NoxError } from "./errors.js";
import type { WasmSource, WorkerLike } from "./prover.js";
import type { WalletBalances } from "./wallet.js";

/** @internal Messages to the sync Worker. */
export type WalletWorkerRequest =
  | { id: number; op: "init"; wasm: WasmSource }
  | {
      id: number;
      op: "sync";
      seed: Uint8Array;
      view: string;
      logs: unknown[];
      pool: Uint8Array;
      lastBlock: number;
      /** Also the new view's balances (the last page: reading them parses the whole view). */
      balances?: boolean;
      /** Also the new view sealed for the store (`nox wallet`'s `state` format, seal.ts `sealState`). */
      seal?: boolean;
    };

/** A page synced in the Worker: the new view, its balances and its sealed bytes if asked. */
export interface SyncedPage {
  view: string;
  balances?: WalletBalances;
  sealed?: Uint8Array;
}

/** What else the Worker returns with a page. */
export interface SyncPageOptions {
  /** The new view's balances (read in the Worker). */
  balances?: boolean;
  /** The new view sealed under the seed's state key (for the wallet's store). */
  seal?: boolean;
}

/** @internal Messages from the sync Worker. */
export type WalletWorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { message: string; code?: number | undefined } };

interface Job {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

async function defaultWorker(): Promise<WorkerLike> {
  if (typeof Worker !== "undefined" && typeof window !== "undefined") {
    // One expression, as written: bundlers recognise it and bundle the Worker with its imports.
    return new Worker(new URL("./wallet-worker.js", import.meta.url), { type: "module" }) as unknown as WorkerLike;
  }
  const threads = await import("node:worker_threads");
  return new threads.Worker(new URL("./wallet-worker.js", import.meta.url)) as unknown as WorkerLike;
}

/** A Worker that runs the wallet's sync (`NoxWallet` option `syncWorker`); one can serve several wallets. */
export class WalletSyncWorker {
  readonly #worker: WorkerLike;
  readonly #jobs = new Map<number, Job>();
  #next = 1;
  #dead: Error | undefined;
  /** Milliseconds the Worker took to fetch (if a URL), compile and instantiate the module. */
  startMs = 0;

  private constructor(worker: WorkerLike) {
    this.#worker = worker;
    const onMessage = (data: unknown) => this.#receive(data as WalletWorkerReply);
    const w = worker as WorkerLike & {
      on?(type: string, listener: (data: unknown) => void): unknown;
      addEventListener?(type: string, listener: (event: { data: unknown; message?: string }) => void): void;
    };
    if (typeof w.on === "function") {
      w.on("message", onMessage);
      w.on("error", (e: unknown) => this.#fail(new NoxError("closed", `the sync Worker failed: ${String(e)}`)));
    } else if (typeof w.addEventListener === "function") {
      w.addEventListener("message", (e) => onMessage(e.data));
      w.addEventListener("error", (e) => this.#fail(new NoxError("closed", `the sync Worker failed: ${e.message ?? "error"}`)));
    } else {
      throw new NoxError("bad-input", "the worker has neither on() nor addEventListener()");
    }
  }

  /**
   * Starts the Worker (a new `wallet-worker.js` Worker unless `worker` is given) and loads the
   * module into it: `wasm` is its URL (fetched in the Worker), its bytes or a compiled module.
   */
  static async start(options: { wasm: WasmSource; worker?: WorkerLike }): Promise<WalletSyncWorker> {
    const worker = options.worker ?? (await defaultWorker());
    const w = new WalletSyncWorker(worker);
    const t0 = performance.now();
    try {
      await w.#post({ op: "init", wasm: options.wasm });
    } catch (e) {
      w.terminate();
      throw e;
    }
    w.startMs = performance.now() - t0;
    return w;
  }

  /**
   * One page of the sync: nox-wasm's `walletSync(seed, view, logs, pool, lastBlock)` in the
   * Worker. `seed` is copied (the Worker zeroes its copy); resolves to the new view's JSON and,
   * as asked, its balances (`walletBalances`) and its sealed bytes (`walletSealState`), both
   * also made in the Worker.
   */
  sync(seed: Uint8Array, view: string, logs: unknown[], pool: Uint8Array, lastBlock: number, options: SyncPageOptions = {}): Promise<SyncedPage> {
    const message = { op: "sync" as const, seed: seed.slice(), view, logs, pool, lastBlock, balances: options.balances === true, seal: options.seal === true };
    return this.#post(message) as Promise<SyncedPage>;
  }

  /** Stops the Worker; pending pages are refused. */
  terminate(): void {
    this.#fail(new NoxError("closed", "the sync Worker was terminated"));
    void this.#worker.terminate();
  }

  #fail(e: Error): void {
    this.#dead ??= e;
    for (const job of this.#jobs.values()) job.reject(e);
    this.#jobs.clear();
  }

  #post(message: WalletWorkerRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never): Promise<unknown> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#jobs.set(id, { resolve, reject });
      this.#worker.postMessage({ ...message, id });
    });
  }

  #receive(reply: WalletWorkerReply): void {
    const job = this.#jobs.get(reply.id);
    if (job === undefined) return;
    this.#jobs.delete(reply.id);
    if (reply.ok) job.resolve(reply.result);
    else job.reject(new NoxError("refused", `wallet sync: ${reply.error.message}${reply.error.code === undefined ? "" : ` (status ${reply.error.code})`}`));
  }
}
