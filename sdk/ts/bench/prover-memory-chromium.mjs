// The memory a prover Worker costs in headless Chromium (issue 31, the `maxWorkers` cap; the Node
// figures are prover-memory.mjs's). For each Worker count n, a fresh browser opens one
// cross-origin-isolated page (COOP same-origin + COEP require-corp) and starts a TransferProver
// of n Workers; the measurements are taken with the page loaded, the prover started, after one
// proof, and after `terminate()`:
//
// - the processes' memory from /proc (`smaps_rollup`: Rss and Pss) of every Chromium process of
//   the browser (dedicated Workers, nested ones too, are threads of the page's renderer process,
//   so the renderer's growth is the Workers' cost), by process type (`--type=` of its command
//   line; the browser process is "browser");
// - `performance.measureUserAgentSpecificMemory()` in the page (needs cross-origin isolation;
//   Chromium is started with ForceEagerMeasureMemory so it answers at once): the bytes it
//   attributes to the page and to each Worker scope.
//
// The fixture is prover_peer's (a native wallet's transfer, the key's uncompressed copy, given to
// the prover as bytes, as prover-memory.mjs does; `--key url` makes the prover fetch and decode
// the published compressed key instead, the browser's cold start).
//
//   node sdk/ts/bench/prover-memory-chromium.mjs --wasm sdk/ts/dist/nox_wasm.wasm --peer <prover_peer> \
//     [--workers 1,2] [--key bytes|url] [--chromium /usr/bin/chromium] [--out bench/data/browser-prover-memory.json]

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const { values: args } = parseArgs({
  options: {
    wasm: { type: "string" },
    peer: { type: "string" },
    workers: { type: "string", default: "1,2" },
    key: { type: "string", default: "bytes" },
    chromium: { type: "string", default: process.env.CHROMIUM ?? "/usr/bin/chromium" },
    out: { type: "string" },
  },
});
if (args.wasm === undefined || args.peer === undefined) throw new Error("--wasm and --peer are required");
if (args.key !== "bytes" && args.key !== "url") throw new Error("--key: bytes or url");
const counts = args.workers.split(",").map(Number);
if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 16)) throw new Error("--workers: counts 1..16, comma-separated");

const dist = join(dirname(fileURLToPath(import.meta.url)), "../dist");
const MB = 2 ** 20;
const round = (x) => Number(x.toFixed(1));

/** The processes whose parent chain reaches `root` (and `root` itself). */
function tree(root) {
  const parent = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so cut at the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parent.set(Number(name), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const inTree = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = parent.get(p) ?? 0, hops++) if (p === root) return true;
    return false;
  };
  return [...parent.keys()].filter(inTree);
}

/** Rss and Pss (MB) of the processes under `root` (this Node process: the browser it launched), by type. */
function processMemory(root) {
  const byType = {};
  for (const pid of tree(root)) {
    if (pid === root) continue; // this Node process
    let cmdline;
    let rollup;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    } catch {
      continue;
    }
    // Chromium rewrites its processes' titles: the arguments may come as one space-separated string.
    const line = cmdline.join(" ");
    const type = /--type=([a-z-]+)/.exec(line)?.[1] ?? (/chrom/.test(line) ? "browser" : "other");
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? 0);
    const t = (byType[type] ??= { processes: 0, rss_mb: 0, pss_mb: 0 });
    t.processes++;
    t.rss_mb += kb("Rss") / 1024;
    t.pss_mb += kb("Pss") / 1024;
  }
  let rss = 0;
  let pss = 0;
  for (const t of Object.values(byType)) {
    rss += t.rss_mb;
    pss += t.pss_mb;
    t.rss_mb = round(t.rss_mb);
    t.pss_mb = round(t.pss_mb);
  }
  return { total_rss_mb: round(rss), total_pss_mb: round(pss), by_type: byType };
}

