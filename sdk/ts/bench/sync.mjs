// Wallet sync of 10,000 pool notes (1 % the wallet's) in Node and in headless Chromium, beside the
// native PoolView on the same notes: the notes of crates/nox-wallet/benches/scan.rs, written by
// `cargo run --release -p nox-wallet --example sync_notes -- <notes.json>` (which also prints the
// native figure), encoded here as the pool's `Deposited` logs, one per block (10 `eth_getLogs` pages
// of LOG_PAGE = 1,000 blocks), and served by an in-memory EIP-1193 provider: the figure is the
// wallet's own work (JSON, trial decryption, commitment checks in WebAssembly), not the mixnet's.
// Each run syncs a fresh NoxWallet from block 0 and must find exactly the expected notes.
// In Chromium each run is made three times: the wallet calling the module on the page's main
// thread, the wallet with a `WalletSyncWorker` (`syncWorker`: the module's walletSync in a Worker),
// and that wallet kept in a MemoryWalletStore (each page's view sealed in the Worker and written);
// for each the page records its long tasks (PerformanceObserver 'longtask': tasks ≥ 50 ms) and the
// longest gap of a 10 ms timer during the sync.
//
//   node sdk/ts/bench/sync.mjs --notes /tmp/notes.json --native '<the example's JSON line>' \
//     [--runs 3] [--out bench/data/browser-sync.json]

import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { keccak256, toHex } from "viem";
import { servePage } from "../examples/page-server.mjs";
import { NoxWallet } from "../dist/index.js";
import { WASM } from "../test/testnet-helper.mjs";

const { values: args } = parseArgs({
  options: { notes: { type: "string" }, native: { type: "string" }, runs: { type: "string", default: "3" }, out: { type: "string" } },
});
const notes = JSON.parse(readFileSync(args.notes, "utf8"));
const runs = Number(args.runs);
const POOL = "0x00000000000000000000000000000000000000aa";
const DEPOSITED = keccak256(toHex("Deposited(uint256,uint256,address,uint256,bytes)"));
const word = (n) => BigInt(n).toString(16).padStart(64, "0");

/** The pool's `Deposited(queueIndex indexed, commitment, asset indexed, amount, memo)` logs, one per block. */
const logs = notes.notes.map((n, i) => {
  const memo = n.memo;
  const padded = memo.padEnd(Math.ceil(memo.length / 64) * 64, "0");
  return {
    address: POOL,
    topics: [DEPOSITED, `0x${word(n.queue_index)}`, `0x${word(0)}`],
    data: `0x${n.commitment}${word(n.amount)}${word(0x60)}${word(memo.length / 2)}${padded}`,
    blockNumber: `0x${(i + 1).toString(16)}`,
    logIndex: "0x0",
    removed: false,
  };
});
const head = logs.length;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// Node: the same code the page runs, with the same in-memory provider.
async function nodeRuns() {
  const module = readFileSync(WASM);
  const provider = {
    request: async ({ method, params }) => {
      if (method === "eth_blockNumber") return `0x${head.toString(16)}`;
      const from = Number(params[0].fromBlock);
      const to = Number(params[0].toBlock);
      return logs.slice(from - 1, to);
    },
  };
  const out = [];
  for (let r = 0; r < runs; r++) {
    const wallet = await NoxWallet.open({ seed: Buffer.from(notes.seed, "hex"), module, provider, pool: POOL });
    const t0 = performance.now();
    await wallet.sync();
    out.push(performance.now() - t0);
    const b = wallet.balance();
    if (b.pending !== BigInt(notes.expected)) throw new Error(`Node found ${b.pending}, expected ${notes.expected}`);
  }
  return out;
}

