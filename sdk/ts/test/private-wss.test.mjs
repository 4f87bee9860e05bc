// A private paid transaction from a page served over https:// whose links are all wss:// (issue 31),
// on `nox testnet up --tls` with Anvil, the SDK at its shipped defaults (cover traffic on, λ_P = 2.75/s).
// A native wallet (`nox wallet` subprocesses, direct RPC) deposits 1 ETH and pays 0.3 ETH to a fresh
// SDK seed; headless Chromium, trusting exactly the nodes' certificates, opens the https page, connects
// over wss://, syncs the wallet through the mixnet, and sends `eth_sendTransaction` through the NOX
// provider (quote, proof in the Worker, bundle to the exit's relayer); the receipt arrives through
// the provider, the recipient holds the value and the shielded balance drops by exactly fee + value.
// Every WebSocket the page opened was wss:// (counted by Playwright). Prints click → receipt and its parts.
//
// Needs the `nox` binary (NOX_BIN), the module (NOX_WASM), the prover fixture (NOX_PROVER_PEER) as
// private.test.mjs, and Chromium (CHROMIUM or /usr/bin/chromium).

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { createServer } from "node:https";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { chromium } from "playwright-core";
import { servePage } from "../examples/page-server.mjs";
import { NoxWallet } from "../dist/index.js";
import { NOX, WASM, startTestnet, target } from "./testnet-helper.mjs";

const PEER = process.env.NOX_PROVER_PEER ?? join(target, "debug/examples/prover_peer");
// Anvil's account #2 (a public test key): the native wallet's depositor.
const USER_KEY = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const PASSPHRASE = "correct horse battery staple";
const E18 = 10n ** 18n;

let net;

before(() => {
  net = startTestnet({ prefix: "nox-sdk-private-wss-", portBase: 13_000, stride: 40, extra: ["--tls"] });
});

after(() => {
  net?.down();
});

async function wallet(args) {
  const { stdout } = await promisify(execFile)(NOX, ["wallet", ...args], {
    encoding: "utf8",
    env: { ...process.env, NOX_WALLET_PASSPHRASE: PASSPHRASE },
    timeout: 180_000,
  });
  return stdout;
}

/** `nox wallet balance`'s ETH spendable figure, in wei (0 when none). */
async function spendable(args) {
  const line = (await wallet(["balance", ...args])).split("\n").find((l) => l.startsWith("ETH: spendable "));
  if (line === undefined) return 0n;
  const [whole, frac = ""] = line.split("spendable ")[1].split(" ETH")[0].trim().split(".");
  const pending = line.split("pending insertion ")[1].split(" ETH")[0].trim();
  return pending === "0" || /^0(\.0+)?$/.test(pending) ? BigInt(whole) * E18 + BigInt((frac + "0".repeat(18)).slice(0, 18)) : -1n;
}

async function until(what, timeoutMs, f) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** A JSON-RPC call straight to Anvil (the test's own view of the chain, never the page's). */
async function rpc(url, method, params) {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });
  return (await (await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body })).json()).result;
}

