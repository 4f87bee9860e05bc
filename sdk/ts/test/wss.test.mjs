// The SDK over wss:// against a real testnet started with `nox testnet up --tls` (a throwaway CA
// signs each entry's and gateway's certificate; the signed topology marks their endpoints wss).
// Node trusts the CA only through NODE_EXTRA_CA_CERTS (a child process: the variable is read at
// start), and without it gets nothing; headless Chromium loads the SDK from a page served over
// https:// (with an entry's certificate, the directory's document proxied from the same origin),
// trusting exactly the nodes' keys (--ignore-certificate-errors-spki-list), and gets an echo back.
//
// Needs the `nox` binary (NOX_BIN) and the module (NOX_WASM), as testnet.test.mjs.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { servePage } from "../examples/page-server.mjs";
import { WASM, startTestnet } from "./testnet-helper.mjs";

const SDK = pathToFileURL(join(import.meta.dirname, "../dist/index.js")).href;

let net;
let dir;

before(() => {
  net = startTestnet({ prefix: "nox-sdk-wss-", portBase: 17_000, stride: 20, extra: ["--tls", "--no-chain"], timeoutMs: 120_000 });
  dir = net.dir;
});

after(() => {
  net?.down();
});

const directoryUrl = () => net.directoryUrl();
const authority = () => net.authority();

/** The nodes that serve wss://: their directory and layer. */
function tlsNodes() {
  return readdirSync(dir)
    .filter((name) => name.startsWith("node-") && existsSync(join(dir, name, "tls/cert.pem")))
    .map((name) => ({ dir: join(dir, name), layer: Number(readFileSync(join(dir, name, "layer"), "utf8")) }));
}

/** An echo from a child Node process with `env`; its parsed last line, or the failure. */
function echoFromNode(env) {
  const code = `
    import { readFileSync } from "node:fs";
    import WebSocket from "ws";
    import { NoxClient, loadModule } from ${JSON.stringify(SDK)};
    const module = await loadModule(readFileSync(process.env.WASM));
    const timeout = Number(process.env.TIMEOUT_MS);
    const client = await NoxClient.connect({ directory: process.env.DIRECTORY, authorityKey: process.env.AUTHORITY,
      module, coverRate: 0, requestTimeoutMs: timeout, handshakeTimeoutMs: timeout, WebSocket });
    const reply = await client.request("echo", new TextEncoder().encode("over wss from Node"));
    console.log(JSON.stringify({ reply: new TextDecoder().decode(reply) }));
    client.close();
    process.exit(0);`;
  const base = { ...process.env, WASM, DIRECTORY: directoryUrl(), AUTHORITY: authority(), TIMEOUT_MS: "15000" };
  delete base.NODE_EXTRA_CA_CERTS;
  return spawnSync(process.execPath, ["--input-type=module", "-e", code], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...base, ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
}

test("testnet up --tls: the topology marks the entry and the gateway wss, and writes the CA", () => {
  const ca = readFileSync(join(dir, "ca.pem"), "utf8");
  assert.match(ca, /BEGIN CERTIFICATE/);
  const layers = tlsNodes().map((n) => n.layer).sort();
  assert.deepEqual(layers, [0, 2]);
  const document = JSON.parse(execFileSync("cat", [join(dir, "topology.json")], { encoding: "utf8" }));
  const endpoints = JSON.stringify(document);
  assert.ok((endpoints.match(/wss:\/\//g) ?? []).length === 2, endpoints.slice(0, 400));
});

test("Node: the SDK dials wss:// and gets its echo when NODE_EXTRA_CA_CERTS trusts the CA, nothing otherwise", () => {
  const trusted = echoFromNode({ NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") });
  assert.equal(trusted.status, 0, `${trusted.stdout}\n${trusted.stderr}`);
  assert.equal(JSON.parse(trusted.stdout.trim().split("\n").at(-1)).reply, "over wss from Node");
  // Without the CA the TLS handshake fails: no link, no reply.
  const untrusted = echoFromNode({ TIMEOUT_MS: "3000" });
  assert.notEqual(untrusted.status, 0, untrusted.stdout);
  assert.doesNotMatch(untrusted.stdout, /over wss from Node/);
});

test("headless Chromium: a page served over https connects over wss:// and gets its echo", async () => {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  assert.ok(existsSync(executablePath), `Chromium is missing at ${executablePath} (apt-get install chromium; CI installs it)`);
  const nodes = tlsNodes();
  const entry = nodes.find((n) => n.layer === 0);
  // The page's server presents the entry's certificate (it names 127.0.0.1 under the same CA).
  const tls = { cert: readFileSync(join(entry.dir, "tls/cert.pem")), key: readFileSync(join(entry.dir, "tls/key.pem")) };
  const server = await servePage(WASM, { tls, directory: directoryUrl() });
  // Chromium trusts exactly these keys (SHA-256 of each certificate's SubjectPublicKeyInfo).
  const spki = nodes.map((n) => {
    const der = new X509Certificate(readFileSync(join(n.dir, "tls/cert.pem"))).publicKey.export({ type: "spki", format: "der" });
    return createHash("sha256").update(der).digest("base64");
  });
  const browser = await chromium.launch({
    executablePath,
    args: ["--no-sandbox", `--ignore-certificate-errors-spki-list=${spki.join(",")}`],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    const origin = `https://127.0.0.1:${server.address().port}`;
    const query = new URLSearchParams({
      directory: `${origin}/topology`,
      authority: authority(),
      text: "over wss from an https page",
      n: "1",
      cover: "0",
      chain: "0",
    });
    await page.goto(`${origin}/?${query}`);
    await page.waitForSelector("body[data-done]", { timeout: 60_000 });
    const state = await page.getAttribute("body", "data-done");
    const status = await page.textContent("#status");
    assert.equal(state, "ok", `${status} ${errors.join("; ")}`);
    const result = JSON.parse(await page.textContent("#result"));
    assert.equal(result.reply, "over wss from an https page");
    assert.equal(result.protocol, "https:");
    assert.equal(result.secureContext, true);
    assert.match(result.userAgent, /Chrome/);
  } finally {
    await browser.close();
    server.close();
  }
});
