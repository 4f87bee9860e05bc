// The prover Worker as a coordinator (issue 31): the transfer proof's multi-scalar
// multiplications — most of its time — spread over helper Workers that share no memory
// (WebAssembly threads would need a nightly `-Z build-std` module and a cross-origin-isolated
// page). The coordinator prepares the assignment (one synthesis and the QAP map, nox-zk
// `split_prover::prepare`), computes part 0 itself and sends parts 1..n−1 to the helpers, then
// adds the parts and blinds (`finish`, the proof checked against the key before it is returned).
// Helpers are more `prover-worker.js` Workers with the same module and the coordinator's
// decoded key bytes (the cache's form); one that fails or answers an error costs its part to
// the coordinator (computed here), never the proof.

import type { NoxWasm } from "./nox_wasm.mjs";
import type { ProverProgress } from "./prover.js";

/** A helper Worker as the coordinator sees it (browser or Node `worker_threads`). */
export interface HelperWorker {
  postMessage(message: unknown): void;
  terminate(): unknown;
  addEventListener?(type: string, listener: (event: { data: unknown }) => void): void;
  on?(type: string, listener: (data: unknown) => void): unknown;
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

/** One helper: its Worker and its pending jobs (failed for good once it errors). */
class Helper {
  readonly #worker: HelperWorker;
  readonly #jobs = new Map<number, Pending>();
  #next = 1;
  #dead: Error | undefined;

  constructor(worker: HelperWorker) {
    this.#worker = worker;
    const onMessage = (data: unknown) => {
      const r = data as { id: number; ok?: boolean; result?: unknown; error?: { message: string } };
      const job = this.#jobs.get(r.id);
      if (job === undefined || !("ok" in r)) return;
      this.#jobs.delete(r.id);
      if (r.ok) job.resolve(r.result);
      else job.reject(new Error(r.error?.message ?? "helper failed"));
    };
    const onError = (e: unknown) => this.#fail(e instanceof Error ? e : new Error(String((e as { message?: string })?.message ?? e)));
    if (typeof worker.on === "function") {
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", () => onError(new Error("helper exited")));
    } else if (typeof worker.addEventListener === "function") {
      worker.addEventListener("message", (e) => onMessage(e.data));
      worker.addEventListener("error", (e) => onError(e));
    }
  }

  #fail(e: Error): void {
    this.#dead ??= e;
    for (const job of this.#jobs.values()) job.reject(e);
    this.#jobs.clear();
  }

  call(message: object, transfer?: ArrayBuffer[]): Promise<unknown> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#jobs.set(id, { resolve, reject });
      (this.#worker.postMessage as (m: unknown, t?: unknown) => void)({ ...message, id }, transfer);
    });
  }

  terminate(): void {
    this.#fail(new Error("helper terminated"));
    void this.#worker.terminate();
  }
}

async function spawnHelper(nodeUrl: string | undefined): Promise<HelperWorker> {
  const scope = globalThis as { WorkerGlobalScope?: unknown; location?: { href: string } };
  if (typeof Worker !== "undefined" && scope.WorkerGlobalScope !== undefined && scope.location !== undefined) {
    // A browser Worker starts a nested Worker of its own script: `location` is the script this
    // Worker runs, bundled or not, so a bundler has nothing to rewrite (a `new URL("./…",
    // import.meta.url)` here would make Vite bundle the Worker into itself).
    return new Worker(scope.location.href, { type: "module" }) as unknown as HelperWorker;
  }
  // Node: the script URL the main thread started this Worker with (no `import.meta.url` here:
  // this file is bundled into the browser Worker, where a bundler would rewrite it).
  if (nodeUrl === undefined) throw new Error("no script URL for helper Workers");
  const threads = await import("node:worker_threads");
  return new threads.Worker(new URL(nodeUrl)) as unknown as HelperWorker;
}

/** The cores the runtime reports: `navigator.hardwareConcurrency`, in Node before 21 `os`. */
export async function cores(): Promise<number> {
  const n = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency;
  if (typeof n === "number" && n > 0) return n;
  if (typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === "string") {
    const os = await import("node:os");
    return typeof os.availableParallelism === "function" ? os.availableParallelism() : os.cpus().length;
  }
  return 1;
}

/**
 * The memory cap on prover Workers for a device reporting `deviceMemoryGB`
 * (`navigator.deviceMemory`: GB rounded down to a power of two, at most 8; absent outside
 * Chromium and in Node). Each Worker holds its own decoded proving key (8 MB), a proof's
 * assignment (1.6 MB), its own module instance (its linear memory grows to the proof's peak) and
 * JS heap: measured ≈ 210 MB of resident memory per helper started, ≈ 300 MB once it has proved
 * (Node, bench/data/wasm-prover-memory.json). ≤ 2 GB → 1 Worker (the coordinator proves alone),
 * 4 GB → 2, 8 GB or more, or nothing reported → no cap (`undefined`).
 */
