// The wallet's sync in a Worker (src/wallet-sync.ts, src/wallet-worker.ts; issue 31) in Node with
// the real module: 2,500 pool `Deposited` logs (3 `eth_getLogs` pages), none of them the wallet's
// (random commitments and memos: every memo is trial-decrypted and refused, every commitment
// queued), synced by a wallet on the caller's thread and by one whose pages go to the Worker: the
// views must be identical and the second wallet's own module must never run `walletSync` (nor
// `walletBalances`: the last page's balances come from the Worker). The caller's 10 ms timer keeps
// ticking while the Worker syncs; a refused page and a terminated Worker are errors, and the view
// stays as it was; with a store the Worker seals each page's view as well. The same in headless
// Chromium (the page's wallet, its module's walletSync made to throw, the Worker fetching the
// module itself), beside the page's own timer.
//   NOX_WASM=<nox_wasm.wasm> node --test test/wallet-sync.test.mjs

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { MemoryWalletStore, NoxError, NoxWallet, WalletSyncWorker, openState } from "../dist/index.js";
import { NoxWasm } from "../dist/nox_wasm.mjs";
import { depositedLog, depositedLogs, fakeChain } from "./fake-chain.mjs";
import { WASM } from "./testnet-helper.mjs";

const wasm = readFileSync(WASM);
const POOL = "0x00000000000000000000000000000000000000aa";
const logs = depositedLogs(POOL, 2500);
const provider = (entries) => fakeChain({ logs: entries });

test("a wallet synced in the Worker has the view of one synced on the caller's thread; the caller's timer keeps ticking", async () => {
  const seed = randomBytes(32);
  const here = await NoxWallet.open({ seed, module: wasm, provider: provider(logs), pool: POOL });
  const local = await here.sync();
  assert.equal(local.logs, 2500);

  const worker = await WalletSyncWorker.start({ wasm });
  try {
    // This wallet's own module must not sync: every page goes to the Worker.
    const m = await NoxWasm.instantiate(wasm);
    m.walletSync = () => {
      throw new Error("walletSync ran on the caller's thread");
    };
    // Nor read the balances: the last page's come from the Worker.
    const balancesHere = m.walletBalances.bind(m);
    m.walletBalances = () => {
      throw new Error("walletBalances ran on the caller's thread");
    };
    const there = await NoxWallet.open({ seed, module: m, provider: provider(logs), pool: POOL, syncWorker: worker });
    let last = performance.now();
    let longest = 0;
    let ticks = 0;
    const probe = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      ticks++;
    }, 10);
    const remote = await there.sync();
    clearInterval(probe);
    console.log(`# 2,500 logs: ${local.ms.toFixed(0)} ms on the caller's thread, ${remote.ms.toFixed(0)} ms in the Worker (longest timer gap ${longest.toFixed(0)} ms, ${ticks} ticks)`);
    assert.equal(remote.logs, 2500);
    assert.equal(remote.head, 2500);
    assert.equal(there.view, here.view);
    assert.equal(there.lastBlock, 2500);
    assert.deepEqual(there.balances(), here.balances());
    // The trial decryption ran off this thread: the timer was never held for a page's work.
    assert.ok(longest < local.ms / 3, `longest gap ${longest} ms of a ${local.ms} ms sync`);
    assert.ok(ticks >= Math.floor(remote.ms / 50), `${ticks} ticks in ${remote.ms} ms`);

    m.walletBalances = balancesHere;
    // A refused page (a reorganised log) is an error and leaves the view as it was.
    const before = there.view;
    const reorged = [...logs, { ...depositedLog(POOL, 2500), removed: true }];
    const moved = await NoxWallet.open({ seed, module: m, provider: provider(reorged), pool: POOL, view: before, syncWorker: worker });
    await assert.rejects(moved.sync(), (e) => e instanceof NoxError && e.code === "refused" && /removed/.test(e.message));
    assert.equal(moved.view, before);
  } finally {
    worker.terminate();
  }
  // A terminated Worker refuses the next page.
  const dead = await NoxWallet.open({ seed, module: wasm, provider: provider(logs), pool: POOL, syncWorker: worker });
  await assert.rejects(dead.sync(), (e) => e instanceof NoxError && e.code === "closed");
});

