// The transfer prover off the main thread (issue 31): a Worker (./prover-worker.js) owns the
// nox-wasm module and the proving key; this class posts it jobs and returns promises.

import { deviceMemory, memoryWorkerCap } from "./prover-split.js";
import type { WorkerCapSource } from "./prover-split.js";

/** The nox-wasm module: a URL the Worker fetches and compiles, its bytes, or a compiled module. */
export type WasmSource = string | ArrayBuffer | Uint8Array | WebAssembly.Module;

/**
 * The transfer proving key (arkworks compressed, as published): a URL fetched once, its
 * decoded copy then cached uncompressed (IndexedDB in browsers, the Worker's memory in Node)
 * under `name` (default: the URL; name a new key by a new name); or its bytes (not cached:
 * compressed, or `uncompressed` as `NoxWasm.provingKeyBytes` writes them).
 */
export type KeySource = { url: string; name?: string } | { bytes: Uint8Array; uncompressed?: boolean };

/** One stage of a job, as it happens. */
export type ProverProgress =
  | { stage: "module"; ms: number }
  | { stage: "key"; cached: boolean; bytes: number }
  | { stage: "prepare" }
  | { stage: "prove"; description: PreparedDescription; workers: number }
  /** Split proofs (more than one Worker): MSM parts done of `of`, then the final sum. */
  | { stage: "parts"; done: number; of: number }
  | { stage: "finish" };

/** What the wallet prepared (crates/nox-wasm/README.md, `nox_wallet_prepare`). */
export interface PreparedDescription {
  root: string;
  nullifiers: string[];
  commitments: string[];
  asset: string;
  public_in: string;
  public_out: string;
  fee: string;
  recipient: string;
  deadline: number;
  notes: string[];
  context: string;
  change: string;
  inputs: { commitment: string; nullifier: string; value: string; leaf_index: number }[];
  outputs: { to: string; value: string; role: "requested" | "change" | "padding"; commitment: string }[];
}

/** A proved transaction: the proof as the pool takes it and its public inputs. */
export interface ProvedTransfer {
  /** 256 bytes: the pool's `uint256[8]`. */
  proof: Uint8Array;
  /** 8 words of 32 bytes, in the verifier's order. */
  publicInputs: Uint8Array[];
  description: PreparedDescription;
  prepareMs: number;
  proveMs: number;
}

/** Where the Worker's start-up time went. */
export interface ProverStart {
  /** Fetching (if a URL), compiling and instantiating the module. */
  moduleMs: number;
  /** Fetching or reading the cached key, decoding it (and the circuit's matrices, built once). */
  keyMs: number;
  /** Workers a proof runs on: this one and the helpers that started (1: one Worker). */
  workers: number;
  /** Starting the helpers (module + key in each). */
  helpersMs: number;
  /** The memory cap applied (`maxWorkers` or the device's memory); absent: none. */
  maxWorkers?: number | undefined;
  /** Where that cap came from. */
  capSource?: WorkerCapSource | undefined;
}

/** A private transaction to prove: the wallet seed, its pool view (state JSON) and the request. */
export interface ProveInput {
  /** The Worker zeroes its copy (a Worker receives a clone) once the transaction is prepared. */
  seed: Uint8Array;
  view: string;
  request: object;
}

/** @internal Messages to the Worker. */
export type ProverRequest =
  | {
      id: number;
      op: "init";
      wasm: WasmSource;
      key: KeySource;
      cache?: "indexeddb" | "memory";
      workers?: number;
      /** The memory cap (absent: the Worker's own `navigator.deviceMemory`, if any). */
      maxWorkers?: number;
      capSource?: WorkerCapSource;
      role?: "helper";
      /** Node: the Worker script's URL, for the helpers (browsers use the Worker's `location`). */
      helperUrl?: string;
    }
  | ({ id: number; op: "prove" } & ProveInput)
  | { id: number; op: "part"; prepared: Uint8Array; k: number; n: number };

/** @internal Messages from the Worker. */
export type ProverReply =
  | { id: number; progress: ProverProgress }
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { message: string; code?: number | undefined } };

/** The prover refused or failed: `code` is the module's status (nox-wasm `Status`) if it has one. */
export class ProverError extends Error {
  readonly code: number | undefined;
  constructor(message: string, code?: number) {
    super(message);
    this.name = "ProverError";
    this.code = code;
  }
}

/** A browser Worker or a Node `worker_threads` Worker. */
export interface WorkerLike {
  postMessage(message: unknown): void;
  terminate(): unknown;
  addEventListener?(type: "message", listener: (event: { data: unknown }) => void): void;
  on?(type: "message", listener: (data: unknown) => void): unknown;
}

interface Job {
  resolve(value: unknown): void;
  reject(error: Error): void;
  progress: ((p: ProverProgress) => void) | undefined;
}

