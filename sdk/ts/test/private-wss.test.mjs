// The browser wallet's whole flow on one testnet (issue 31, "what it must show", first bullet): pages
// served over https:// whose links are all wss:// (`nox testnet up --tls` with Anvil), the SDK at its
// shipped defaults (cover traffic on, λ_P = 2.75/s). Headless Chromium trusts exactly the nodes' keys.
//  1. create: page 1 (a dapp page importing viem and the SDK from this package's node_modules and
//     dist through an import map, nothing from the web) connects over wss:// and creates the wallet:
//     a fresh seed from the page's CSPRNG sealed under a passphrase in IndexedDB (`NoxWallet.create`);
//     the shielded address is read in the page. The sealed key read back from IndexedDB opens with
//     `nox wallet restore --from` to the same address (the native format, the passphrase's seal).
//  2. receive: a native wallet (`nox wallet` subprocesses, direct RPC) deposits 1 ETH and pays 0.3 ETH
//     to that address; page 1's wallet syncs through the mixnet until it holds exactly 0.3 ETH.
//  3. send: viem's `walletClient.sendTransaction` with `custom(noxProvider)` (the dapp's one-line
//     change) sends a paid private withdrawal (quote, proof in the Worker, bundle to the exit's
//     relayer); viem's `waitForTransactionReceipt` through the same provider gets a success receipt,
//     the recipient holds the value and the shielded balance drops by exactly fee + value.
//  4. restore: page 2 in a fresh browser context (its IndexedDB checked empty) restores the wallet
//     from its sealed seed and the passphrase, syncs through the mixnet from the pool's first block,
//     and at the same block as page 1 holds exactly page 1's balances (root, leaves, every asset).
// Every WebSocket either page opened was wss:// (counted by Playwright). Prints the parts' times.
//
// Needs the `nox` binary (NOX_BIN), the module (NOX_WASM), the prover fixture (NOX_PROVER_PEER) as
// private.test.mjs, and Chromium (CHROMIUM or /usr/bin/chromium).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { createServer } from "node:https";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { chromium } from "playwright-core";
import { servePage } from "../examples/page-server.mjs";
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

