// Private paid transactions from the SDK (issue 31) on a real testnet with Anvil: a native
// wallet (`nox wallet` subprocesses) deposits and pays the SDK wallet's shielded address
// privately; the SDK wallet syncs its notes from the pool's logs through the mixnet and sees the
// exact amount; viem's `sendTransaction` through the NOX provider sends a paid private
// transaction (quote bounded by the client's own reading, proof in the Worker, bundle to the
// exit's relayer) whose receipt arrives through the provider; the shielded balance then drops by
// exactly fee + value, and the recipient holds the value. The SDK's seed, sealed as
// `wallet.key`, restores natively to the same address and the same balance. In Chromium, a page
// creates a wallet sealed under a passphrase and kept in IndexedDB, receives a private transfer,
// and a second page restores it from the sealed key, resumes its sync from IndexedDB (no block
// read twice) and sees the same balance.
//
// Needs the `nox` binary (NOX_BIN), the module (NOX_WASM) and the prover fixture
// (NOX_PROVER_PEER, default <target>/debug/examples/prover_peer: the testnet proving key).

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { createPublicClient, createWalletClient, custom, parseEventLogs, parseAbi } from "viem";
import { chromium } from "playwright-core";
import WebSocket from "ws";
import { servePage } from "../examples/page-server.mjs";
import { NoxClient, NoxWallet, PrivateSender, TransferProver, loadModule } from "../dist/index.js";
import { NOX, WASM, startTestnet, target } from "./testnet-helper.mjs";

const PEER = process.env.NOX_PROVER_PEER ?? join(target, "debug/examples/prover_peer");
// Anvil's account #1 (a public test key, as the money tests): the native wallet's depositor.
const USER_KEY = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const PASSPHRASE = "correct horse battery staple";
const E18 = 10n ** 18n;
const TRANSACTED = parseAbi([
  "event Transacted(uint256 firstQueueIndex, uint256[2] nullifiers, uint256[2] commitments, bytes[2] notes, address indexed asset, uint256 publicIn, uint256 publicOut, uint256 fee, address recipient, address indexed relayer, bytes32 actionHash)",
]);

let net;
let client;
let prover;
/** What the first test leaves for the browser's: the SDK wallet's seed and balance. */
let shared;

before(() => {
  net = startTestnet({ prefix: "nox-sdk-private-", portBase: 21_000, stride: 40 });
});

after(() => {
  prover?.terminate();
  client?.close();
  net?.down();
});

/** Runs `nox wallet <args>` with the test passphrase; returns stdout. */
function wallet(args) {
  return execFileSync(NOX, ["wallet", ...args], {
    encoding: "utf8",
    env: { ...process.env, NOX_WALLET_PASSPHRASE: PASSPHRASE },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 180_000,
  });
}

/** `wallet` without blocking the event loop (steps run side by side). */
async function walletAsync(args) {
  const { stdout } = await promisify(execFile)(NOX, ["wallet", ...args], {
    encoding: "utf8",
    env: { ...process.env, NOX_WALLET_PASSPHRASE: PASSPHRASE },
    timeout: 180_000,
  });
  return stdout;
}

/** Decimal ETH as `nox wallet balance` prints it → wei. */
function wei(text) {
  const [whole, frac = ""] = text.trim().split(".");
  return BigInt(whole) * E18 + BigInt((frac + "0".repeat(18)).slice(0, 18));
}

