// The SDK against a real multi-process testnet (`nox testnet up`: a directory,
// one node per layer, Anvil with the registry, exits forwarding JSON-RPC to
// Anvil): the WebAssembly client core talks to the entry and the gateway over
// WebSocket. An echo round trip; viem's getBlockNumber and getBalance through
// the EIP-1193 provider; a transaction signed by a local account, broadcast
// with eth_sendRawTransaction through the mixnet, and mined.
//
// Needs the `nox` binary (NOX_BIN, default <target>/debug/nox) and the module
// (NOX_WASM, default <target>/wasm32-unknown-unknown/release/nox_wasm.wasm),
// which scripts/test.sh builds first.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createPublicClient, createWalletClient, custom, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { chromium } from "playwright-core";
import WebSocket from "ws";
import { NoxClient, loadModule } from "../dist/index.js";
import { servePage } from "../examples/page-server.mjs";
import { WASM, startTestnet, target } from "./testnet-helper.mjs";

// Anvil's first default account (a public test key).
const FUNDED = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");

let net;
let dir;
let client;

before(() => {
  net = startTestnet({ prefix: "nox-sdk-", portBase: 9_300, stride: 20 });
  dir = net.dir;
});

after(() => {
  client?.close();
  net?.down();
});

async function connect(coverRate) {
  const module = await loadModule(readFileSync(WASM));
  return NoxClient.connect({
    directory: `http://${readFileSync(join(dir, "directory.addr"), "utf8").trim()}/topology`,
    authorityKey: readFileSync(join(dir, "authority.pub"), "utf8").trim(),
    module,
    coverRate,
    requestTimeoutMs: 20_000,
    WebSocket,
  });
}

test("an echo crosses the mixnet from the WebAssembly client over WebSocket", async () => {
  client = await connect(0);
  const text = "hello from the browser client core";
  const reply = await client.request("echo", new TextEncoder().encode(text));
  assert.equal(new TextDecoder().decode(reply), text);
  const stats = client.stats();
  assert.equal(stats.completed, 1, JSON.stringify(stats));
  assert.equal(stats.cover_packets, 0, "cover off: no cover packet");
});

test("viem reads chain state through the EIP-1193 provider", async () => {
  const chain = createPublicClient({ transport: custom(client.provider()) });
  const height = await chain.getBlockNumber();
  assert.equal(typeof height, "bigint");
  const balance = await chain.getBalance({ address: FUNDED.address });
  assert.ok(balance > parseEther("1"), `balance ${balance}`);
  assert.equal(await chain.getChainId(), 31337);
});

test("a transaction signed locally is broadcast through the mixnet and mined", async () => {
  const transport = custom(client.provider());
  const chain = createPublicClient({ transport });
  const wallet = createWalletClient({ account: FUNDED, transport });
  const to = "0x000000000000000000000000000000000000dEaD";
  const before = await chain.getBalance({ address: to });
  const hash = await wallet.sendTransaction({ to, value: parseEther("0.5"), chain: null });
  const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 250, timeout: 60_000 });
  assert.equal(receipt.status, "success");
  assert.equal(await chain.getBalance({ address: to }), before + parseEther("0.5"));
});

test("the paid relay: a quote from an exit's relayer, and a bundle to the same exit", async () => {
  const { exit, quote } = await client.relayQuote();
  assert.ok(client.exits().includes(exit));
  assert.equal(quote.chain_id, 31337);
  assert.match(quote.relayer, /^0x[0-9a-fA-F]{40}$/);
  assert.match(quote.executor, /^0x[0-9a-fA-F]{40}$/);
  assert.ok(quote.prices.length >= 1 && quote.payment_gas > 0, JSON.stringify(quote));
  // Calldata that is not BatchExecutor.execute(Bundle): the relayer refuses it, by reason,
  // without sending anything (a real bundle carries the ZK gas payment: `nox tx`).
  const outcome = await client.relaySubmit(exit, {
    chainId: quote.chain_id,
    executor: quote.executor,
    relayer: quote.relayer,
    calldata: Uint8Array.of(0xde, 0xad, 0xbe, 0xef),
    simulateOnly: true,
  });
  assert.equal(outcome.outcome, "refused", JSON.stringify(outcome));
  assert.equal(outcome.reason, "malformed", JSON.stringify(outcome));
  await assert.rejects(client.relayQuote("00".repeat(32)), (error) => error.code === "bad-input");
});

test("with cover traffic on (the default rate), a request still completes", async () => {
  const covered = await connect(undefined);
  try {
    const reply = await covered.request("echo", new TextEncoder().encode("covered"));
    assert.equal(new TextDecoder().decode(reply), "covered");
    // Idle, the client keeps sending: empty slots carry cover (λ_P = 2.75/s by default).
    const deadline = Date.now() + 10_000;
    let stats = covered.stats();
    while (stats.cover_packets < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      stats = covered.stats();
    }
    assert.ok(stats.cover_packets >= 3, JSON.stringify(stats));
    assert.equal(stats.real_packets, 1, JSON.stringify(stats));
  } finally {
    covered.close();
  }
});

test("headless Chromium: a page loads the WASM client, talks to the testnet over WebSocket and shows the reply", async () => {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 640 } });
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    const query = new URLSearchParams({
      directory: `http://${readFileSync(join(dir, "directory.addr"), "utf8").trim()}/topology`,
      authority: readFileSync(join(dir, "authority.pub"), "utf8").trim(),
      text: "a reply through the mixnet, in the browser",
      n: "3",
    });
    await page.goto(`http://127.0.0.1:${server.address().port}/?${query}`);
    await page.waitForSelector("body[data-done]", { timeout: 60_000 });
    const state = await page.getAttribute("body", "data-done");
    const status = await page.textContent("#status");
    assert.equal(state, "ok", `${status} ${errors.join("; ")}`);
    assert.equal(await page.textContent("#reply"), "a reply through the mixnet, in the browser");
    const result = JSON.parse(await page.textContent("#result"));
    assert.equal(result.rtts.length, 3);
    assert.ok(Number(result.block) >= 0, JSON.stringify(result));
    assert.ok(result.stats.completed >= 4 && result.stats.timeouts === 0, JSON.stringify(result.stats));
    assert.match(result.userAgent, /Chrome/);
    // The picture a person would see, kept as a test artifact.
    const artifacts = join(target, "artifacts");
    mkdirSync(artifacts, { recursive: true });
    const png = await page.screenshot({ path: join(artifacts, "sdk-browser.png") });
    assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG");
    assert.ok(png.length > 20_000, `a screenshot of ${png.length} bytes is too small to show the page`);
    writeFileSync(join(artifacts, "sdk-browser.json"), JSON.stringify(result, null, 2));
  } finally {
    await browser.close();
    server.close();
  }
});
