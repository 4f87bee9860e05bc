// The Worker that owns the WebAssembly transfer prover (issue 31): the page's main thread only
// posts messages, so a proof (seconds of CPU) never blocks it. Runs as a browser module Worker
// (`self`) and as a Node `worker_threads` Worker (`parentPort`). Protocol: ./prover.ts.
//
// The proving key is fetched once and cached: in IndexedDB where the Worker has it (browsers;
// it survives reloads), else in this Worker's memory.

import { NoxWasm } from "./nox_wasm.mjs";
import type { ProverRequest, ProverReply, KeySource, WasmSource } from "./prover.js";
import { SplitProver, deviceMemory, memoryWorkerCap, workerCount } from "./prover-split.js";
import type { WorkerCapSource } from "./prover-split.js";
import { compileModule, serveInOrder, workerChannel, type WorkerPort } from "./worker-port.js";

type Port = WorkerPort<ProverReply>;

const DB_NAME = "nox-prover";
const STORE = "keys";

/** Keys fetched by this Worker (also the cache where IndexedDB is not available). */
const memory = new Map<string, Uint8Array>();

function idb(): IDBFactory | undefined {
  return (globalThis as { indexedDB?: IDBFactory }).indexedDB;
}

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new Error("IndexedDB request failed"));
  });
}

async function openDb(factory: IDBFactory): Promise<IDBDatabase> {
  const open = factory.open(DB_NAME, 1);
  open.onupgradeneeded = () => open.result.createObjectStore(STORE);
  return request(open);
}

async function cacheGet(name: string, useIdb: boolean): Promise<Uint8Array | undefined> {
  const hit = memory.get(name);
  if (hit !== undefined) return hit;
  const factory = useIdb ? idb() : undefined;
  if (factory === undefined) return undefined;
  const db = await openDb(factory);
  try {
    const value = (await request(db.transaction(STORE, "readonly").objectStore(STORE).get(name))) as unknown;
    return value instanceof ArrayBuffer ? new Uint8Array(value) : value instanceof Uint8Array ? value : undefined;
  } finally {
    db.close();
  }
}

async function cachePut(name: string, bytes: Uint8Array, useIdb: boolean): Promise<void> {
  memory.set(name, bytes);
  const factory = useIdb ? idb() : undefined;
  if (factory === undefined) return;
  const db = await openDb(factory);
  try {
    const tx = db.transaction(STORE, "readwrite");
    tx.objectStore(STORE).put(bytes, name);
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error ?? new Error("IndexedDB write failed"));
    });
  } finally {
    db.close();
  }
}

/**
 * Loads the proving key into the module. The published key is compressed (decompressing its
 * points takes seconds in WebAssembly), so the cache keeps the uncompressed copy the module
 * writes after the first load: every later start reads it back without square roots.
 */
async function loadKey(m: NoxWasm, key: KeySource, useIdb: boolean, port: Port, id: number): Promise<number> {
  if ("bytes" in key) return m.loadProvingKey(key.bytes, { uncompressed: key.uncompressed === true });
  const name = `${key.name ?? key.url}#uncompressed`;
  const cached = await cacheGet(name, useIdb);
  if (cached !== undefined) {
    port.postMessage({ id, progress: { stage: "key", cached: true, bytes: cached.length } });
    return m.loadProvingKey(cached, { uncompressed: true });
  }
  const response = await fetch(key.url);
  if (!response.ok) throw new Error(`proving key ${key.url}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  port.postMessage({ id, progress: { stage: "key", cached: false, bytes: bytes.length } });
  const handle = m.loadProvingKey(bytes);
  await cachePut(name, m.provingKeyBytes(handle), useIdb);
  return handle;
}

let wasm: NoxWasm | undefined;
let key: number | undefined;
let split: SplitProver | undefined;

async function handle(msg: ProverRequest, port: Port): Promise<ProverReply> {
  const id = msg.id;
  if (msg.op === "init") {
    const t0 = performance.now();
    const module = await compileModule(msg.wasm);
    wasm = await NoxWasm.instantiate(module);
    const t1 = performance.now();
    if (msg.role !== "helper") port.postMessage({ id, progress: { stage: "module", ms: t1 - t0 } });
    key = await loadKey(wasm, msg.key, msg.cache !== "memory", port, id);
    const t2 = performance.now();
    split?.terminate();
    split = undefined;
    // The memory cap: the page's (`maxWorkers`, from the option or the page's deviceMemory),
    // else this Worker's own navigator.deviceMemory.
    let maxWorkers = msg.maxWorkers;
    let capSource: WorkerCapSource | undefined = msg.capSource;
    if (maxWorkers === undefined) {
      maxWorkers = memoryWorkerCap(deviceMemory());
      if (maxWorkers !== undefined) capSource = "deviceMemory";
    }
    const workers = msg.role === "helper" ? 1 : await workerCount(msg.workers, maxWorkers);
    if (workers > 1) split = await SplitProver.start(workers, module, wasm.provingKeyBytes(key), msg.helperUrl);
    const t3 = performance.now();
    const result = { moduleMs: t1 - t0, keyMs: t2 - t1, workers: split?.workers ?? 1, helpersMs: t3 - t2, maxWorkers, capSource };
    return { id, ok: true, result };
  }
  if (wasm === undefined || key === undefined) throw new Error("the prover is not initialised");
  if (msg.op === "part") {
    try {
      return { id, ok: true, result: wasm.splitPart(key, msg.prepared, msg.k, msg.n) };
    } finally {
      msg.prepared.fill(0); // this helper's copy of the witness
    }
  }
  port.postMessage({ id, progress: { stage: "prepare" } });
  const t0 = performance.now();
  let prep;
  try {
    prep = wasm.walletPrepare(msg.seed, msg.view, msg.request);
  } finally {
    msg.seed.fill(0); // this Worker's copy of the seed: the prepared witness stays in the module
  }
  const { handle: prepared, description } = prep;
  const t1 = performance.now();
  const workers = split?.workers ?? 1;
  port.postMessage({ id, progress: { stage: "prove", description, workers } });
  const { proof, publicInputs } =
    split !== undefined && workers > 1
      ? await split.prove(wasm, key, prepared, (p) => port.postMessage({ id, progress: p }))
      : wasm.proveTransfer(key, prepared);
  const t2 = performance.now();
  return { id, ok: true, result: { proof, publicInputs, description, prepareMs: t1 - t0, proveMs: t2 - t1 } };
}

// No top-level await: bundlers build Workers as classic scripts by default (Vite: iife), which
// cannot hold one. One message at a time, in order: a proof never interleaves with another.
void workerChannel<ProverRequest, ProverReply>("prover-worker.js").then((channel) => serveInOrder(channel, handle));
