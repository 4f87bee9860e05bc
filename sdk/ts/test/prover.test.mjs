// The transfer prover in a Worker (src/prover.ts, src/prover-worker.ts) in Node: the real
// nox-wasm module proves a private transaction of a native wallet's pool view (the
// `prover_peer` example's fixture), the proof verifies natively, progress arrives stage by
// stage, the main thread keeps running while the Worker proves, and the proving key is
// fetched once per Worker (its memory cache) however many times the prover starts.
//   NOX_WASM=<nox_wasm.wasm> [NOX_PROVER_PEER=<prover_peer>] node --test test/prover.test.mjs

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { availableParallelism, homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Worker } from "node:worker_threads";
import { ProverError, TransferProver, memoryWorkerCap } from "../dist/index.js";

const target = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache/nox/target");
const WASM = process.env.NOX_WASM ?? join(target, "wasm32-unknown-unknown/release/nox_wasm.wasm");
const PEER = process.env.NOX_PROVER_PEER ?? join(target, "debug/examples/prover_peer");
const dir = mkdtempSync(join(tmpdir(), "nox-sdk-prover-"));
const peer = (...args) => execFileSync(PEER, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const unhex = (text) => new Uint8Array(Buffer.from(text, "hex"));

peer("fixture", dir);
const fixture = JSON.parse(readFileSync(join(dir, "fixture.json"), "utf8"));
const wasm = readFileSync(WASM);
const key = readFileSync(join(dir, "transfer.pk"));
const input = { seed: unhex(fixture.seed), view: fixture.view, request: fixture.request };

let server;
let keyUrl;
let keyFetches = 0;
before(async () => {
  server = createServer((req, res) => {
    if (req.url === "/transfer.pk") {
      keyFetches++;
      res.writeHead(200, { "content-type": "application/octet-stream" }).end(key);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  keyUrl = `http://127.0.0.1:${server.address().port}/transfer.pk`;
});
after(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a transfer proved in the Worker verifies natively; the main thread runs meanwhile", async () => {
  const stages = [];
  // The uncompressed key (what the Worker caches; the compressed load is the next test's).
  const uncompressed = readFileSync(join(dir, "transfer.pk.uncompressed"));
  const prover = await TransferProver.start({
    wasm,
    key: { bytes: uncompressed, uncompressed: true },
    onProgress: (p) => stages.push(p),
    workers: 1, // today's path: one Worker proves alone (the split path is the next test's)
  });
  try {
    assert.deepEqual(stages.map((p) => p.stage), ["module"]);
    // A timer-drift probe: ticks every 10 ms on the main thread while the Worker proves.
    let last = performance.now();
    let longest = 0;
    let ticks = 0;
    const probe = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      ticks++;
    }, 10);
    const proving = [];
    const t = performance.now();
    const out = await prover.prove(input, (p) => proving.push(p.stage));
    const wall = performance.now() - t;
    clearInterval(probe);
    console.log(`# Worker proof ${out.proveMs.toFixed(0)} ms (wall ${wall.toFixed(0)} ms); main thread: ${ticks} ticks, longest gap ${longest.toFixed(0)} ms`);
    assert.deepEqual(proving, ["prepare", "prove"]);
    // Proving on the main thread would starve the timer for the whole proof (seconds).
    assert.ok(ticks >= Math.floor(out.proveMs / 100), `${ticks} ticks in ${out.proveMs} ms`);
    assert.ok(longest < out.proveMs / 2, `longest main-thread gap ${longest} ms of a ${out.proveMs} ms proof`);
    assert.equal(out.proof.length, 256);
    assert.equal(out.publicInputs.length, 8);
    assert.equal(out.description.root, fixture.root);
    const file = join(dir, "proof.bin");
    writeFileSync(file, Buffer.concat([out.proof, ...out.publicInputs]));
    assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
    // A refusal is a ProverError with the module's status (10: the wallet refused).
    const tooMuch = { ...fixture.request, outputs: [{ ...fixture.request.outputs[0], value: "9000000000000000000" }] };
    await assert.rejects(prover.prove({ ...input, request: tooMuch }), (e) => e instanceof ProverError && e.code === 10);
  } finally {
    prover.terminate();
  }
});

test("2 Workers (issue 31): the coordinator spreads the MSM parts, reports them, and the proof verifies natively", async () => {
  const uncompressed = readFileSync(join(dir, "transfer.pk.uncompressed"));
  const cores = globalThis.navigator?.hardwareConcurrency ?? availableParallelism();
  const prover = await TransferProver.start({ wasm, key: { bytes: uncompressed, uncompressed: true }, workers: 2 });
  try {
    // min(cores, 2): on a one-core machine the coordinator proves alone (today's path).
    assert.equal(prover.started.workers, Math.min(cores, 2));
    const events = [];
    const out = await prover.prove(input, (p) => events.push(p));
    console.log(`# ${prover.started.workers} Workers: proof ${out.proveMs.toFixed(0)} ms (helpers started in ${prover.started.helpersMs.toFixed(0)} ms)`);
    const n = prover.started.workers;
    const expected = n > 1
      ? ["prepare", "prove", ...Array.from({ length: n + 1 }, (_, i) => `parts:${i}/${n}`), "finish"]
      : ["prepare", "prove"];
    assert.deepEqual(events.map((p) => (p.stage === "parts" ? `parts:${p.done}/${p.of}` : p.stage)), expected);
    assert.equal(events[1].workers, n);
    const file = join(dir, "proof-2.bin");
    writeFileSync(file, Buffer.concat([out.proof, ...out.publicInputs]));
    assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
    // A second proof on the same helpers (their key stays loaded), and a refusal still refuses.
    const again = await prover.prove(input);
    writeFileSync(file, Buffer.concat([again.proof, ...again.publicInputs]));
    assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
    const tooMuch = { ...fixture.request, outputs: [{ ...fixture.request.outputs[0], value: "9000000000000000000" }] };
    await assert.rejects(prover.prove({ ...input, request: tooMuch }), (e) => e instanceof ProverError && e.code === 10);
  } finally {
    prover.terminate();
  }
});

test("the memory cap (issue 31): deviceMemory sets the default, maxWorkers overrides it, bad caps are refused", async () => {
  // navigator.deviceMemory: GB rounded down to a power of two (Chromium reports 0.25..8).
  assert.deepEqual([0.25, 0.5, 1, 2, 4, 8].map(memoryWorkerCap), [1, 1, 1, 1, 2, undefined]);
  for (const none of [undefined, 0, -1, Number.NaN, Infinity, "8"]) assert.equal(memoryWorkerCap(none), undefined);
  for (const bad of [0, 1.5, -2, Number.NaN, "2"]) {
    await assert.rejects(
      TransferProver.start({ wasm, key: { bytes: new Uint8Array(64) }, maxWorkers: bad }),
      (e) => e instanceof ProverError && /maxWorkers must be a positive integer/.test(e.message),
    );
  }
  await assert.rejects(TransferProver.start({ wasm, key: { bytes: new Uint8Array(64) }, workers: 0 }), /workers must be a positive integer/);
});

test("maxWorkers 1 keeps a 2-Worker request on one Worker (no helper started) and the proof verifies natively", async () => {
  const uncompressed = readFileSync(join(dir, "transfer.pk.uncompressed"));
  const prover = await TransferProver.start({ wasm, key: { bytes: uncompressed, uncompressed: true }, workers: 2, maxWorkers: 1 });
  try {
    assert.equal(prover.started.workers, 1);
    assert.equal(prover.started.maxWorkers, 1);
    assert.equal(prover.started.capSource, "option");
    const events = [];
    const out = await prover.prove(input, (p) => events.push(p));
    // The single-Worker path: no MSM parts sent anywhere.
    assert.deepEqual(events.map((p) => p.stage), ["prepare", "prove"]);
    assert.equal(events[1].workers, 1);
    const file = join(dir, "proof-capped.bin");
    writeFileSync(file, Buffer.concat([out.proof, ...out.publicInputs]));
    assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
  } finally {
    prover.terminate();
  }
  // A cap above the request leaves the request: min(cores, 2, 4).
  const cores = globalThis.navigator?.hardwareConcurrency ?? availableParallelism();
  const roomy = await TransferProver.start({ wasm, key: { bytes: uncompressed, uncompressed: true }, workers: 2, maxWorkers: 4 });
  try {
    assert.equal(roomy.started.workers, Math.min(cores, 2));
    assert.equal(roomy.started.maxWorkers, 4);
  } finally {
    roomy.terminate();
  }
});

test("a helper Worker that dies costs its part to the coordinator, not the proof", async () => {
  const { SplitProver } = await import("../dist/prover-split.js");
  const { NoxWasm } = await import("../dist/nox_wasm.mjs");
  const uncompressed = readFileSync(join(dir, "transfer.pk.uncompressed"));
  const module = await WebAssembly.compile(wasm);
  const m = await NoxWasm.instantiate(module);
  const key = m.loadProvingKey(uncompressed, { uncompressed: true });
  const helpers = [1, 2].map(() => new Worker(new URL("../dist/prover-worker.js", import.meta.url)));
  const split = await SplitProver.fromWorkers(helpers, module, uncompressed);
  try {
    assert.equal(split.workers, 3);
    await helpers[1].terminate(); // part 2's helper is gone before the proof
    const events = [];
    const { handle } = m.walletPrepare(input.seed, input.view, input.request);
    const out = await split.prove(m, key, handle, (p) => events.push(p.stage === "parts" ? `${p.done}/${p.of}` : p.stage));
    assert.deepEqual(events, ["0/3", "1/3", "2/3", "3/3", "finish"]);
    const file = join(dir, "proof-fallback.bin");
    writeFileSync(file, out.bytes);
    assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
  } finally {
    split.terminate();
  }
});

test("the proving key is fetched once per Worker: a second start reads the memory cache", async () => {
  const worker = new Worker(new URL("../dist/prover-worker.js", import.meta.url));
  const replies = [];
  worker.on("message", (m) => replies.push(m));
  const done = (id) =>
    new Promise((resolve) => {
      const poll = setInterval(() => {
        const r = replies.find((m) => m.id === id && "ok" in m);
        if (r) {
          clearInterval(poll);
          resolve(r);
        }
      }, 5);
    });
  try {
    const before = keyFetches;
    for (const id of [1, 2]) {
      worker.postMessage({ id, op: "init", wasm, key: { url: keyUrl, name: "transfer-test" }, cache: "memory" });
      const r = await done(id);
      assert.equal(r.ok, true, JSON.stringify(r.error));
    }
    assert.equal(keyFetches, before + 1);
    const cached = replies.filter((m) => m.progress?.stage === "key").map((m) => [m.id, m.progress.cached]);
    assert.deepEqual(cached, [
      [1, false],
      [2, true],
    ]);
    // A job before a key is loaded is refused, not hung.
    const fresh = await TransferProver.start({ wasm, key: { bytes: key.subarray(0, 100) } }).catch((e) => e);
    assert.ok(fresh instanceof ProverError && fresh.code === 11, String(fresh));
  } finally {
    await worker.terminate();
  }
});

test("in Chromium: the Worker proves, the page stays responsive, the key is fetched once (IndexedDB); a 2 GB device caps 2 Workers to 1", async () => {
  const { proveInChromium } = await import("../bench/prover-chromium.mjs");
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  // 2 Workers asked on a page whose navigator.deviceMemory reports 2 GB: the default memory cap
  // keeps the proof on the one Worker (the 2-Worker split in Chromium: sdk/examples' Vite test).
  const report = await proveInChromium({ executablePath, wasm, key, fixture, proofs: 1, workers: 2, deviceMemory: 2 });
  assert.equal(report.deviceMemory, 2);
  assert.equal(report.threads, 1);
  for (const start of [report.cold, report.warm]) {
    assert.equal(start.maxWorkers, 1, JSON.stringify(start));
    assert.equal(start.capSource, "deviceMemory");
  }
  const run = report.runs[0];
  console.log(
    `# Chromium Worker proof ${run.proveMs.toFixed(0)} ms; cold start ${report.cold.totalMs.toFixed(0)} ms, ` +
      `warm ${report.warm.totalMs.toFixed(0)} ms; main thread: longest long task ${report.mainThread.longestLongTaskMs.toFixed(0)} ms, ` +
      `longest timer gap ${report.mainThread.longestGapMs.toFixed(0)} ms`,
  );
  // The second Worker read the key from IndexedDB: the server saw one key request.
  assert.deepEqual(report.stages, [
    ["module", "key:fetched"],
    ["module", "key:cached"],
  ]);
  assert.equal(report.requests["/transfer.pk"], 1);
  // The main thread ran its probe through the proof instead of freezing for it.
  assert.ok(report.mainThread.longestGapMs < run.proveMs / 2, JSON.stringify(report.mainThread));
  assert.ok(report.mainThread.ticks >= Math.floor(run.proveMs / 100), JSON.stringify(report.mainThread));
  const file = join(dir, "proof-chromium.bin");
  writeFileSync(file, unhex(report.proof));
  assert.deepEqual(JSON.parse(peer("verify", file)), { verified: true });
});
