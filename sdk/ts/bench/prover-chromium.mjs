// The transfer prover Worker in headless Chromium (playwright-core, the system Chromium): one
// page, served on 127.0.0.1 with sdk/ts/dist, the module and the proving key. Shared by
// test/prover.test.mjs (one proof) and scripts/bench/wasm-prover.sh (several).
//
// In the page: a first TransferProver starts (module fetched and compiled in its Worker, key
// fetched and stored in IndexedDB), a second one starts in a new Worker (key from IndexedDB:
// the server sees one key request), then the second proves `proofs` times while the main thread
// runs a PerformanceObserver('longtask') and a 10 ms timer-drift probe.

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const dist = join(dirname(fileURLToPath(import.meta.url)), "../dist");

// `deviceMemory` (GB): the page's `navigator.deviceMemory` is made to report it (the prover's
// default memory cap reads it; absent: Chromium's own value).
export async function proveInChromium({ executablePath, wasm, key, fixture, proofs = 1, workers = 1, deviceMemory, timeoutMs = 600_000 }) {
  const requests = {};
  const files = {
    "/": ["text/html", Buffer.from("<!doctype html><title>nox prover</title>")],
    "/nox_wasm.wasm": ["application/wasm", wasm],
    "/transfer.pk": ["application/octet-stream", key],
  };
  for (const f of ["prover.js", "prover-worker.js", "prover-split.js", "worker-port.js", "nox_wasm.mjs"]) {
    files[`/dist/${f}`] = ["text/javascript", readFileSync(join(dist, f))];
  }
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://localhost").pathname;
    requests[path] = (requests[path] ?? 0) + 1;
    const file = files[path];
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file[0] }).end(file[1]);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(timeoutMs);
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    const report = await page.evaluate(
      async ({ fixture, proofs, workers, deviceMemory }) => {
        if (deviceMemory !== undefined) {
          Object.defineProperty(Navigator.prototype, "deviceMemory", { configurable: true, get: () => deviceMemory });
        }
        const { TransferProver } = await import("/dist/prover.js");
        const unhex = (h) => new Uint8Array(h.match(/../g).map((b) => parseInt(b, 16)));
        const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
        const options = (stages) => ({
          wasm: "/nox_wasm.wasm",
          key: { url: "/transfer.pk" },
          workers,
          // Start-up stages only (a proof's own are counted apart).
          onProgress: (p) => p.stage !== "parts" && stages.push(p.stage === "key" ? `key:${p.cached ? "cached" : "fetched"}` : p.stage),
        });
        const stages = [[], []];
        let t = performance.now();
        const first = await TransferProver.start(options(stages[0]));
        const coldMs = performance.now() - t;
        first.terminate();
        t = performance.now();
        const prover = await TransferProver.start(options(stages[1]));
        const warmMs = performance.now() - t;
        const longTasks = [];
        const observer = new PerformanceObserver((list) => {
          for (const e of list.getEntries()) longTasks.push(e.duration);
        });
        observer.observe({ type: "longtask", buffered: false });
        let last = performance.now();
        let longestGap = 0;
        let ticks = 0;
        const probe = setInterval(() => {
          const now = performance.now();
          longestGap = Math.max(longestGap, now - last);
          last = now;
          ticks++;
        }, 10);
        const runs = [];
        let proved;
        for (let i = 0; i < proofs; i++) {
          const t0 = performance.now();
          proved = await prover.prove({ seed: unhex(fixture.seed), view: fixture.view, request: fixture.request });
          runs.push({ proveMs: proved.proveMs, prepareMs: proved.prepareMs, wallMs: performance.now() - t0 });
        }
        // Let the observer deliver the last entries.
        await new Promise((r) => setTimeout(r, 100));
        clearInterval(probe);
        observer.disconnect();
        prover.terminate();
        return {
          threads: prover.started.workers,
          workersAsked: workers,
          deviceMemory: navigator.deviceMemory,
          hardwareConcurrency: navigator.hardwareConcurrency,
          crossOriginIsolated: globalThis.crossOriginIsolated === true,
          userAgent: navigator.userAgent,
          stages,
          cold: { totalMs: coldMs, ...first.started },
          warm: { totalMs: warmMs, ...prover.started },
          runs,
          mainThread: { longestLongTaskMs: Math.max(0, ...longTasks), longTasks: longTasks.length, longestGapMs: longestGap, ticks },
          proof: hex(proved.proof) + proved.publicInputs.map(hex).join(""),
        };
      },
      { fixture, proofs, workers, deviceMemory },
    );
    return { ...report, requests };
  } finally {
    await browser.close();
    server.close();
  }
}
