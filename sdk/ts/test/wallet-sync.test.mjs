// The wallet's sync in a Worker (src/wallet-sync.ts, src/wallet-worker.ts; issue 31) in Node with
// the real module: 2,500 pool `Deposited` logs (3 `eth_getLogs` pages), none of them the wallet's
// (random commitments and memos: every memo is trial-decrypted and refused, every commitment
// queued), synced by a wallet on the caller's thread and by one whose pages go to the Worker: the
// views must be identical and the second wallet's own module must never run `walletSync`. The
// caller's 10 ms timer keeps ticking while the Worker syncs (and the balances come from it too);
// a refused page and a terminated
// Worker are errors, and the view stays as it was.
//   NOX_WASM=<nox_wasm.wasm> node --test test/wallet-sync.test.mjs

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { keccak256, toHex } from "viem";
import { NoxError, NoxWallet, WalletSyncWorker } from "../dist/index.js";
import { NoxWasm } from "../dist/nox_wasm.mjs";
import { WASM } from "./testnet-helper.mjs";

const wasm = readFileSync(WASM);
const POOL = "0x00000000000000000000000000000000000000aa";
const DEPOSITED = keccak256(toHex("Deposited(uint256,uint256,address,uint256,bytes)"));
const word = (n) => BigInt(n).toString(16).padStart(64, "0");
const NOTE_LEN = 104; // nox_wallet::memo::NOTE_LEN

/** `Deposited(queueIndex, commitment, asset, amount, memo)` at block i + 1: random commitment (< 2^248) and memo. */
function log(i) {
  const commitment = `00${randomBytes(31).toString("hex")}`;
  const memo = randomBytes(NOTE_LEN).toString("hex");
  return {
    address: POOL,
    topics: [DEPOSITED, `0x${word(i)}`, `0x${word(0)}`],
    data: `0x${commitment}${word(1000 + i)}${word(0x60)}${word(NOTE_LEN)}${memo}${"0".repeat(48)}`,
    blockNumber: `0x${(i + 1).toString(16)}`,
    logIndex: "0x0",
    removed: false,
  };
}
const logs = Array.from({ length: 2500 }, (_, i) => log(i));

function provider(entries) {
  return {
    async request({ method, params }) {
      if (method === "eth_blockNumber") return `0x${entries.length.toString(16)}`;
      return entries.slice(Number(params[0].fromBlock) - 1, Number(params[0].toBlock));
    },
  };
}

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
    const reorged = [...logs, { ...log(2500), removed: true }];
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

test("a Worker given a module that does not compile refuses to start", async () => {
  await assert.rejects(WalletSyncWorker.start({ wasm: new Uint8Array([0, 1, 2, 3]) }), (e) => e instanceof NoxError);
});