test("headless Chromium on an https:// page, every link wss://, cover on: a private paid transaction from click to receipt", async (t) => {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const dir = net.dir;
  const chain = JSON.parse(readFileSync(join(dir, "chain.json"), "utf8"));
  const pool = chain.pool.pool;
  const direct = ["--testnet", dir, "--direct-rpc", chain.rpc_url];
  writeFileSync(join(dir, "user.key"), USER_KEY);

  // The native payer deposits 1 ETH; meanwhile the testnet proving key for the page's prover.
  const a = join(dir, "wallet-a");
  assert.match(await wallet(["new", "--wallet", a]), /nox1/);
  const fixture = promisify(execFile)(PEER, ["fixture", dir]);
  await wallet(["deposit", "--wallet", a, ...direct, "--amount", "1", "--key-file", join(dir, "user.key")]);
  // The page's wallet: a fresh seed; its address (the seed's, whatever the provider) from Node.
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const anvil = { request: ({ method, params }) => rpc(chain.rpc_url, method, params ?? []) };
  const address = (await NoxWallet.open({ seed, module: readFileSync(WASM), provider: anvil, pool })).address;
  await until("the deposit's insertion", 90_000, async () => (await spendable(["--wallet", a, ...direct])) === E18);
  const amount = 3n * 10n ** 17n;
  await wallet(["send", "--wallet", a, ...direct, "--to", address, "--amount", `${amount}wei`, "--cover-rate", "0", "--yes"]);
  await fixture;

  // The https origins: the page (SDK, module, /topology proxied) and the proving key, both with the
  // entry's certificate; Chromium trusts exactly the nodes' keys.
  const nodes = readdirSync(dir)
    .filter((name) => name.startsWith("node-") && existsSync(join(dir, name, "tls/cert.pem")))
    .map((name) => join(dir, name, "tls"));
  assert.equal(nodes.length, 2, "the entry and the gateway serve wss://");
  const tls = { cert: readFileSync(join(nodes[0], "cert.pem")), key: readFileSync(join(nodes[0], "key.pem")) };
  const server = await servePage(WASM, { tls, directory: net.directoryUrl() });
  const key = readFileSync(join(dir, "transfer.pk.uncompressed"));
  const keyServer = createServer(tls, (req, res) => {
    res.writeHead(200, { "access-control-allow-origin": "*", "content-type": "application/octet-stream" }).end(key);
  });
  await new Promise((resolve) => keyServer.listen(0, "127.0.0.1", resolve));
  const spki = nodes.map((n) => {
    const der = new X509Certificate(readFileSync(join(n, "cert.pem"))).publicKey.export({ type: "spki", format: "der" });
    return createHash("sha256").update(der).digest("base64");
  });
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", `--ignore-certificate-errors-spki-list=${spki.join(",")}`] });
  t.after(async () => {
    await browser.close();
    server.close();
    keyServer.close();
  });
  const page = await browser.newPage();
  const errors = [];
  const sockets = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("websocket", (ws) => sockets.push(ws.url()));
  const origin = `https://127.0.0.1:${server.address().port}`;
  await page.goto(`${origin}/`);
  const to = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString("hex")}`;
  const value = 5n * 10n ** 16n;
  const result = await page.evaluate(
    async ({ authority, seed, pool, keyUrl, to, value, amount }) => {
      const sdk = await import("/sdk/index.js");
      const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
      // The shipped defaults: no coverRate (λ_P = 2.75/s), no timeouts given.
      const client = await sdk.NoxClient.connect({
        directory: `${location.origin}/topology`, authorityKey: authority, module: await sdk.loadModule(bytes),
      });
      try {
        const reads = client.provider();
        const wallet = await sdk.NoxWallet.open({ seed: Uint8Array.from(seed), module: bytes, provider: reads, pool });
        const t0 = performance.now();
        await wallet.sync();
        const firstSyncMs = performance.now() - t0;
        const deadline = Date.now() + 120_000;
        while (wallet.balance().spendable < BigInt(amount) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 1000));
          await wallet.sync();
        }
        const before = wallet.balance();
        const keyBytes = new Uint8Array(await (await fetch(keyUrl)).arrayBuffer());
        const prover = await sdk.TransferProver.start({ wasm: `${location.origin}/nox_wasm.wasm`, key: { bytes: keyBytes, uncompressed: true } });
        let sent;
        const sender = new sdk.PrivateSender({ wallet, prover, relay: client, provider: reads });
        const provider = client.provider({ private: { send: async (tx) => (sent = await sender.send(tx)) } });
        const clicked = performance.now();
        const hash = await provider.request({ method: "eth_sendTransaction", params: [{ to, value: `0x${BigInt(value).toString(16)}` }] });
        const returned = performance.now();
        let receipt = null;
        while (receipt === null && performance.now() - returned < 60_000) {
          receipt = await provider.request({ method: "eth_getTransactionReceipt", params: [hash] });
          if (receipt === null) await new Promise((r) => setTimeout(r, 500));
        }
        const receiptMs = performance.now() - returned;
        const ms = performance.now() - clicked;
        prover.terminate();
        await wallet.sync();
        const after = wallet.balance();
        return {
          hash, status: receipt?.status, ms, receiptMs, firstSyncMs, timings: sent.timings, fee: String(sent.fee),
          before: String(before.spendable), beforePending: String(before.pending), after: String(after.spendable + after.pending),
          protocol: location.protocol, stats: client.stats(), userAgent: navigator.userAgent,
        };
      } finally {
        client.close();
      }
    },
    {
      authority: net.authority(), seed: [...seed], pool, keyUrl: `https://127.0.0.1:${keyServer.address().port}/transfer.pk`,
      to, value: String(value), amount: String(amount),
    },
  );
  assert.deepEqual(errors, []);
  assert.equal(result.protocol, "https:");
  assert.ok(sockets.length >= 1, "the page opened links");
  assert.deepEqual(sockets.filter((u) => !u.startsWith("wss://")), [], "every link is wss://");
  assert.equal(BigInt(result.before), amount, "the page's wallet found the native payment");
  assert.equal(result.status, "0x1", "the receipt arrives through the provider");
  assert.equal(BigInt(result.after), amount - BigInt(result.fee) - value, "the balance drops by fee + value");
  assert.equal(BigInt(await rpc(chain.rpc_url, "eth_getBalance", [to, "latest"])), value, "the recipient holds the value");
  // NOX_SDK_FIGURES=<file.json>: the figures for docs/benchmarks/browser.md.
  if (process.env.NOX_SDK_FIGURES) {
    writeFileSync(process.env.NOX_SDK_FIGURES, `${JSON.stringify({
      what: "private paid transaction from an https page over wss://, SDK defaults (cover λ_P = 2.75/s), eth_sendTransaction → receipt",
      click_to_receipt_ms: result.ms, parts_ms: { ...result.timings, receiptMs: result.receiptMs }, first_sync_ms: result.firstSyncMs,
      fee_wei: result.fee, user_agent: result.userAgent, cpu: cpus()[0]?.model, cores: cpus().length, loadavg_end: loadavg(),
      date: new Date().toISOString(),
    }, null, 2)}\n`);
  }
  const parts = Object.fromEntries(Object.entries({ ...result.timings, receiptMs: result.receiptMs }).map(([k, v]) => [k, Math.round(v)]));
  console.log(
    `Chromium, https + wss, cover λ_P = 2.75/s: click → receipt ${(result.ms / 1000).toFixed(1)} s (ms: ${JSON.stringify(parts)}); ` +
      `first wallet sync ${Math.round(result.firstSyncMs)} ms; load ${loadavg().map((x) => x.toFixed(2)).join(" ")}; links ${JSON.stringify([...new Set(sockets)])}`,
  );
});