async function defaultWorker(): Promise<WorkerLike & { helperUrl?: string }> {
  if (typeof Worker !== "undefined" && typeof window !== "undefined") {
    // One expression, as written: bundlers (Vite, webpack 5) recognise `new Worker(new URL("…",
    // import.meta.url), …)` and bundle the Worker with its imports. A URL built apart is copied as
    // a bare asset whose own imports then 404 in the built app: the Worker never starts.
    return new Worker(new URL("./prover-worker.js", import.meta.url), { type: "module" }) as unknown as WorkerLike;
  }
  const threads = await import("node:worker_threads");
  const url = new URL("./prover-worker.js", import.meta.url);
  // In Node the Worker is told its own script for its helpers (a browser Worker has `location`).
  return Object.assign(new threads.Worker(url) as unknown as WorkerLike, { helperUrl: url.href });
}

export class TransferProver {
  readonly #worker: WorkerLike;
  readonly #jobs = new Map<number, Job>();
  #next = 1;
  /** Where the start-up time went (module compile, key fetch or cache read, key decode). */
  started: ProverStart | undefined;

  private constructor(worker: WorkerLike) {
    this.#worker = worker;
    const onMessage = (data: unknown) => this.#receive(data as ProverReply);
    if (typeof worker.on === "function") {
      worker.on("message", onMessage);
    } else if (typeof worker.addEventListener === "function") {
      worker.addEventListener("message", (e) => onMessage(e.data));
    } else {
      throw new ProverError("the worker has neither on() nor addEventListener()");
    }
  }

  /**
   * Starts a prover Worker (a new `prover-worker.js` Worker unless `worker` is given), loads the
   * module and the proving key into it (fetched once, then from the cache), and its helpers.
   */
  static async start(options: {
    wasm: WasmSource;
    key: KeySource;
    cache?: "indexeddb" | "memory";
    worker?: WorkerLike;
    onProgress?: (p: ProverProgress) => void;
    /**
     * Workers a proof may use: `min(navigator.hardwareConcurrency, workers)` (default: every
     * core). Above 1 the Worker coordinates helper Workers (./prover-split.ts); 1, one core, or
     * helpers that fail to start: one Worker proves alone.
     */
    workers?: number;
    /**
     * The memory cap on those Workers (each holds its own decoded key, 8 MB, a proof's
     * assignment, 1.6 MB, and its module instance: ≈ 210–300 MB resident per helper measured in
     * Node, docs/benchmarks/wasm.md). Default: from `navigator.deviceMemory`
     * where the browser reports it (≤ 2 GB → 1 Worker, 4 GB → 2, 8 GB → no cap;
     * `memoryWorkerCap`), else none. A positive integer; anything else is refused.
     */
    maxWorkers?: number;
  }): Promise<TransferProver> {
    if (options.maxWorkers !== undefined && !(Number.isInteger(options.maxWorkers) && options.maxWorkers >= 1)) {
      throw new ProverError(`maxWorkers must be a positive integer, not ${String(options.maxWorkers)}`);
    }
    if (options.workers !== undefined && !(Number.isInteger(options.workers) && options.workers >= 1)) {
      throw new ProverError(`workers must be a positive integer, not ${String(options.workers)}`);
    }
    const worker = options.worker ?? (await defaultWorker());
    const prover = new TransferProver(worker);
    const message: Omit<Extract<ProverRequest, { op: "init" }>, "id"> = {
      op: "init",
      wasm: options.wasm,
      key: options.key,
    };
    const helperUrl = (worker as { helperUrl?: string }).helperUrl;
    if (helperUrl !== undefined) message.helperUrl = helperUrl;
    if (options.cache !== undefined) message.cache = options.cache;
    if (options.workers !== undefined) message.workers = options.workers;
    // The page's cap: the option, else this page's deviceMemory (Workers see the same value in
    // Chromium; computed here so the page decides, and a Worker without it still gets it).
    const fromMemory = memoryWorkerCap(deviceMemory());
    if (options.maxWorkers !== undefined) {
      message.maxWorkers = options.maxWorkers;
      message.capSource = "option";
    } else if (fromMemory !== undefined) {
      message.maxWorkers = fromMemory;
      message.capSource = "deviceMemory";
    }
    try {
      prover.started = (await prover.#post(message, options.onProgress)) as ProverStart;
    } catch (e) {
      prover.terminate();
      throw e;
    }
    return prover;
  }

  /** Prepares and proves a private transaction in the Worker; `onProgress` sees each stage. */
  async prove(input: ProveInput, onProgress?: (p: ProverProgress) => void): Promise<ProvedTransfer> {
    return (await this.#post({ op: "prove", ...input }, onProgress)) as ProvedTransfer;
  }

  /** Stops the Worker; pending jobs are refused. */
  terminate(): void {
    void this.#worker.terminate();
    for (const job of this.#jobs.values()) job.reject(new ProverError("the prover was terminated"));
    this.#jobs.clear();
  }

  #post(message: object, progress: ((p: ProverProgress) => void) | undefined): Promise<unknown> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#jobs.set(id, { resolve, reject, progress });
      this.#worker.postMessage({ ...message, id });
    });
  }

  #receive(reply: ProverReply): void {
    const job = this.#jobs.get(reply.id);
    if (job === undefined) return;
    if ("progress" in reply) {
      job.progress?.(reply.progress);
      return;
    }
    this.#jobs.delete(reply.id);
    if (reply.ok) job.resolve(reply.result);
    else job.reject(new ProverError(reply.error.message, reply.error.code));
  }
}
