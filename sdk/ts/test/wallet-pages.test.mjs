// The wallet's `eth_getLogs` pages shrink when an answer does not fit (issue 31), in Node with the
// real module: through the mixnet an answer must fit the request's SURBs (16 KiB by default, at
// most ~255 reply packets), so an exit refuses a page of 1,000 busy blocks as `too-large` (a pool
// log is ~1 KB of JSON). The provider here refuses, as a NoxProvider surfaces the exit's refusal,
// any answer of more than 300 logs; the wallet must ask again in halves, read every block exactly
// once, and end with the view of a wallet whose pages were never refused; with a store it saves
// the view once per 1,000 blocks, not once per small page. Other refusals, and a single block too
// large, are still errors.
//   NOX_WASM=<nox_wasm.wasm> node --test test/wallet-pages.test.mjs

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { MemoryWalletStore, NoxRefusedError, NoxWallet, ProviderRpcError, openState, toProviderError } from "../dist/index.js";
import { NoxWasm } from "../dist/nox_wasm.mjs";
import { depositedLog, depositedLogs, fakeChain } from "./fake-chain.mjs";
import { WASM } from "./testnet-helper.mjs";

const wasm = readFileSync(WASM);
const POOL = "0x00000000000000000000000000000000000000aa";
const log = (i, block) => depositedLog(POOL, i, block);
const logs = depositedLogs(POOL, 2500);

/** `entries` up to block `head`; refuses (as the exit, through the provider) answers of more than `limit` logs with `status`. */
function chain(limit, status = "too-large", entries = logs, head = logs.length) {
  const refuse = (page) =>
    page.length > limit ? toProviderError(new NoxRefusedError(status, `an answer of ${page.length} logs`)) : undefined;
  return fakeChain({ logs: entries, head, refuse });
}

test("a page refused as too large is asked again in halves: every block read once, the same view as unrefused pages", async () => {
  const seed = randomBytes(32);
  const plain = await NoxWallet.open({ seed, module: wasm, provider: chain(Infinity), pool: POOL });
  const reference = await plain.sync();
  assert.equal(reference.logs, 2500);
  assert.equal(reference.pages, 3);
  assert.equal(reference.halved, 0);

  const limited = chain(300);
  const wallet = await NoxWallet.open({ seed, module: wasm, provider: limited, pool: POOL });
  const report = await wallet.sync();
  assert.equal(report.logs, 2500);
  assert.equal(wallet.lastBlock, 2500);
  assert.equal(wallet.view, plain.view, "the same view as the wallet whose pages were never refused");
  // 1,000 → 500 → 250 blocks (two refusals), then 250-block pages to the head.
  assert.equal(report.halved, 2);
  assert.deepEqual(limited.ranges.slice(0, 3), [[1, 1000], [1, 500], [1, 250]]);
  assert.ok(limited.answered.every(([from, to]) => to - from + 1 <= 250));
  assert.equal(report.pages, limited.answered.length);
  // The answered pages tile 1..2500 with no gap and no block twice.
  let next = 1;
  for (const [from, to] of limited.answered) {
    assert.equal(from, next, `page ${from}..${to} starts where the last ended`);
    next = to + 1;
  }
  assert.equal(next, 2501);
  wallet.close();
  plain.close();
});

test("with a store, small pages save the view once per 1,000 blocks and at the head, not once per page", async () => {
  const m = await NoxWasm.instantiate(wasm);
  const store = new MemoryWalletStore();
  const wallet = await NoxWallet.create({ module: m, provider: chain(300), pool: POOL, passphrase: "pw", store });
  const saved = [];
  const put = store.put.bind(store);
  store.put = (id, record) => {
    if (record.cursor !== undefined) saved.push(record.cursor.lastBlock);
    return put(id, record);
  };
  const report = await wallet.sync();
  assert.equal(report.pages, 10); // 250-block pages
  assert.deepEqual(saved, [1000, 2000, 2500]);
  const record = await store.get("default");
  assert.equal(openState(m, wallet.seedCopy(), record.state), wallet.view, "the stored view is the synced one");
  wallet.close();
});

test("after a busy stretch the pages grow back: a quiet stretch is read in pages of 1,000 blocks again", async () => {
  // Blocks 1..600 one log each; then one log every 50 blocks up to block 6,000.
  const entries = [...Array.from({ length: 600 }, (_, i) => log(i))];
  for (let b = 650; b <= 6000; b += 50) entries.push(log(entries.length, b));
  const seed = randomBytes(32);
  const plain = await NoxWallet.open({ seed, module: wasm, provider: chain(Infinity, "too-large", entries, 6000), pool: POOL });
  await plain.sync();
  const limited = chain(300, "too-large", entries, 6000);
  const wallet = await NoxWallet.open({ seed, module: wasm, provider: limited, pool: POOL });
  const report = await wallet.sync();
  assert.equal(report.logs, entries.length);
  assert.equal(wallet.view, plain.view);
  assert.equal(report.halved, 2);
  // Busy: 250-block pages; quiet: 250 → 500 → 1,000 blocks, and 1,000-block pages to the head.
  const spans = limited.answered.map(([from, to]) => to - from + 1);
  assert.deepEqual(spans.slice(0, 3), [250, 250, 250]);
  assert.ok(spans.includes(500), `spans ${spans}`);
  assert.ok(spans.filter((n) => n === 1000).length >= 4, `spans ${spans}`);
  assert.equal(report.pages, limited.answered.length);
  assert.ok(report.pages <= 12, `${report.pages} pages, not hundreds`);
  wallet.close();
  plain.close();
});

test("other refusals are not retried, and a single block too large is an error", async () => {
  const seed = randomBytes(32);
  const forbidden = chain(300, "forbidden");
  const w1 = await NoxWallet.open({ seed, module: wasm, provider: forbidden, pool: POOL });
  await assert.rejects(w1.sync(), (e) => e instanceof ProviderRpcError && e.data?.status === "forbidden");
  assert.equal(forbidden.ranges.length, 1, "a forbidden page is not asked again");

  const none = chain(0);
  const w2 = await NoxWallet.open({ seed, module: wasm, provider: none, pool: POOL });
  await assert.rejects(w2.sync(), (e) => e instanceof ProviderRpcError && e.data?.status === "too-large");
  // Block 1 has one log: 1,000 → … → [1, 1] refused, then it gives up.
  assert.deepEqual(none.ranges.at(-1), [1, 1]);
  assert.equal(w2.lastBlock, 0, "the view stays at the last block read");
  w1.close();
  w2.close();
});

test("an eth_getLogs answer that is not an array is refused by name, not a TypeError", async () => {
  for (const answer of [null, { logs: [] }, "0x"]) {
    const provider = {
      async request({ method }) {
        return method === "eth_blockNumber" ? "0x10" : answer;
      },
    };
    const wallet = await NoxWallet.open({ seed: randomBytes(32), module: wasm, provider, pool: POOL });
    await assert.rejects(wallet.sync(), (e) => e.code === "refused" && /did not answer an array/.test(e.message), `${JSON.stringify(answer)}`);
  }
});