async function chromiumRuns() {
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    await page.route("**/logs.json", (route) => route.fulfill({ contentType: "application/json", body: JSON.stringify(logs) }));
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    return await page.evaluate(
      async ({ seed, pool, expected, runs }) => {
        const sdk = await import("/sdk/index.js");
        const module = await WebAssembly.compile(await (await fetch("/nox_wasm.wasm")).arrayBuffer());
        const logs = await (await fetch("/logs.json")).json();
        const provider = {
          request: async ({ method, params }) => {
            if (method === "eth_blockNumber") return `0x${logs.length.toString(16)}`;
            return logs.slice(Number(params[0].fromBlock) - 1, Number(params[0].toBlock));
          },
        };
        const bytes = Uint8Array.from(seed.match(/../g).map((h) => parseInt(h, 16)));
        const t = performance.now();
        const syncWorker = await sdk.WalletSyncWorker.start({ wasm: module });
        const workerStartMs = performance.now() - t;
        /**
         * One sync of a wallet made by `open` (before the measurement: module instantiation, and
         * a store's Argon2id sealing of the seed) with the page's long tasks and a 10 ms timer's
         * longest gap.
         */
        const measured = async (open) => {
          const wallet = await open();
          // A task boundary first: the previous run's last task (its balance check) ends before
          // this run's observer starts (a long task is reported to the observers live at its end).
          await new Promise((r) => setTimeout(r, 50));
          const longTasks = [];
          const observer = new PerformanceObserver((list) => {
            for (const e of list.getEntries()) longTasks.push(e.duration);
          });
          observer.observe({ type: "longtask", buffered: false });
          let last = performance.now();
          let longestGap = 0;
          const probe = setInterval(() => {
            const now = performance.now();
            longestGap = Math.max(longestGap, now - last);
            last = now;
          }, 10);
          const t0 = performance.now();
          await wallet.sync();
          const ms = performance.now() - t0;
          await new Promise((r) => setTimeout(r, 100)); // the observer's last entries
          clearInterval(probe);
          observer.disconnect();
          // Reading the balance parses the whole view in the module, on this thread (not the sync's).
          const tb = performance.now();
          const balance = wallet.balance();
          const balanceMs = performance.now() - tb;
          if (balance.pending !== BigInt(expected)) throw new Error(`Chromium found ${balance.pending}`);
          return { ms, longTasks: longTasks.length, longestLongTaskMs: Math.max(0, ...longTasks), longestGapMs: longestGap, viewBytes: wallet.view.length, balanceMs };
        };
        const main = [];
        const worker = [];
        const stored = [];
        // The notes' seed sealed once (Argon2id) for the store runs' `restore`.
        const { NoxWasm } = await import("/sdk/nox_wasm.mjs");
        const sealed = sdk.sealSeed(await NoxWasm.instantiate(module), bytes, "bench");
        for (let r = 0; r < runs; r++) {
          main.push(await measured(() => sdk.NoxWallet.open({ seed: bytes, module, provider, pool })));
          worker.push(await measured(() => sdk.NoxWallet.open({ seed: bytes, module, provider, pool, syncWorker })));
          // With a store: every page's view is also sealed (in the Worker) and written.
          const store = new sdk.MemoryWalletStore();
          stored.push(await measured(() => sdk.NoxWallet.restore({ module, provider, pool, passphrase: "bench", sealed, store, syncWorker })));
        }
        syncWorker.terminate();
        return { out: main.map((x) => x.ms), main, worker, stored, workerStartMs, userAgent: navigator.userAgent };
      },
      { seed: notes.seed, pool: POOL, expected: notes.expected, runs },
    );
  } finally {
    await browser.close();
    server.close();
  }
}

const loadBefore = loadavg();
const node = await nodeRuns();
const { out: chrome, main: chromeMain, worker: chromeWorker, stored: chromeStored, workerStartMs, userAgent } = await chromiumRuns();
const summary = (rows) => ({
  sync_ms: rows.map((x) => x.ms),
  sync_ms_median: median(rows.map((x) => x.ms)),
  longest_long_task_ms: Math.max(...rows.map((x) => x.longestLongTaskMs)),
  long_tasks_per_sync: rows.map((x) => x.longTasks),
  longest_timer_gap_ms: Math.max(...rows.map((x) => x.longestGapMs)),
  runs: rows,
});
const native = args.native === undefined ? null : JSON.parse(args.native);
const result = {
  what: "wallet sync of 10,000 Deposited notes (1 % mine), in-memory logs, fresh wallet from block 0",
  notes: notes.notes.length,
  pages: Math.ceil(head / 1000),
  native,
  node_ms: node,
  node_ms_median: median(node),
  chromium_ms: chrome,
  chromium_ms_median: median(chrome),
  chromium_main_thread: summary(chromeMain),
  chromium_sync_worker: { ...summary(chromeWorker), worker_start_ms: workerStartMs },
  chromium_sync_worker_with_store: summary(chromeStored),
  long_task_note: "PerformanceObserver 'longtask' reports tasks of 50 ms or more only: 0 means none that long; the 10 ms timer's longest gap bounds the main thread's longest task from above (plus the timer's own slack)",
  node_over_native: native === null ? null : median(node) / native.native_ms_median,
  chromium_over_native: native === null ? null : median(chrome) / native.native_ms_median,
  node_version: process.version,
  user_agent: userAgent,
  cpu: cpus()[0]?.model,
  cores: cpus().length,
  loadavg_before: loadBefore,
  loadavg_after: loadavg(),
  date: new Date().toISOString(),
};
console.log(JSON.stringify(result, null, 2));
if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`);
