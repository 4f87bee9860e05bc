// SURB round trip from the browser client, beside the same client core in Node
// and the native client, in one run on one testnet (docs/benchmarks/browser.md).
//
//   node sdk/ts/bench/rtt.mjs [--rounds 30] [--mean-delay-ms 1] [--out bench/data/browser-rtt.json]
//
// Needs what the SDK tests need: `npm run build --prefix sdk/ts`, the `nox`
// binary (NOX_BIN) and the module (NOX_WASM), Chromium (CHROMIUM). One testnet
// (`nox testnet up`: one node per layer, the nodes' shipped cover rates, no
// chain) serves every client; each client sends echo requests one after
// another, with cover traffic off (λ_P = 0) and at the shipped default (2/s).

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import WebSocket from "ws";
import { NoxClient, loadModule } from "../dist/index.js";
import { servePage } from "../examples/page-server.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
const rounds = Number(args.rounds ?? 30);
const meanDelay = String(args["mean-delay-ms"] ?? 1);
const repo = join(import.meta.dirname, "../../..");
const target = process.env.CARGO_TARGET_DIR ?? join(repo, "target");
const NOX = process.env.NOX_BIN ?? join(target, "debug/nox");
const WASM = process.env.NOX_WASM ?? join(target, "wasm32-unknown-unknown/release/nox_wasm.wasm");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const out = args.out ?? join(repo, "bench/data/browser-rtt.json");

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { n: sorted.length, p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), mean, min: sorted[0], max: sorted.at(-1) };
}

const dir = mkdtempSync(join(tmpdir(), "nox-rtt-"));
const base = String(36_000 + (process.pid % 50) * 40);
execFileSync(NOX, ["testnet", "up", "--dir", dir, "--base-port", base, "--nodes-per-layer", "1", "--mean-delay-ms", meanDelay, "--no-chain"], {
  stdio: ["ignore", "inherit", "inherit"],
});
const directory = `http://${readFileSync(join(dir, "directory.addr"), "utf8").trim()}/topology`;
const authority = readFileSync(join(dir, "authority.pub"), "utf8").trim();
const text = "round trip";

/** The native client: one `nox client echo` process per round (its link to the entry is new each time). */
function native(cover, transport) {
  const rtts = [];
  for (let i = 0; i < rounds; i++) {
    const stdout = execFileSync(NOX, ["client", "echo", "--testnet", dir, "--cover-rate", String(cover), "--transport", transport, text], {
      encoding: "utf8",
    });
    const match = /round trip: ([\d.]+) ms/.exec(stdout);
    if (match === null) throw new Error(`no round trip in: ${stdout}`);
    rtts.push(Number(match[1]));
  }
  return { cold: summary(rtts) };
}

/** The SDK in Node: one client, the first request (cold: the entry link is dialed) and the rest (warm). */
async function node(cover) {
  const module = await loadModule(readFileSync(WASM));
  const client = await NoxClient.connect({ directory, authorityKey: authority, module, coverRate: cover, WebSocket });
  const rtts = [];
  try {
    for (let i = 0; i <= rounds; i++) {
      const t0 = performance.now();
      await client.request("echo", new TextEncoder().encode(text));
      rtts.push(performance.now() - t0);
    }
  } finally {
    client.close();
  }
  return { first: rtts[0], warm: summary(rtts.slice(1)) };
}

/** The SDK in headless Chromium: the example page, as in the SDK test. */
async function browser(cover) {
  const server = await servePage(WASM);
  const chrome = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  try {
    const page = await chrome.newPage();
    const query = new URLSearchParams({ directory, authority, cover: String(cover), n: String(rounds + 1), text, chain: "0" });
    await page.goto(`http://127.0.0.1:${server.address().port}/?${query}`);
    await page.waitForSelector("body[data-done]", { timeout: 600_000 });
    if ((await page.getAttribute("body", "data-done")) !== "ok") throw new Error(await page.textContent("#status"));
    const result = JSON.parse(await page.textContent("#result"));
    return { first: result.rtts[0], warm: summary(result.rtts.slice(1)), userAgent: result.userAgent };
  } finally {
    await chrome.close();
    server.close();
  }
}

const results = {};
try {
  for (const cover of [0, 2]) {
    const label = cover === 0 ? "cover_off" : "cover_default";
    results[label] = {
      cover_rate: cover,
      native_tcp: native(cover, "tcp"),
      native_websocket: native(cover, "websocket"),
      sdk_node: await node(cover),
      sdk_chromium: await browser(cover),
    };
    console.error(`${label}: done`);
  }
} finally {
  execFileSync(NOX, ["testnet", "down", "--dir", dir], { stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
}

const commit = execFileSync("git", ["-C", repo, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
const record = {
  experiment: "browser_surb_round_trip",
  commit,
  date: new Date().toISOString(),
  machine: { cpu: cpus()[0]?.model, cores: cpus().length },
  network: { layers: 3, nodes_per_layer: 1, mean_delay_ms: Number(meanDelay), node_cover: "testnet defaults (λ_L = λ_D = 0.05/s)" },
  rounds,
  results,
};
writeFileSync(out, `${JSON.stringify(record, null, 2)}\n`);

const ms = (x) => (x === undefined ? "—" : x.toFixed(1));
console.log(`| cover | client | first request (ms) | p50 (ms) | p90 (ms) | p50 ÷ native TCP p50 |`);
console.log(`|---|---|---:|---:|---:|---:|`);
for (const [label, r] of Object.entries(results)) {
  const base = r.native_tcp.cold.p50;
  const row = (name, first, s) => console.log(`| ${label} | ${name} | ${ms(first)} | ${ms(s.p50)} | ${ms(s.p90)} | ×${(s.p50 / base).toFixed(2)} |`);
  row("native, TCP (one process per request)", undefined, r.native_tcp.cold);
  row("native, WebSocket (one process per request)", undefined, r.native_websocket.cold);
  row("SDK in Node 20 (WASM)", r.sdk_node.first, r.sdk_node.warm);
  row("SDK in Chromium (WASM)", r.sdk_chromium.first, r.sdk_chromium.warm);
}
console.log(`\nwritten: ${out}`);
