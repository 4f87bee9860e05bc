// The Worker that runs the wallet's sync (issue 31; the page's side: ./wallet-sync.ts): it owns a
// nox-wasm instance and answers `walletSync` per page of pool logs, so trial decryption never
// runs on the page's main thread. Runs as a browser module Worker (`self`) and as a Node
// `worker_threads` Worker (`parentPort`).

import { NoxWasm } from "./nox_wasm.mjs";
import type { SyncedPage, WalletWorkerReply, WalletWorkerRequest } from "./wallet-sync.js";
import type { WalletBalances } from "./wallet.js";
import { compileModule, serveInOrder, workerChannel } from "./worker-port.js";

let wasm: NoxWasm | undefined;

async function handle(msg: WalletWorkerRequest): Promise<WalletWorkerReply> {
  if (msg.op === "init") {
    wasm = await NoxWasm.instantiate(await compileModule(msg.wasm));
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

// No top-level await (bundlers build Workers as classic scripts by default).
void workerChannel<WalletWorkerRequest, WalletWorkerReply>("wallet-worker.js").then((channel) => serveInOrder(channel, handle));