/** `nox wallet balance`'s ETH figures: { spendable, pending } in wei. */
function nativeBalance(args) {
  const out = wallet(["balance", ...args]);
  const line = out.split("\n").find((l) => l.startsWith("ETH: spendable "));
  if (line === undefined) return { spendable: 0n, pending: 0n };
  const spendable = wei(line.split("spendable ")[1].split(" ETH")[0]);
  const pending = wei(line.split("pending insertion ")[1].split(" ETH")[0]);
  return { spendable, pending };
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

test("a native wallet pays the SDK wallet; viem sends a private paid transaction from it through the NOX provider", async () => {
  const started = performance.now();
  const dir = net.dir;
  const chain = JSON.parse(readFileSync(join(dir, "chain.json"), "utf8"));
  const pool = chain.pool.pool;
  const direct = ["--testnet", dir, "--direct-rpc", chain.rpc_url];
  const keyFile = join(dir, "user.key");
  writeFileSync(keyFile, USER_KEY);

  // The native payer: deposits 1 ETH (its own note), which the exits' relayers insert.
  const a = join(dir, "wallet-a");
  assert.match(wallet(["new", "--wallet", a]), /nox1/);
  const phases = [];
  const mark = (what) => phases.push(`${what} ${((performance.now() - started) / 1000).toFixed(1)} s`);
  // Side by side: the deposit, the testnet proving key for the SDK's prover, the SDK's set-up.
  const deposited = walletAsync(["deposit", "--wallet", a, ...direct, "--amount", "1", "--key-file", keyFile]);
  const fixture = promisify(execFile)(PEER, ["fixture", dir]);

  // The SDK wallet, meanwhile: a fresh seed, its reads through the mixnet.
  const module = await loadModule(readFileSync(WASM));
  client = await NoxClient.connect({
    directory: net.directoryUrl(),
    authorityKey: net.authority(),
    module,
    coverRate: 0,
    requestTimeoutMs: 20_000,
    WebSocket,
  });
  const reads = client.provider();
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const sdk = await NoxWallet.open({ seed, module: readFileSync(WASM), provider: reads, pool });
  assert.match(sdk.address, /^nox1/);
  // The same seed in `nox wallet`'s own key format restores natively to the same address.
  const b = join(dir, "wallet-b");
  const exported = join(dir, "b.key");
  writeFileSync(exported, sdk.exportKeyFile(PASSPHRASE));
  wallet(["restore", "--wallet", b, "--from", exported]);
  assert.equal(wallet(["address", "--wallet", b]).trim().split(/\s+/).find((w) => w.startsWith("nox1")), sdk.address);

  // The prover Worker with the testnet proving key (the pool's verifier's).
  await fixture;
  prover = await TransferProver.start({
    wasm: readFileSync(WASM),
    key: { bytes: readFileSync(join(dir, "transfer.pk.uncompressed")), uncompressed: true },
  });

  await deposited;
  mark("deposited, SDK ready");
  await until("the deposit's insertion", 90_000, () => {
    const f = nativeBalance(["--wallet", a, ...direct]);
    return f.pending === 0n && f.spendable === E18;
  });
  // A private transfer to the SDK wallet, paid through the mixnet by an exit's relayer.
  const amount = 3n * 10n ** 17n;
  mark("deposit inserted");
  wallet(["send", "--wallet", a, ...direct, "--to", sdk.address, "--amount", `${amount}wei`, "--cover-rate", "0", "--yes"]);

  // The SDK wallet finds the note in the pool's logs (read through the mixnet) and, once the
  // relayers insert it, can spend it.
  await sdk.sync();
  assert.deepEqual(
    sdk.balance().spendable + sdk.balance().pending,
    amount,
    "the SDK wallet sees exactly the amount paid to it",
  );
  await until("the payment's insertion", 90_000, async () => {
    await sdk.sync();
    return sdk.balance().spendable === amount;
  });
  mark("native payment sent, found and inserted");
  const before = sdk.balance();
  assert.deepEqual(before, { spendable: amount, pending: 0n });

  // viem's sendTransaction through the NOX provider: a paid private withdrawal to a fresh address.
  const sender = new PrivateSender({ wallet: sdk, prover, relay: client, provider: reads, submitTimeoutMs: 60_000 });
  let last;
  const provider = client.provider({ private: { send: async (tx) => (last = await sender.send(tx)) } });
  const walletClient = createWalletClient({ transport: custom(provider) });
  const publicClient = createPublicClient({ transport: custom(provider) });
  const to = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString("hex")}`;
  const value = 10n ** 17n;
  mark("SDK wallet spendable");
  const sending = performance.now();
  const hash = await walletClient.sendTransaction({ account: null, chain: null, to, value });
  const sentMs = performance.now() - sending;
  assert.match(hash, /^0x[0-9a-f]{64}$/);
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 1_000, timeout: 30_000 });
  assert.equal(receipt.status, "success");
  const [event] = parseEventLogs({ abi: TRANSACTED, logs: receipt.logs, eventName: "Transacted" });
  assert.ok(event !== undefined, "the receipt carries the pool's Transacted event");
  const fee = event.args.fee;
  assert.ok(fee > 0n, "a relayer fee was paid");
  assert.equal(event.args.publicOut, value);
  assert.equal((await publicClient.getBalance({ address: to })), value, "the recipient holds the value");

  // The shielded balance dropped by exactly fee + value (the change is pending insertion).
  await sdk.sync();
  const after = sdk.balance();
  assert.equal(after.spendable + after.pending, before.spendable - fee - value);

  // Natively, the same seed finds the same notes.
  const native = nativeBalance(["--wallet", b, ...direct]);
  assert.equal(native.spendable + native.pending, after.spendable + after.pending);
  shared = { seed, pool, total: after.spendable + after.pending, rpc: chain.rpc_url };
  assert.equal(last.fee, fee, "the fee proved is the fee the pool paid");
  const t = Object.fromEntries(Object.entries(last.timings).map(([k, v]) => [k, Math.round(v)]));
  console.log(
    `private transaction: sendTransaction → mined in ${(sentMs / 1000).toFixed(1)} s (ms: ${JSON.stringify(t)}); ` +
      `whole test ${((performance.now() - started) / 1000).toFixed(1)} s (${phases.join(", ")})`,
  );
});

test("headless Chromium: page 1 creates a sealed wallet kept in IndexedDB and receives a private transfer; page 2 restores it from the sealed key and passphrase, resumes its sync from IndexedDB and sees the same balance", async (t) => {
  assert.ok(shared !== undefined, "the first test ran");
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  t.after(async () => {
    await browser.close();
    server.close();
  });
  // One browser profile: both pages share the origin's IndexedDB, as a reload does.
  const context = await browser.newContext();
  const errors = [];
  const url = `http://127.0.0.1:${server.address().port}/`;
  const args = { directory: net.directoryUrl(), authority: net.authority(), pool: shared.pool, passphrase: PASSPHRASE, walletId: "sealed-e2e" };

  // Page 1: a fresh wallet sealed under the passphrase, kept in IndexedDB, synced once.
  const page1 = await context.newPage();
  page1.on("pageerror", (error) => errors.push(String(error)));
  await page1.goto(url);
  const created = await page1.evaluate(async ({ directory, authority, pool, passphrase, walletId }) => {
    const sdk = await import("/sdk/index.js");
    const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
    globalThis.client = await sdk.NoxClient.connect({
      directory, authorityKey: authority, module: await sdk.loadModule(bytes), coverRate: 0, requestTimeoutMs: 20_000,
    });
    globalThis.wallet = await sdk.NoxWallet.create({
      module: bytes, provider: globalThis.client.provider(), pool, passphrase: new TextEncoder().encode(passphrase),
      store: new sdk.IndexedDbWalletStore(), walletId,
    });
    await globalThis.wallet.sync();
    return { address: globalThis.wallet.address, sealed: [...globalThis.wallet.sealedKey] };
  }, args);
  assert.match(created.address, /^nox1/);
  // The key the page sealed opens natively (`nox wallet restore`) to the same address.
  const pageKey = join(net.dir, "page.key");
  writeFileSync(pageKey, Uint8Array.from(created.sealed));
  const restoredDir = join(net.dir, "wallet-page");
  wallet(["restore", "--wallet", restoredDir, "--from", pageKey]);
  assert.equal(wallet(["address", "--wallet", restoredDir]).trim().split(/\s+/).find((w) => w.startsWith("nox1")), created.address);

  // The native wallet pays the page's wallet privately (its change from the first test).
  const amount = 2n * 10n ** 17n;
  const a = join(net.dir, "wallet-a");
  const direct = ["--testnet", net.dir, "--direct-rpc", shared.rpc];
  await until("the native wallet's change to be spendable", 90_000, () => nativeBalance(["--wallet", a, ...direct]).spendable >= amount);
  await walletAsync(["send", "--wallet", a, ...direct, "--to", created.address, "--amount", `${amount}wei`, "--cover-rate", "0", "--yes"]);
  const seen = await page1.evaluate(async () => {
    await globalThis.wallet.sync();
    const b = globalThis.wallet.balance();
    const out = { total: String(b.spendable + b.pending), lastBlock: globalThis.wallet.lastBlock };
    globalThis.wallet.close();
    globalThis.client.close();
    return out;
  });
  assert.equal(BigInt(seen.total), amount, "page 1's wallet sees exactly the amount paid to it");
  await page1.close();
  // Blocks page 1 has not read (Anvil mines on demand): page 2 must read exactly these.
  for (let i = 0; i < 3; i++) {
    await fetch(shared.rpc, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "evm_mine", params: [] }),
    });
  }

  // Page 2 (a reload): the sealed key and the passphrase; the notes and the cursor from IndexedDB.
  const page2 = await context.newPage();
  page2.on("pageerror", (error) => errors.push(String(error)));
  await page2.goto(url);
  const resumed = await page2.evaluate(async ({ directory, authority, pool, passphrase, walletId, sealed }) => {
    const sdk = await import("/sdk/index.js");
    const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
    const module = await sdk.loadModule(bytes);
    const client = await sdk.NoxClient.connect({ directory, authorityKey: authority, module, coverRate: 0, requestTimeoutMs: 20_000 });
    try {
      const reads = client.provider();
      const ranges = [];
      const counted = {
        request: (args) => {
          if (args.method === "eth_getLogs") ranges.push([Number(BigInt(args.params[0].fromBlock)), Number(BigInt(args.params[0].toBlock))]);
          return reads.request(args);
        },
      };
      const store = new sdk.IndexedDbWalletStore();
      const options = { module: bytes, provider: counted, pool, store, walletId, sealed: Uint8Array.from(sealed) };
      let wrong;
      try {
        await sdk.NoxWallet.restore({ ...options, passphrase: "not the passphrase" });
      } catch (e) {
        wrong = e.code;
      }
      const wallet = await sdk.NoxWallet.restore({ ...options, passphrase });
      const stored = wallet.lastBlock;
      const storedBalance = wallet.balance();
      await wallet.sync();
      const b = wallet.balance();
      const cursor = (await store.get(walletId)).cursor;
      return {
        wrong, address: wallet.address, stored, ranges, cursor,
        storedTotal: String(storedBalance.spendable + storedBalance.pending), total: String(b.spendable + b.pending),
      };
    } finally {
      client.close();
    }
  }, { ...args, sealed: created.sealed });
  assert.deepEqual(errors, []);
  assert.equal(resumed.wrong, "wrong-passphrase", "a wrong passphrase is refused with a typed error");
  assert.equal(resumed.address, created.address);
  assert.equal(resumed.stored, seen.lastBlock, "the view in IndexedDB is where page 1 stopped");
  assert.equal(BigInt(resumed.storedTotal), amount, "the notes come from IndexedDB before any chain read");
  assert.ok(resumed.ranges.length > 0, "page 2 read the new blocks");
  assert.equal(resumed.ranges[0][0], seen.lastBlock + 1, "the sync resumes at the block after page 1's last");
  assert.ok(resumed.ranges.every(([from]) => from > seen.lastBlock), "no block page 1 read is read again");
  assert.equal(BigInt(resumed.total), amount, "page 2 sees the same balance");
  assert.ok(resumed.cursor.lastBlock >= seen.lastBlock);
  console.log(`Chromium sealed wallet: page 1 stopped at block ${seen.lastBlock}; page 2 read ${JSON.stringify(resumed.ranges)}`);
});