export function memoryWorkerCap(deviceMemoryGB: number | undefined): number | undefined {
  if (typeof deviceMemoryGB !== "number" || !Number.isFinite(deviceMemoryGB) || deviceMemoryGB <= 0) return undefined;
  if (deviceMemoryGB <= 2) return 1;
  if (deviceMemoryGB <= 4) return 2;
  return undefined;
}

/** `navigator.deviceMemory` where the runtime reports it (Chromium pages and Workers). */
export function deviceMemory(): number | undefined {
  const m = (globalThis as { navigator?: { deviceMemory?: unknown } }).navigator?.deviceMemory;
  return typeof m === "number" ? m : undefined;
}

/** Where a prover's Worker cap came from. */
export type WorkerCapSource = "option" | "deviceMemory";

/**
 * How many Workers prove in all (this one included): `min(cores, asked, max)`, at least 1;
 * `max` (the memory cap) absent: none.
 */
export async function workerCount(asked: number | undefined, max?: number): Promise<number> {
  const c = await cores();
  const n = Math.floor(asked ?? c);
  return Math.max(1, Math.min(c, n, max ?? Infinity, 64));
}

/** The helpers of one coordinator. */
export class SplitProver {
  readonly #helpers: Helper[];

  private constructor(helpers: Helper[]) {
    this.#helpers = helpers;
  }

  /** Number of Workers a proof runs on (this one and the helpers that started). */
  get workers(): number {
    return 1 + this.#helpers.length;
  }

  /**
   * Starts `workers − 1` helpers with the compiled module and the key's uncompressed bytes. A
   * helper that fails to start is left out (with none, proofs take today's one-Worker path).
   */
  static async start(workers: number, module: WebAssembly.Module, keyBytes: Uint8Array, nodeUrl?: string): Promise<SplitProver> {
    const spawned = await Promise.all(
      Array.from({ length: Math.max(0, workers - 1) }, () => spawnHelper(nodeUrl).catch(() => undefined)),
    );
    return SplitProver.fromWorkers(
      spawned.filter((w): w is HelperWorker => w !== undefined),
      module,
      keyBytes,
    );
  }

  /** [`start`] over Workers the caller made (`prover-worker.js` Workers; the tests' entry). */
  static async fromWorkers(workers: HelperWorker[], module: WebAssembly.Module, keyBytes: Uint8Array): Promise<SplitProver> {
    const started = await Promise.all(
      workers.map(async (worker) => {
        let helper: Helper | undefined;
        try {
          helper = new Helper(worker);
          await helper.call({ op: "init", wasm: module, key: { bytes: keyBytes, uncompressed: true }, cache: "memory", role: "helper" });
          return helper;
        } catch {
          helper?.terminate();
          return undefined;
        }
      }),
    );
    return new SplitProver(started.filter((h): h is Helper => h !== undefined));
  }

  /**
   * Proves the prepared transaction `prepared` (consumed) over this Worker and the helpers;
   * `progress` sees `{ stage: "parts", done, of }` as each part arrives.
   */
  async prove(
    m: NoxWasm,
    key: number,
    prepared: number,
    progress: (p: ProverProgress) => void,
  ): Promise<{ proof: Uint8Array; publicInputs: Uint8Array[]; bytes: Uint8Array }> {
    const assignment = m.splitPrepare(prepared);
    const n = this.workers;
    let done = 0;
    const parts: Uint8Array[] = new Array<Uint8Array>(n);
    const landed = (k: number, part: Uint8Array) => {
      parts[k] = part;
      done++;
      progress({ stage: "parts", done, of: n });
    };
    progress({ stage: "parts", done: 0, of: n });
    const remote = this.#helpers.map((h, i) =>
      h.call({ op: "part", prepared: assignment, k: i + 1, n }).then(
        (r) => landed(i + 1, r as Uint8Array),
        () => undefined, // recomputed below
      ),
    );
    landed(0, m.splitPart(key, assignment, 0, n));
    await Promise.all(remote);
    for (let k = 1; k < n; k++) {
      if (parts[k] === undefined) landed(k, m.splitPart(key, assignment, k, n));
    }
    progress({ stage: "finish" });
    try {
      return m.splitFinish(key, assignment, parts);
    } finally {
      assignment.fill(0);
    }
  }

  terminate(): void {
    for (const h of this.#helpers) h.terminate();
  }
}
