// The example dapps, installed from the SDK's npm tarball and built (test.sh does both), loaded by
// headless Chromium over https:// against a testnet whose entry and gateway serve wss:// under a
// throwaway CA (`nox testnet up --tls`, with its Anvil chain). Each page reads eth_blockNumber and
// eth_chainId through the mixnet; the test checks them against Anvil itself, and that the page's
// module came from the installed package (a request for the .wasm under the build's own paths).
//
// Needs the `nox` binary (NOX_BIN), as sdk/ts/test/testnet.test.mjs; Chromium at CHROMIUM or /usr/bin/chromium.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createRequire } from "node:module";
import { startTestnet } from "../ts/test/testnet-helper.mjs";
import { serveStatic } from "./serve.mjs";

// playwright-core is the SDK's dev dependency (sdk/ts/node_modules), not the examples'.
const { chromium } = createRequire(join(import.meta.dirname, "../ts/package.json"))("playwright-core");

let net;
let browser;
let nodes;

// A native wallet's private transfer to prove in the Vite page (the `prover_peer` example, as
// sdk/ts/test/prover.test.mjs): its seed, pool view and request, and the proving key's
// uncompressed copy; `prover_peer verify` checks the page's proof natively.
const target = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache/nox/target");
const PEER = process.env.NOX_PROVER_PEER ?? join(target, "debug/examples/prover_peer");
const fixtureDir = mkdtempSync(join(tmpdir(), "nox-sdk-examples-prover-"));
const peer = (...args) => execFileSync(PEER, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
peer("fixture", fixtureDir);
const proverFiles = {
  "/fixture.json": readFileSync(join(fixtureDir, "fixture.json")),
  "/transfer.pk.uncompressed": readFileSync(join(fixtureDir, "transfer.pk.uncompressed")),
};

before(async () => {
  net = startTestnet({ prefix: "nox-sdk-examples-", portBase: 26_000, stride: 40, extra: ["--tls"] });
  nodes = readdirSync(net.dir)
    .filter((name) => name.startsWith("node-") && existsSync(join(net.dir, name, "tls/cert.pem")))
    .map((name) => ({ dir: join(net.dir, name), layer: Number(readFileSync(join(net.dir, name, "layer"), "utf8")) }));
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath}`);
  // Chromium trusts exactly the nodes' keys (SHA-256 of each certificate's SubjectPublicKeyInfo).
  const spki = nodes.map((n) => {
    const der = new X509Certificate(readFileSync(join(n.dir, "tls/cert.pem"))).publicKey.export({ type: "spki", format: "der" });
    return createHash("sha256").update(der).digest("base64");
  });
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox", `--ignore-certificate-errors-spki-list=${spki.join(",")}`] });
});

after(async () => {
  await browser?.close();
  net?.down();
  rmSync(fixtureDir, { recursive: true, force: true });
});

/** Anvil's own answer to `method` (its URL from a node's chain config). */
async function anvil(method) {
  const toml = readFileSync(join(nodes[0].dir, "node.toml"), "utf8");
  const url = /rpc_urls\s*=\s*\["([^"]+)"\]/.exec(toml)?.[1];
  assert.ok(url, "no rpc_urls in node.toml");
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }) });
  return (await response.json()).result;
}

/** Serves `root` over https (the entry's certificate), loads it with the cover default, returns the page's result. */
async function runApp(root, query = {}) {
  assert.ok(existsSync(join(root, "index.html")), `${root} is not built (run sdk/examples/test.sh)`);
  const entry = nodes.find((n) => n.layer === 0);
  const tls = { cert: readFileSync(join(entry.dir, "tls/cert.pem")), key: readFileSync(join(entry.dir, "tls/key.pem")) };
  const server = await serveStatic(root, { tls, directory: net.directoryUrl(), extra: proverFiles });
  const page = await browser.newPage();
  const wasm = [];
  const requests = [];
  const errors = [];
  page.on("request", (r) => {
    requests.push(new URL(r.url()).pathname);
    if (r.url().endsWith(".wasm")) wasm.push(new URL(r.url()).pathname);
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  try {
    const origin = `https://127.0.0.1:${server.address().port}`;
    const before = BigInt(await anvil("eth_blockNumber"));
    await page.goto(`${origin}/?${new URLSearchParams({ authority: net.authority(), ...query })}`);
    await page.waitForSelector("body[data-done]", { timeout: 180_000 });
    const status = await page.textContent("#status");
    assert.equal(await page.getAttribute("body", "data-done"), "ok", `${status} ${errors.join("; ")}`);
    const result = JSON.parse(await page.textContent("#result"));
    const after = BigInt(await anvil("eth_blockNumber"));
    assert.ok(BigInt(result.block) >= before && BigInt(result.block) <= after, `${result.block} not in [${before}, ${after}]`);
    assert.equal(result.chainId, await anvil("eth_chainId"));
    assert.equal(result.protocol, "https:");
    return { result, wasm, requests };
  } finally {
    await page.close();
    server.close();
  }
}