test("headless Chromium, https:// pages, every link wss://, cover on: create a sealed wallet, receive from a native wallet, send with viem's sendTransaction, restore in a second page to the same balance", async (t) => {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const started = Date.now();
  const dir = net.dir;
  const chain = JSON.parse(readFileSync(join(dir, "chain.json"), "utf8"));
  const pool = chain.pool.pool;
  const direct = ["--testnet", dir, "--direct-rpc", chain.rpc_url];
  writeFileSync(join(dir, "user.key"), USER_KEY);

  // The native payer deposits 1 ETH while the page creates its wallet; meanwhile the testnet
  // proving key for the page's prover.
  const a = join(dir, "wallet-a");
  assert.match(await wallet(["new", "--wallet", a]), /nox1/);
  const fixture = promisify(execFile)(PEER, ["fixture", dir]);
  const deposited = wallet(["deposit", "--wallet", a, ...direct, "--amount", "1", "--key-file", join(dir, "user.key")]);
  deposited.catch(() => {}); // awaited below; not an unhandled rejection while the page works

  // The https origins: the page (SDK, module, viem, /topology proxied) and the proving key, both
  // with the entry's certificate; Chromium trusts exactly the nodes' keys.
  const nodes = readdirSync(dir)
    .filter((name) => name.startsWith("node-") && existsSync(join(dir, name, "tls/cert.pem")))
    .map((name) => join(dir, name, "tls"));
  assert.equal(nodes.length, 2, "the entry and the gateway serve wss://");
  const tls = { cert: readFileSync(join(nodes[0], "cert.pem")), key: readFileSync(join(nodes[0], "key.pem")) };
  const server = await servePage(WASM, { tls, directory: net.directoryUrl(), packages: ["viem"] });
  t.after(() => server.close());
  // The key is read when asked for: the fixture writes it while the page creates its wallet.
  const keyServer = createServer(tls, (req, res) => {
    const path = join(dir, "transfer.pk.uncompressed");
    if (!existsSync(path)) return void res.writeHead(503).end();
    res.writeHead(200, { "access-control-allow-origin": "*", "content-type": "application/octet-stream" }).end(readFileSync(path));
  });
  await new Promise((resolve) => keyServer.listen(0, "127.0.0.1", resolve));
  t.after(() => keyServer.close());
  const spki = nodes.map((n) => {
    const der = new X509Certificate(readFileSync(join(n, "cert.pem"))).publicKey.export({ type: "spki", format: "der" });
    return createHash("sha256").update(der).digest("base64");
  });
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", `--ignore-certificate-errors-spki-list=${spki.join(",")}`] });
  t.after(() => browser.close());
  const errors = [];
  const sockets = [];
  const origin = `https://127.0.0.1:${server.address().port}`;
  /**
   * A wallet page: a fresh browser context (its own IndexedDB) at the dapp page (import map: viem),
   * its NoxClient connected over wss:// at the SDK's shipped defaults (no coverRate: λ_P = 2.75/s;
   * no timeouts given), and the module's bytes and the IndexedDB store kept in the page's
   * `globalThis.flow` (with viem, imported first and timed, when `withViem`). Resolves to the page,
   * whether its IndexedDB held no wallet before, and viem's load time.
   */
  const openWalletPage = async ({ withViem = false } = {}) => {
    const page = await (await browser.newContext()).newPage();
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("websocket", (ws) => sockets.push(ws.url()));
    await page.goto(`${origin}/dapp`);
    const opened = await page.evaluate(
      async ({ authority, withViem }) => {
        const t0 = performance.now();
        const viem = withViem ? await import("viem") : undefined;
        const viemLoadMs = performance.now() - t0;
        const sdk = await import("/sdk/index.js");
        const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
        const client = await sdk.NoxClient.connect({
          directory: `${location.origin}/topology`, authorityKey: authority, module: await sdk.loadModule(bytes),
        });
        const store = new sdk.IndexedDbWalletStore();
        const emptyBefore = (await store.get("default")) === undefined;
        globalThis.flow = { viem, sdk, bytes, client, store };
        return { emptyBefore, viemLoadMs };
      },
      { authority: net.authority(), withViem },
    );
    return { page, ...opened };
  };

  // 1. Page 1 creates the wallet: a new seed sealed under the passphrase in IndexedDB.
  const { page: page1, emptyBefore, viemLoadMs } = await openWalletPage({ withViem: true });
  const created = {
    viemLoadMs,
    emptyBefore,
    ...(await page1.evaluate(
      async ({ pool, passphrase }) => {
        const { sdk, bytes, client, store } = globalThis.flow;
        const reads = client.provider();
        const t1 = performance.now();
        const wallet = await sdk.NoxWallet.create({ module: bytes, provider: reads, pool, passphrase: new TextEncoder().encode(passphrase), store });
        const createMs = performance.now() - t1;
        const stored = await store.get("default");
        Object.assign(globalThis.flow, { reads, wallet });
        return {
          createMs, address: wallet.address, storedKey: [...(stored?.sealedKey ?? [])],
          sameAsWallet: stored?.sealedKey !== undefined && stored.sealedKey.every((b, i) => b === wallet.sealedKey[i]),
        };
      },
      { pool, passphrase: PASSPHRASE },
    )),
  };
  assert.ok(created.emptyBefore, "page 1's IndexedDB held no wallet before");
  assert.match(created.address, /^nox1/, "the page reads its shielded address");
  assert.ok(created.storedKey.length > 0 && created.sameAsWallet, "the sealed seed is kept in IndexedDB");
  // What IndexedDB keeps is the seed sealed under the passphrase in `wallet.key`'s format: it opens
  // natively to the page's address.
  const pageKey = join(dir, "page.key");
  writeFileSync(pageKey, Uint8Array.from(created.storedKey));
  await wallet(["restore", "--wallet", join(dir, "wallet-page"), "--from", pageKey]);
  assert.ok((await wallet(["address", "--wallet", join(dir, "wallet-page")])).includes(created.address), "the sealed key opens natively to the page's address");

  // 2. The native wallet pays the address the page created.
  await deposited;
  await until("the deposit's insertion", 90_000, async () => (await spendable(["--wallet", a, ...direct])) === E18);
  const amount = 3n * 10n ** 17n;
  await wallet(["send", "--wallet", a, ...direct, "--to", created.address, "--amount", `${amount}wei`, "--cover-rate", "0", "--yes"]);
  await fixture;

  // 3. Page 1 finds the payment, then sends with viem's sendTransaction through the NOX provider.
  const to = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString("hex")}`;
  const value = 5n * 10n ** 16n;
  const sent = await page1.evaluate(
    async ({ keyUrl, to, value, amount }) => {
      const { viem, sdk, client, reads, wallet } = globalThis.flow;
      const t0 = performance.now();
      await wallet.sync();
      const deadline = Date.now() + 120_000;
      while (wallet.balance().spendable < BigInt(amount) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 1000));
        await wallet.sync();
      }
      const receiveSyncMs = performance.now() - t0;
      const before = wallet.balance();
      const keyBytes = new Uint8Array(await (await fetch(keyUrl)).arrayBuffer());
      const prover = await sdk.TransferProver.start({ wasm: `${location.origin}/nox_wasm.wasm`, key: { bytes: keyBytes, uncompressed: true } });
      let private_;
      let workers;
      const onProgress = (p) => {
        if (p.stage === "prove") workers = p.workers;
      };
      const sender = new sdk.PrivateSender({ wallet, prover, relay: client, provider: reads, onProgress });
      const provider = client.provider({ private: { send: async (tx) => (private_ = await sender.send(tx)) } });
      // The dapp's one-line change: viem's clients on `custom(noxProvider)`.
      const transport = viem.custom(provider);
      const publicClient = viem.createPublicClient({ transport, pollingInterval: 500 });
      const chain = viem.defineChain({
        id: await publicClient.getChainId(), name: "NOX testnet",
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [] } },
      });
      const walletClient = viem.createWalletClient({ chain, transport });
      const clicked = performance.now();
      // No account: the shielded wallet behind the provider pays (the relayer's executor sends).
      const hash = await walletClient.sendTransaction({ account: null, to, value: BigInt(value) });
      const returned = performance.now();
      const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 60_000 });
      const receiptMs = performance.now() - returned;
      const ms = performance.now() - clicked;
      prover.terminate();
      await wallet.sync();
      const after = wallet.balance();
      return {
        hash, status: receipt.status, receiptHash: receipt.transactionHash, ms, receiptMs, viemMs: returned - clicked - Object.values(private_.timings).reduce((x, y) => x + y, 0),
        receiveSyncMs, workers, timings: private_.timings, txHash: private_.txHash, fee: String(private_.fee),
        before: String(before.spendable), beforePending: String(before.pending), after: String(after.spendable + after.pending),
        protocol: location.protocol, userAgent: navigator.userAgent,
      };
    },
    { keyUrl: `https://127.0.0.1:${keyServer.address().port}/transfer.pk`, to, value: String(value), amount: String(amount) },
  );
  assert.equal(sent.protocol, "https:");
  assert.equal(BigInt(sent.before), amount, "the page's wallet found exactly the native payment");
  assert.equal(sent.hash, sent.txHash, "viem's sendTransaction returned the relayed transaction's hash");
  assert.equal(sent.status, "success", "viem's receipt through the provider: mined, success");
  assert.equal(sent.receiptHash, sent.hash);
  assert.equal(BigInt(sent.after), amount - BigInt(sent.fee) - value, "the balance drops by fee + value");
  assert.equal(BigInt(await rpc(chain.rpc_url, "eth_getBalance", [to, "latest"])), value, "the recipient holds the value");

  // 4. Page 2, a fresh context (empty IndexedDB), restores from the sealed seed and the passphrase.
  const { page: page2, emptyBefore: emptyBefore2 } = await openWalletPage();
  const restored = {
    emptyBefore: emptyBefore2,
    ...(await page2.evaluate(
      async ({ pool, passphrase, sealed }) => {
        const { sdk, bytes, client, store } = globalThis.flow;
        const wallet = await sdk.NoxWallet.restore({
          module: bytes, provider: client.provider(), pool, passphrase: new TextEncoder().encode(passphrase), store, sealed: Uint8Array.from(sealed),
        });
        const report = await wallet.sync();
        globalThis.flow.wallet = wallet;
        return { address: wallet.address, syncMs: report.ms, pages: report.pages, logs: report.logs, lastBlock: wallet.lastBlock, balances: wallet.balances() };
      },
      { pool, passphrase: PASSPHRASE, sealed: created.storedKey },
    )),
  };
  assert.ok(restored.emptyBefore, "page 2's IndexedDB held no wallet: it restores from the seed alone");
  assert.equal(restored.address, created.address, "the restored wallet is the created one");
  // Both views at the same block (a block may be mined meanwhile): then the balances are equal.
  const synced = async (page) => page.evaluate(async () => {
    await globalThis.flow.wallet.sync();
    return { lastBlock: globalThis.flow.wallet.lastBlock, balances: globalThis.flow.wallet.balances() };
  });
  let [one, two] = [await synced(page1), restored];
  await until("both pages' views at one block", 60_000, async () => {
    if (one.lastBlock === two.lastBlock) return true;
    [one, two] = [await synced(page1), await synced(page2)];
    return false;
  });
  assert.deepEqual(two.balances, one.balances, "page 2 holds exactly page 1's balances (root, leaves, every asset)");
  const eth = (b) => b.assets.find((x) => BigInt(`0x${x.asset}`) === 0n);
  assert.equal(BigInt(eth(two.balances).spendable) + BigInt(eth(two.balances).pending), BigInt(sent.after), "the restored balance is the balance after the send");
  for (const page of [page1, page2]) await page.evaluate(() => globalThis.flow.client.close());

  assert.deepEqual(errors, []);
  assert.ok(sockets.length >= 2, "both pages opened links");
  assert.deepEqual(sockets.filter((u) => !u.startsWith("wss://")), [], "every link is wss://");
  const wallMs = Date.now() - started;
  const parts = Object.fromEntries(Object.entries({ ...sent.timings, viemMs: sent.viemMs, receiptMs: sent.receiptMs }).map(([k, v]) => [k, Math.round(v)]));
  // NOX_SDK_FIGURES=<file.json>: the figures for docs/benchmarks/browser.md.
  if (process.env.NOX_SDK_FIGURES) {
    writeFileSync(process.env.NOX_SDK_FIGURES, `${JSON.stringify({
      what: "create (sealed, IndexedDB) → native payment → viem sendTransaction → receipt → restore in a second page, https pages over wss://, SDK defaults (cover λ_P = 2.75/s)",
      click_to_receipt_ms: sent.ms, parts_ms: parts, prover_workers: sent.workers, create_ms: created.createMs, viem_load_ms: created.viemLoadMs,
      receive_sync_ms: sent.receiveSyncMs, restore_sync_ms: restored.syncMs, restore_pages: restored.pages, restore_logs: restored.logs,
      test_wall_ms: wallMs, fee_wei: sent.fee, user_agent: sent.userAgent, cpu: cpus()[0]?.model, cores: cpus().length, loadavg_end: loadavg(),
      date: new Date().toISOString(),
    }, null, 2)}\n`);
  }
  console.log(
    `Chromium, https + wss, cover λ_P = 2.75/s: create ${Math.round(created.createMs)} ms (viem import ${Math.round(created.viemLoadMs)} ms); ` +
      `receive sync ${Math.round(sent.receiveSyncMs)} ms; click → receipt ${(sent.ms / 1000).toFixed(1)} s (ms: ${JSON.stringify(parts)}, proof on ${sent.workers} Worker(s)); ` +
      `restore sync ${Math.round(restored.syncMs)} ms (${restored.pages} pages, ${restored.logs} logs); test ${(wallMs / 1000).toFixed(0)} s; ` +
      `load ${loadavg().map((x) => x.toFixed(2)).join(" ")}; links ${JSON.stringify([...new Set(sockets)])}`,
  );
});
