// The wallet store in IndexedDB (issue 31), in headless Chromium without a testnet: a wallet
// sealed under a passphrase and kept in IndexedDB, whose sync is interrupted (the chain reads
// fail on the third page), resumes after a page reload at the block after its last saved page;
// the stored view is sealed; a wrong passphrase is refused with a typed error; `put` replaces
// only the fields it is given; `delete` forgets the wallet.
//
// Needs the module (NOX_WASM) and Chromium (CHROMIUM, default /usr/bin/chromium).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { chromium } from "playwright-core";
import { servePage } from "../examples/page-server.mjs";
import { fakeChain } from "./fake-chain.mjs";
import { WASM } from "./testnet-helper.mjs";

const POOL = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const PASSPHRASE = "correct horse battery staple";

/**
 * In the page: the SDK, the module's bytes and a fake chain (./fake-chain.mjs, its source passed in
 * as `fakeChain`: head 2,500, no pool log, the `failAt`-th page fails).
 */
async function setUp({ failAt, fakeChain }) {
  const sdk = await import("/sdk/index.js");
  const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
  const provider = (0, eval)(`(${fakeChain})`)({ head: 2500, failAt });
  return { sdk, bytes, ranges: provider.ranges, provider, store: new sdk.IndexedDbWalletStore() };
}

test("headless Chromium: a wallet kept in IndexedDB resumes an interrupted sync after a reload", async (t) => {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  t.after(async () => {
    await browser.close();
    server.close();
  });
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const args = { pool: POOL, passphrase: PASSPHRASE, setUp: setUp.toString(), fakeChain: fakeChain.toString() };

  const first = await page.evaluate(async ({ pool, passphrase, setUp, fakeChain }) => {
    const { sdk, bytes, ranges, provider, store } = await (0, eval)(`(${setUp})`)({ failAt: 2, fakeChain });
    const wallet = await sdk.NoxWallet.create({ module: bytes, provider, pool, passphrase, store, walletId: "w", fromBlock: 10 });
    const interrupted = await wallet.sync().then(() => "finished", (e) => String(e));
    const record = await store.get("w");
    const plain = new TextDecoder().decode(record.state);
    return {
      address: wallet.address, interrupted, ranges, cursor: record.cursor, sealedLength: record.sealedKey.length,
      stateInClear: plain.includes("last_block") || plain.includes("notes"),
      stateMagic: plain.slice(0, 8),
    };
  }, args);
  assert.match(first.interrupted, /the page went away/);
  assert.deepEqual(first.ranges, [[10, 1009], [1010, 2009]]);
  assert.deepEqual(first.cursor, { pool: POOL, fromBlock: 10, lastBlock: 2009 });
  assert.equal(first.sealedLength, 96, "the sealed key is a wallet.key");
  assert.equal(first.stateMagic, "NOXWST01", "the view is stored in nox wallet's sealed state format");
  assert.equal(first.stateInClear, false, "the view is not stored in the clear");

  await page.reload();
  const second = await page.evaluate(async ({ pool, passphrase, setUp, fakeChain }) => {
    const { sdk, bytes, ranges, provider, store } = await (0, eval)(`(${setUp})`)({ fakeChain });
    const wrong = await sdk.NoxWallet.unlock({ module: bytes, provider, pool, passphrase: "wrong", store, walletId: "w" })
      .then(() => "opened", (e) => e.code);
    const wallet = await sdk.NoxWallet.unlock({ module: bytes, provider, pool, passphrase, store, walletId: "w", fromBlock: 10 });
    const resumedAt = wallet.lastBlock;
    await wallet.sync();
    const cursor = (await store.get("w")).cursor;
    // `put` replaces only the fields given; `delete` forgets the wallet.
    const before = await store.get("w");
    await store.put("w", { cursor: { ...cursor, lastBlock: 1 } });
    const after = await store.get("w");
    const kept = after.sealedKey.length === before.sealedKey.length && after.state.length === before.state.length;
    await store.delete("w");
    const gone = (await store.get("w")) === undefined;
    return { wrong, address: wallet.address, resumedAt, ranges, cursor, kept, gone, patched: after.cursor.lastBlock };
  }, args);
  assert.deepEqual(errors, []);
  assert.equal(second.wrong, "wrong-passphrase");
  assert.equal(second.address, first.address);
  assert.equal(second.resumedAt, 2009, "the reloaded wallet starts from the stored view");
  assert.deepEqual(second.ranges, [[2010, 2500]], "only the blocks not yet read are read");
  assert.equal(second.cursor.lastBlock, 2500);
  assert.ok(second.kept && second.patched === 1, "put replaces only the fields it is given");
  assert.ok(second.gone, "delete forgets the wallet");
});