test("plain ES modules (import map into node_modules): eth_blockNumber over wss:// through the mixnet", async () => {
  const { result, wasm } = await runApp(join(import.meta.dirname, "plain/build"));
  assert.deepEqual(wasm, ["/node_modules/@nox-mixnet/sdk/dist/nox_wasm.wasm"]);
  console.log(`plain: connect ${result.connectMs.toFixed(0)} ms, eth_blockNumber ${result.roundTripMs.toFixed(0)} ms (cover default)`);
});

test("Vite build: the bundled SDK finds its hashed module, reads eth_blockNumber over wss://, its prover Worker starts, and the split prover proves on 2 Workers", async () => {
  const { result, wasm, requests } = await runApp(join(import.meta.dirname, "vite/dist"), {
    fixture: "/fixture.json",
    key: "/transfer.pk.uncompressed",
    workers: "2",
  });
  // The page's client and the prover Worker both fetch the one hashed module.
  assert.ok(wasm.length >= 1, JSON.stringify(requests));
  for (const path of wasm) assert.match(path, /^\/assets\/nox_wasm-[\w-]+\.wasm$/);
  // The prover Worker, bundled by Vite (no bundler configuration in the app): it loaded, compiled
  // the module off the main thread and refused a key that is not a proving key with the module's
  // own error code. Before the fix it never answered (its imports 404 in the build).
  // (Requested again, or served from the cache, by the split proof's coordinator and its helper.)
  const worker = requests.filter((path) => /^\/assets\/prover-worker-[\w-]+\.js$/.test(path));
  assert.ok(worker.length >= 1, JSON.stringify(requests));
  assert.equal(new Set(worker).size, 1, JSON.stringify(requests));
  assert.ok(result.prover.answered !== "started" && result.prover.answered !== "no-code", JSON.stringify(result.prover));
  assert.ok(!requests.some((path) => path.endsWith("/nox_wasm.mjs")), "a Worker import left unbundled");
  // The split prover in the built app: the bundled prover Worker started a helper Worker from its
  // own script (hardwareConcurrency 2 here, deviceMemory 8: neither caps 2), the coordinator
  // reported both MSM parts, and the proof verifies natively.
  const split = result.split;
  assert.ok(split, "the page did not prove");
  assert.equal(split.workers, 2, JSON.stringify(split));
  assert.deepEqual(split.parts, ["0/2", "1/2", "2/2"]);
  const file = join(fixtureDir, "proof-vite.bin");
  writeFileSync(file, Buffer.from(split.proof, "hex"));
  assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
  console.log(`vite: split proof on ${split.workers} Workers ${split.proveMs.toFixed(0)} ms (helper started in ${split.helpersMs.toFixed(0)} ms)`);
  console.log(`vite: connect ${result.connectMs.toFixed(0)} ms, eth_blockNumber ${result.roundTripMs.toFixed(0)} ms (cover default); prover Worker answered ${result.prover.answered} in ${result.prover.ms.toFixed(0)} ms`);
});

test("Node: the installed package's loadModule() reads its own dist/nox_wasm.wasm and verifies the testnet's topology", async () => {
  // Resolved from the plain example's node_modules, as a Node consumer of the tarball would.
  const entry = createRequire(join(import.meta.dirname, "plain/package.json")).resolve("@nox-mixnet/sdk");
  assert.match(entry, /node_modules\/@nox-mixnet\/sdk\/dist\/index\.js$/);
  const { loadModule } = await import(entry);
  const module = await loadModule();
  const document = new Uint8Array(await (await fetch(net.directoryUrl())).arrayBuffer());
  const key = Buffer.from(net.authority(), "hex");
  const now = Math.floor(Date.now() / 1000);
  assert.ok(module.topologyNodes(module.verifyTopology(document, key, now), now).length >= 3);
  // Another authority's key: the same document is refused.
  const other = Uint8Array.from(key);
  other[0] ^= 1;
  assert.throws(() => module.verifyTopology(document, other, now));
});
