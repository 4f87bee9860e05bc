// What the package's Worker scripts (client-worker.ts, prover-worker.ts, wallet-worker.ts) share
// (issue 31): the port to the page — a browser module Worker's `self` or a Node `worker_threads`
// Worker's `parentPort` —, the in-order serving loop of the prover and sync Workers, and the
// module compilation from a URL, bytes or a compiled module.

import { NoxWasmError } from "./nox_wasm.mjs";

/** The Worker's side of the channel to the page. */
export interface WorkerPort<Out> {
  postMessage(message: Out): void;
}

/** The port and a way to listen on it. */
export interface WorkerChannel<In, Out> {
  port: WorkerPort<Out>;
  listen(f: (message: In) => void): void;
}

/**
 * The channel of the Worker this script runs in: `self` in a browser (module or classic Worker),
 * else Node's `parentPort`. `script` names the file in the error thrown when it runs outside a
 * Worker. In a browser this settles in a microtask, before any message task runs.
 */
export async function workerChannel<In, Out>(script: string): Promise<WorkerChannel<In, Out>> {
  const self = globalThis as unknown as {
    postMessage?: (m: unknown) => void;
    addEventListener?: (t: string, f: (e: { data: In }) => void) => void;
  };
  if (typeof self.postMessage === "function" && typeof self.addEventListener === "function") {
    const post = self.postMessage.bind(self);
    const add = self.addEventListener.bind(self);
    return { port: { postMessage: (m) => post(m) }, listen: (f) => add("message", (e) => f(e.data)) };
  }
  const { parentPort } = await import("node:worker_threads");
  if (parentPort === null) throw new Error(`${script} must run in a Worker`);
  return { port: parentPort, listen: (f) => parentPort.on("message", f) };
}

/** A failed call as the prover and sync Workers answer it. */
export interface WorkerFailure {
  id: number;
  ok: false;
  error: { message: string; code?: number | undefined };
}

/**
 * Serves the channel one message at a time, in order (a call never interleaves with another):
 * `handle`'s answer is posted; a throw is posted as a failure with the module's error code, if any.
 */
export function serveInOrder<In extends { id: number }, Out>(
  channel: WorkerFailure extends Out ? WorkerChannel<In, Out> : never,
  handle: (message: In, port: WorkerPort<Out>) => Promise<Out>,
): void {
  const { port, listen } = channel as WorkerChannel<In, Out | WorkerFailure>;
  let queue: Promise<void> = Promise.resolve();
  listen((msg) => {
    queue = queue.then(async () => {
      try {
        port.postMessage(await handle(msg, port));
      } catch (e) {
        const code = e instanceof NoxWasmError ? e.code : undefined;
        port.postMessage({ id: msg.id, ok: false, error: { message: e instanceof Error ? e.message : String(e), code } });
      }
    });
  });
}

/** The module of a Worker's `init`: fetched from a URL, compiled from bytes, or given compiled. */
export async function compileModule(source: string | BufferSource | WebAssembly.Module): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  if (typeof source === "string") {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`module ${source}: HTTP ${response.status}`);
    return WebAssembly.compile(await response.arrayBuffer());
  }
  return WebAssembly.compile(source instanceof Uint8Array ? source.slice() : source);
}
