// The transfer prover in WebAssembly against native, in one run (docs/benchmarks/wasm.md,
// "The transfer prover"). Run by scripts/bench/wasm-prover.sh:
//   node sdk/ts/bench/prover.mjs --wasm <nox_wasm.wasm> --peer <release prover_peer> --proofs 3 \
//        --out bench/data/wasm-prover.json [--chromium /usr/bin/chromium] [--workers 1,2]
// --workers: the Worker counts the SDK's prover (Node Worker and Chromium) is measured with, in
// one run (1: one Worker alone; n > 1: a coordinator and n − 1 helpers splitting the MSMs).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { NoxWasm } from "../dist/nox_wasm.mjs";
import { TransferProver } from "../dist/index.js";
import { proveInChromium } from "./prover-chromium.mjs";

const { values: args } = parseArgs({
  options: {
    wasm: { type: "string" },
    peer: { type: "string" },
    proofs: { type: "string", default: "3" },
    out: { type: "string" },
    chromium: { type: "string" },
    workers: { type: "string", default: "1,2" },
  },
});
const proofs = Number(args.proofs);
const workerCounts = args.workers.split(",").map(Number);
if (workerCounts.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) throw new Error("--workers: counts 1..64, comma-separated");
const suffix = (n) => (n === 1 ? "" : `_${n}w`);
const dir = mkdtempSync(join(tmpdir(), "nox-prover-bench-"));
const peer = (...a) => execFileSync(args.peer, a.map(String), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
const unhex = (h) => new Uint8Array(Buffer.from(h, "hex"));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

peer("fixture", dir);
const fixture = JSON.parse(readFileSync(join(dir, "fixture.json"), "utf8"));
const key = readFileSync(join(dir, "transfer.pk"));
const wasm = readFileSync(args.wasm);
const input = { seed: unhex(fixture.seed), view: fixture.view, request: fixture.request };
const verify = (bytes) => {
  const file = join(dir, "proof.bin");
  writeFileSync(file, bytes);
  return JSON.parse(peer("verify", file)).verified === true;
};
const report = {
  commit: execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim(),
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg_at_start: loadavg(), uptime_at_start: execFileSync("uptime", { encoding: "utf8" }).trim() },
  node: process.version,
  module_bytes: statSync(args.wasm).size,
  proving_key_bytes: key.length,
  proofs,
};

// Native, first (the reference): the same statement, release build, all cores.
console.error("native…");
report.native = JSON.parse(peer("bench", dir, proofs));

// Node, WASM on this thread (single-threaded).
console.error("node wasm…");
{
  let t = performance.now();
  const module = await WebAssembly.compile(wasm);
  const compileMs = performance.now() - t;
  const m = await NoxWasm.instantiate(module);
  t = performance.now();
  const pk = m.loadProvingKey(key);
  const keyLoadMs = performance.now() - t;
  const prove = [];
  let verified = true;
  for (let i = 0; i < proofs; i++) {
    const { handle } = m.walletPrepare(input.seed, input.view, input.request);
    t = performance.now();
    const out = m.proveTransfer(pk, handle);
    prove.push(performance.now() - t);
    verified &&= verify(out.bytes);
  }
  report.node_wasm = { threads: 1, compileMs, keyLoadMs, prove_ms: median(prove), prove_all_ms: prove, verified };
}

// Node, the SDK's Worker(s) (the main thread probed every 10 ms).
for (const workers of workerCounts) {
  console.error(`node worker ×${workers}…`);
  let t = performance.now();
  const prover = await TransferProver.start({ wasm, key: { bytes: key }, workers });
  const startMs = performance.now() - t;
  let last = performance.now();
  let longestGap = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    longestGap = Math.max(longestGap, now - last);
    last = now;
  }, 10);
  const prove = [];
  for (let i = 0; i < proofs; i++) prove.push((await prover.prove(input)).proveMs);
  clearInterval(probe);
  prover.terminate();
  report[`node_worker${suffix(workers)}`] = { threads: prover.started.workers, workers_asked: workers, startMs, started: prover.started, prove_ms: median(prove), prove_all_ms: prove, main_thread_longest_gap_ms: longestGap };
}

for (const workers of args.chromium ? workerCounts : []) {
  console.error(`chromium ×${workers}…`);
  const c = await proveInChromium({ executablePath: args.chromium, wasm, key, fixture, proofs, workers });
  const { proof, runs, ...rest } = c;
  report[`chromium${suffix(workers)}`] = { ...rest, prove_ms: median(runs.map((r) => r.proveMs)), runs, verified: verify(unhex(proof)) };
}
report.machine.loadavg_at_end = loadavg();
report.machine.uptime_at_end = execFileSync("uptime", { encoding: "utf8" }).trim();
for (const k of Object.keys(report).filter((k) => /^(node_wasm|node_worker|chromium)/.test(k))) {
  if (report[k]) report[k].ratio_to_native = report[k].prove_ms / report.native.prove_ms;
}
rmSync(dir, { recursive: true, force: true });
const json = JSON.stringify(report, null, 2);
if (args.out) writeFileSync(args.out, json + "\n");
console.log(json);
