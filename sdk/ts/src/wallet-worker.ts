// The Worker that runs the wallet's sync (issue 31; the page's side: ./wallet-sync.ts): it owns a
// nox-wasm instance and answers `walletSync` per page of pool logs, so trial decryption never
// runs on the page's main thread. Runs as a browser module Worker (`self`) and as a Node
// `worker_threads` Worker (`parentPort`).

import { NoxWasm, NoxWasmError } from "./nox_wasm.mjs";
import type { WasmSource } from "./prover.js";
import type { SyncedPage, WalletWorkerReply, WalletWorkerRequest } from "./wallet-sync.js";
import type { WalletBalances } from "./wallet.js";

interface Port {
  postMessage(message: WalletWorkerReply): void;
}

let wasm: NoxWasm | undefined;

async function compile(source: WasmSource): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  if (typeof source === "string") {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`module ${source}: HTTP ${response.status}`);
    return WebAssembly.compile(await response.arrayBuffer());
  }
  return WebAssembly.compile(source instanceof Uint8Array ? source.slice() : source);
}

async function handle(msg: WalletWorkerRequest): Promise<WalletWorkerReply> {
  if (msg.op === "init") {
    wasm = await NoxWasm.instantiate(await compile(msg.wasm));
    return { id: msg.id, ok: true, result: null };
  }
  try {
    if (wasm === undefined) throw new Error("the sync Worker has no module (init first)");
    const view = wasm.walletSync(msg.seed, msg.view, msg.logs, msg.pool, msg.lastBlock);
    const result: SyncedPage = { view };
    if (msg.balances === true) result.balances = wasm.walletBalances(view) as WalletBalances;
    if (msg.seal === true) result.sealed = wasm.walletSealState(msg.seed, view);
    return { id: msg.id, ok: true, result };
  } finally {
    msg.seed.fill(0); // this Worker's copy of the seed
  }
}

async function port(): Promise<{ port: Port; listen(f: (m: WalletWorkerRequest) => void): void }> {
  const self = globalThis as unknown as {
    postMessage?: (m: unknown) => void;
    addEventListener?: (t: string, f: (e: { data: WalletWorkerRequest }) => void) => void;
  };
  if (typeof self.postMessage === "function" && typeof self.addEventListener === "function") {
    const post = self.postMessage.bind(self);
    const add = self.addEventListener.bind(self);
    return { port: { postMessage: (m) => post(m) }, listen: (f) => add("message", (e) => f(e.data)) };
  }
  const { parentPort } = await import("node:worker_threads");
  if (parentPort === null) throw new Error("wallet-worker.js must run in a Worker");
  return { port: parentPort, listen: (f) => parentPort.on("message", f) };
}

// No top-level await (bundlers build Workers as classic scripts by default).
void port().then(({ port: out, listen }) => {
  let queue: Promise<void> = Promise.resolve();
  listen((msg) => {
    queue = queue.then(async () => {
      try {
        out.postMessage(await handle(msg));
      } catch (e) {
        const code = e instanceof NoxWasmError ? e.code : undefined;
        out.postMessage({ id: msg.id, ok: false, error: { message: e instanceof Error ? e.message : String(e), code } });
      }
    });
  });
});