test("headless Chromium: a page restores the wallet from its seed, sees the same balance and sends a private paid transaction", async (t) => {
  assert.ok(shared !== undefined, "the first test ran");
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  // The proving key (its uncompressed copy: what the Worker caches after a first load) from
  // another origin; CORS allows the page.
  const key = readFileSync(join(net.dir, "transfer.pk.uncompressed"));
  const keyServer = createServer((req, res) => {
    res.writeHead(200, { "access-control-allow-origin": "*", "content-type": "application/octet-stream" }).end(key);
  });
  await new Promise((resolve) => keyServer.listen(0, "127.0.0.1", resolve));
  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  t.after(async () => {
    await browser.close();
    server.close();
    keyServer.close();
  });
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const to = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString("hex")}`;
  const value = 5n * 10n ** 16n;
  const result = await page.evaluate(
    async ({ directory, authority, seed, pool, keyUrl, to, value }) => {
      const sdk = await import("/sdk/index.js");
      const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
      const client = await sdk.NoxClient.connect({
        directory, authorityKey: authority, module: await sdk.loadModule(bytes), coverRate: 0, requestTimeoutMs: 20_000,
      });
      try {
        const reads = client.provider();
        const wallet = await sdk.NoxWallet.open({ seed: Uint8Array.from(seed), module: bytes, provider: reads, pool });
        await wallet.sync();
        const restored = wallet.balance();
        // The change of the first transaction becomes spendable once a relayer inserts it.
        const deadline = Date.now() + 90_000;
        while (wallet.balance().pending > 0n && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 1000));
          await wallet.sync();
        }
        const before = wallet.balance();
        const keyBytes = new Uint8Array(await (await fetch(keyUrl)).arrayBuffer());
        const prover = await sdk.TransferProver.start({
          wasm: `${location.origin}/nox_wasm.wasm`,
          key: { bytes: keyBytes, uncompressed: true },
        });
        let sent;
        const sender = new sdk.PrivateSender({ wallet, prover, relay: client, provider: reads, submitTimeoutMs: 60_000 });
        const provider = client.provider({ private: { send: async (tx) => (sent = await sender.send(tx)) } });
        const clicked = performance.now();
        const hash = await provider.request({ method: "eth_sendTransaction", params: [{ to, value: `0x${BigInt(value).toString(16)}` }] });
        const receipt = await provider.request({ method: "eth_getTransactionReceipt", params: [hash] });
        const ms = performance.now() - clicked;
        prover.terminate();
        await wallet.sync();
        const after = wallet.balance();
        return {
          address: wallet.address, hash, status: receipt?.status, ms, timings: sent.timings, fee: String(sent.fee),
          restored: String(restored.spendable + restored.pending), before: String(before.spendable), beforePending: String(before.pending),
          after: String(after.spendable + after.pending), userAgent: navigator.userAgent,
        };
      } finally {
        client.close();
      }
    },
    {
      directory: net.directoryUrl(), authority: net.authority(), seed: [...shared.seed], pool: shared.pool,
      keyUrl: `http://127.0.0.1:${keyServer.address().port}/transfer.pk`, to, value: String(value),
    },
  );
  assert.deepEqual(errors, []);
  assert.match(result.userAgent, /Chrome/);
  assert.equal(BigInt(result.restored), shared.total, "the restored wallet sees the same balance");
  assert.equal(result.beforePending, "0", "the change was inserted");
  assert.equal(result.status, "0x1", "the receipt arrives through the provider");
  assert.equal(BigInt(result.after), BigInt(result.before) - BigInt(result.fee) - value, "the balance drops by fee + value");
  const balance = await (await fetch(shared.rpc, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [to, "latest"] }),
  })).json();
  assert.equal(BigInt(balance.result), value, "the recipient holds the value");
  const ms = Object.fromEntries(Object.entries(result.timings).map(([k, v]) => [k, Math.round(v)]));
  console.log(`Chromium private transaction: click → receipt ${(result.ms / 1000).toFixed(1)} s (ms: ${JSON.stringify(ms)})`);
});