const dir = mkdtempSync(join(tmpdir(), "nox-prover-memory-chromium-"));
try {
  execFileSync(args.peer, ["fixture", dir], { stdio: ["ignore", "ignore", "inherit"] });
  const fixture = JSON.parse(readFileSync(join(dir, "fixture.json"), "utf8"));
  const files = {
    "/": ["text/html", Buffer.from("<!doctype html><title>nox prover memory</title>")],
    "/nox_wasm.wasm": ["application/wasm", readFileSync(args.wasm)],
    "/transfer.pk": ["application/octet-stream", readFileSync(join(dir, "transfer.pk"))],
    "/transfer.pk.uncompressed": ["application/octet-stream", readFileSync(join(dir, "transfer.pk.uncompressed"))],
  };
  for (const f of ["prover.js", "prover-worker.js", "prover-split.js", "worker-port.js", "nox_wasm.mjs"]) {
    files[`/dist/${f}`] = ["text/javascript", readFileSync(join(dist, f))];
  }
  const server = createServer((req, res) => {
    const file = files[new URL(req.url, "http://localhost").pathname];
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res
      .writeHead(200, {
        "content-type": file[0],
        // Cross-origin isolation: the page and its Workers may call measureUserAgentSpecificMemory.
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-embedder-policy": "require-corp",
        "cross-origin-resource-policy": "same-origin",
      })
      .end(file[1]);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const loadBefore = loadavg();
  const uptimeBefore = execFileSync("uptime", { encoding: "utf8" }).trim();
  const rows = [];
  let browserVersion;
  try {
    for (const n of counts) {
      const browser = await chromium.launch({
        executablePath: args.chromium,
        args: ["--no-sandbox", "--enable-blink-features=ForceEagerMeasureMemory"],
      });
      browserVersion = browser.version();
      try {
        const root = process.pid; // Playwright's launch makes Chromium a child of this process
        const page = await browser.newPage();
        page.setDefaultTimeout(600_000);
        await page.goto(`http://127.0.0.1:${server.address().port}/`);
        const measure = async (step) => {
          // Let the Workers' and the page's GCs settle a little before reading.
          await new Promise((r) => setTimeout(r, 1500));
          const api = await page.evaluate(async () => {
            if (globalThis.crossOriginIsolated !== true || typeof performance.measureUserAgentSpecificMemory !== "function") {
              return { available: false, crossOriginIsolated: globalThis.crossOriginIsolated === true };
            }
            const t0 = performance.now();
            const m = await performance.measureUserAgentSpecificMemory();
            const scopes = {};
            for (const b of m.breakdown) {
              for (const a of b.attribution) {
                const scope = a.scope ?? "unattributed";
                scopes[scope] ??= { bytes: 0, entries: 0 };
                scopes[scope].bytes += b.bytes;
                scopes[scope].entries++;
              }
              if (b.attribution.length === 0) {
                scopes.unattributed ??= { bytes: 0, entries: 0 };
                scopes.unattributed.bytes += b.bytes;
                scopes.unattributed.entries++;
              }
            }
            return { available: true, ms: performance.now() - t0, bytes: m.bytes, scopes };
          });
          const procs = processMemory(root);
          const row = { step, ...procs, measure_memory: api };
          console.error(`n=${n} ${step}: renderer rss ${procs.by_type.renderer?.rss_mb} MB, total pss ${procs.total_pss_mb} MB, API ${api.available ? round(api.bytes / MB) : "-"} MB`);
          return row;
        };
        const steps = [await measure("page")];
        const started = await page.evaluate(
          async ({ n, keyMode }) => {
            const { TransferProver } = await import("/dist/prover.js");
            const key =
              keyMode === "url"
                ? { url: "/transfer.pk" }
                : { bytes: new Uint8Array(await (await fetch("/transfer.pk.uncompressed")).arrayBuffer()), uncompressed: true };
            const t0 = performance.now();
            globalThis.prover = await TransferProver.start({ wasm: "/nox_wasm.wasm", key, workers: n, maxWorkers: n });
            return { ms: performance.now() - t0, ...globalThis.prover.started, hardwareConcurrency: navigator.hardwareConcurrency, deviceMemory: navigator.deviceMemory };
          },
          { n, keyMode: args.key },
        );
        steps.push(await measure("started"));
        const proved = await page.evaluate(async (fixture) => {
          const unhex = (h) => new Uint8Array(h.match(/../g).map((b) => parseInt(b, 16)));
          const out = await globalThis.prover.prove({ seed: unhex(fixture.seed), view: fixture.view, request: fixture.request });
          return { proveMs: out.proveMs, prepareMs: out.prepareMs, proofBytes: out.proof.length };
        }, fixture);
        steps.push(await measure("proved"));
        await page.evaluate(() => globalThis.prover.terminate());
        steps.push(await measure("terminated"));
        rows.push({ workers_asked: n, started, proved, steps });
      } finally {
        await browser.close();
      }
    }
  } finally {
    server.close();
  }
  const at = (row, step) => row.steps.find((s) => s.step === step);
  const renderer = (row, step) => at(row, step).by_type.renderer?.rss_mb ?? 0;
  const one = rows.find((r) => r.started.workers === 1);
  const summary = rows.map((r) => ({
    workers: r.started.workers,
    renderer_rss_mb: { page: renderer(r, "page"), started: renderer(r, "started"), proved: renderer(r, "proved"), terminated: renderer(r, "terminated") },
    total_pss_mb: { page: at(r, "page").total_pss_mb, started: at(r, "started").total_pss_mb, proved: at(r, "proved").total_pss_mb, terminated: at(r, "terminated").total_pss_mb },
    api_mb: Object.fromEntries(
      r.steps.map((s) => [s.step, s.measure_memory.available ? round(s.measure_memory.bytes / MB) : null]),
    ),
    prove_ms: Math.round(r.proved.proveMs),
  }));
  const result = {
    what: "Chromium memory with a TransferProver of n Workers in a cross-origin-isolated page (page loaded; started; after one proof; after terminate), a fresh browser per n: /proc smaps_rollup of the browser's processes by type, and performance.measureUserAgentSpecificMemory()",
    key: args.key === "url" ? "the published compressed key by URL (fetched, decoded, cached in IndexedDB: a cold start)" : "the key's uncompressed copy given as bytes (as prover-memory.mjs)",
    wasm: args.wasm,
    wasm_bytes: readFileSync(args.wasm).length,
    summary,
    per_extra_worker_mb:
      one === undefined
        ? null
        : rows
            .filter((r) => r.started.workers > 1)
            .map((r) => {
              const k = r.started.workers - 1;
              const rr = (s) => round((renderer(r, s) - renderer(one, s)) / k);
              const pss = (s) => round((at(r, s).total_pss_mb - at(one, s).total_pss_mb) / k);
              return { workers: r.started.workers, renderer_rss: { started: rr("started"), proved: rr("proved") }, total_pss: { started: pss("started"), proved: pss("proved") } };
            }),
    rows,
    chromium: browserVersion,
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    loadavg_before: loadBefore,
    uptime_before: uptimeBefore,
    loadavg_after: loadavg(),
    uptime_after: execFileSync("uptime", { encoding: "utf8" }).trim(),
    date: new Date().toISOString(),
    commit: execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim(),
  };
  console.log(JSON.stringify(result, null, 2));
  if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
