// The transfer prover in WebAssembly against native, in one run (docs/benchmarks/wasm.md,
// "The transfer prover"). Run by scripts/bench/wasm-prover.sh:
//   node sdk/ts/bench/prover.mjs --wasm <nox_wasm.wasm> --peer <release prover_peer> --proofs 3 \
//        --out bench/data/wasm-prover.json [--chromium /usr/bin/chromium]
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
  },
});
const proofs = Number(args.proofs);
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
  machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg_at_start: loadavg() },
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

// Node, the SDK's Worker (the main thread probed every 10 ms).
console.error("node worker…");
{
  let t = performance.now();
  const prover = await TransferProver.start({ wasm, key: { bytes: key } });
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
  report.node_worker = { threads: 1, startMs, started: prover.started, prove_ms: median(prove), prove_all_ms: prove, main_thread_longest_gap_ms: longestGap };
}

if (args.chromium) {
  console.error("chromium…");
  const c = await proveInChromium({ executablePath: args.chromium, wasm, key, fixture, proofs });
  const { proof, runs, ...rest } = c;
  report.chromium = { ...rest, prove_ms: median(runs.map((r) => r.proveMs)), runs, verified: verify(unhex(proof)) };
}
report.machine.loadavg_at_end = loadavg();
for (const k of ["node_wasm", "node_worker", "chromium"]) {
  if (report[k]) report[k].ratio_to_native = report[k].prove_ms / report.native.prove_ms;
}
rmSync(dir, { recursive: true, force: true });
const json = JSON.stringify(report, null, 2);
if (args.out) writeFileSync(args.out, json + "\n");
console.log(json);
