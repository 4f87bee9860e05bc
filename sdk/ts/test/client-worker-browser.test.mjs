// The client core in a Worker (issue 31) in headless Chromium against a testnet with Anvil: a
// page whose NoxClient runs in a module Worker (WorkerNoxClient) reads eth_blockNumber through
// the mixnet with the unchanged NoxProvider; every WebSocket is the Worker's (the page opens
// none); the Worker's core sends cover at λ_P; after close, the provider answers 4900.
//
// Needs the `nox` binary, the module (NOX_WASM) and Chromium (CHROMIUM, default /usr/bin/chromium).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { servePage } from "../examples/page-server.mjs";
import { openClientPage } from "../bench/cover-hidden.mjs";
import { WASM, startTestnet } from "./testnet-helper.mjs";

let net;

before(() => {
  net = startTestnet({ prefix: "nox-sdk-worker-", portBase: 25_000, stride: 40 });
});

after(() => net?.down());

test("headless Chromium: a page's Worker client gets eth_blockNumber through the mixnet", { timeout: 180_000 }, async (t) => {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  t.after(async () => {
    await browser.close();
    server.close();
  });
  const context = await browser.newContext();
  const page = await openClientPage(context, server, {
    directory: net.directoryUrl(),
    authority: net.authority(),
    worker: true,
    coverRate: 2,
  });
  const result = await page.evaluate(async () => {
    const { client, provider, pageSockets } = window.__nox;
    const steps = [];
    const bounded = (promise, what) =>
      Promise.race([
        promise,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in 60 s after ${steps}`)), 60_000)),
      ]).then((value) => {
        steps.push(what);
        return value;
      });
    const block = await bounded(provider.request({ method: "eth_blockNumber" }), "eth_blockNumber");
    const chainId = await bounded(provider.request({ method: "eth_chainId" }), "eth_chainId");
    // Idle, the Worker's core keeps sending: empty slots carry cover (λ_P = 2/s).
    let stats = await bounded(client.stats(), "stats");
    for (const deadline = Date.now() + 10_000; stats.cover_packets < 3 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      stats = await bounded(client.stats(), "stats");
    }
    client.close();
    const afterClose = await provider.request({ method: "eth_blockNumber" }).then(
      () => null,
      (e) => ({ code: e.code, nox: e.data?.nox }),
    );
    return { block, chainId, stats, pageSockets: pageSockets(), isWorkerClient: client.constructor.name, afterClose };
  });
  assert.equal(result.isWorkerClient, "WorkerNoxClient");
  assert.match(result.block, /^0x[0-9a-f]+$/, JSON.stringify(result));
  assert.equal(result.chainId, "0x7a69", JSON.stringify(result));
  assert.equal(result.pageSockets, 0, "the page opened no WebSocket: the links are the Worker's");
  assert.ok(result.stats.completed >= 2 && result.stats.timeouts === 0, JSON.stringify(result.stats));
  assert.ok(result.stats.cover_packets >= 3, `the Worker's core sends cover: ${JSON.stringify(result.stats)}`);
  assert.deepEqual(result.afterClose, { code: 4900, nox: "closed" });
});