test("a wallet with a store: the sync Worker seals each page's view too (the page's module never seals), and the store opens to the view", async () => {
  const m = await NoxWasm.instantiate(wasm);
  const store = new MemoryWalletStore();
  const worker = await WalletSyncWorker.start({ wasm });
  try {
    const wallet = await NoxWallet.create({ module: m, provider: provider(logs), pool: POOL, passphrase: "pw", store, syncWorker: worker });
    let puts = 0;
    const put = store.put.bind(store);
    store.put = (id, record) => {
      puts++;
      return put(id, record);
    };
    const sealHere = m.walletSealState.bind(m);
    m.walletSealState = () => {
      throw new Error("walletSealState ran on the caller's thread");
    };
    await wallet.sync();
    m.walletSealState = sealHere;
    assert.equal(puts, 3); // one write per page
    const record = await store.get("default");
    assert.equal(record.cursor.lastBlock, 2500);
    const seed = wallet.seedCopy();
    assert.equal(openState(m, seed, record.state), wallet.view);
    wallet.close();
  } finally {
    worker.terminate();
  }
});

test("in Chromium: the page's wallet syncs through the Worker to the same view, and the page's timer keeps ticking", async () => {
  const { chromium } = await import("playwright-core");
  const { servePage } = await import("../examples/page-server.mjs");
  const seed = randomBytes(32);
  const reference = await NoxWallet.open({ seed, module: wasm, provider: provider(logs), pool: POOL });
  await reference.sync();
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    const report = await page.evaluate(
      async ({ seedHex, logs, pool, fakeChain }) => {
        const sdk = await import("/sdk/index.js");
        const { NoxWasm } = await import("/sdk/nox_wasm.mjs");
        const module = await WebAssembly.compile(await (await fetch("/nox_wasm.wasm")).arrayBuffer());
        // A network provider yields between pages.
        const provider = (0, eval)(`(${fakeChain})`)({ logs, yieldPages: true });
        const seed = Uint8Array.from(seedHex.match(/../g).map((h) => parseInt(h, 16)));
        const syncWorker = await sdk.WalletSyncWorker.start({ wasm: "/nox_wasm.wasm" });
        const m = await NoxWasm.instantiate(module);
        m.walletSync = () => {
          throw new Error("walletSync ran on the page's thread");
        };
        m.walletBalances = () => {
          throw new Error("walletBalances ran on the page's thread");
        };
        const wallet = await sdk.NoxWallet.open({ seed, module: m, provider, pool, syncWorker });
        let last = performance.now();
        let longestGap = 0;
        const probe = setInterval(() => {
          const now = performance.now();
          longestGap = Math.max(longestGap, now - last);
          last = now;
        }, 10);
        const t0 = performance.now();
        await wallet.sync();
        const workerMs = performance.now() - t0;
        clearInterval(probe);
        const balances = wallet.balances();
        syncWorker.terminate();
        // The same sync on the page's thread, for scale: its longest task is a page's work.
        const here = await sdk.NoxWallet.open({ seed, module, provider, pool });
        last = performance.now();
        let longestHere = 0;
        const probeHere = setInterval(() => {
          const now = performance.now();
          longestHere = Math.max(longestHere, now - last);
          last = now;
        }, 10);
        await here.sync();
        clearInterval(probeHere);
        return { view: wallet.view, balances, workerMs, longestGap, longestHere };
      },
      { seedHex: seed.toString("hex"), logs, pool: POOL, fakeChain: fakeChain.toString() },
    );
    console.log(`# Chromium, 2,500 logs through the Worker: ${report.workerMs.toFixed(0)} ms, longest timer gap ${report.longestGap.toFixed(0)} ms (on the page's thread: ${report.longestHere.toFixed(0)} ms)`);
    assert.equal(report.view, reference.view);
    assert.deepEqual(report.balances, reference.balances());
    assert.ok(report.longestGap < report.longestHere / 2, JSON.stringify({ ...report, view: undefined }));
  } finally {
    await browser.close();
    server.close();
  }
});

test("a Worker given a module that does not compile refuses to start", async () => {
  await assert.rejects(WalletSyncWorker.start({ wasm: new Uint8Array([0, 1, 2, 3]) }), (e) => e instanceof NoxError);
});
