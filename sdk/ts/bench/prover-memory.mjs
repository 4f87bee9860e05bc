// The memory a prover Worker costs (issue 31, the `maxWorkers` cap): the Node process's resident
// set (every Worker of a process counts in it) with a TransferProver of n Workers started and after
// one proof, each n in a fresh process (RSS does not shrink after a Worker ends). The fixture is
// prover_peer's (a native wallet's transfer and the proving key's uncompressed copy).
//
//   node sdk/ts/bench/prover-memory.mjs --wasm sdk/ts/dist/nox_wasm.wasm --peer <prover_peer> \
//     [--workers 1,2] [--out bench/data/wasm-prover-memory.json]

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    wasm: { type: "string" },
    peer: { type: "string" },
    workers: { type: "string", default: "1,2" },
    out: { type: "string" },
    child: { type: "string" },
    dir: { type: "string" },
  },
});
const mb = () => Number((process.memoryUsage().rss / 2 ** 20).toFixed(1));

if (args.child !== undefined) {
  // One measurement: n Workers in this process.
  const { TransferProver } = await import("../dist/index.js");
  const n = Number(args.child);
  const base = mb();
  const wasm = readFileSync(args.wasm);
  const key = readFileSync(join(args.dir, "transfer.pk.uncompressed"));
  const fixture = JSON.parse(readFileSync(join(args.dir, "fixture.json"), "utf8"));
  const prover = await TransferProver.start({ wasm, key: { bytes: key, uncompressed: true }, workers: n, maxWorkers: n });
  const started = mb();
  await prover.prove({ seed: new Uint8Array(Buffer.from(fixture.seed, "hex")), view: fixture.view, request: fixture.request });
  const proved = mb();
  const workers = prover.started.workers;
  prover.terminate();
  console.log(JSON.stringify({ workers, rss_base_mb: base, rss_started_mb: started, rss_after_proof_mb: proved }));
  process.exit(0);
}

if (args.wasm === undefined || args.peer === undefined) throw new Error("--wasm and --peer are required");
const counts = args.workers.split(",").map(Number);
if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) throw new Error("--workers: counts 1..64, comma-separated");
const dir = mkdtempSync(join(tmpdir(), "nox-prover-memory-"));
try {
  execFileSync(args.peer, ["fixture", dir], { stdio: ["ignore", "ignore", "inherit"] });
  const loadBefore = loadavg();
  const rows = counts.map((n) =>
    JSON.parse(
      execFileSync(process.execPath, [import.meta.filename, "--child", String(n), "--wasm", args.wasm, "--dir", dir], { encoding: "utf8" }),
    ),
  );
  const one = rows.find((r) => r.workers === 1);
  const result = {
    what: "Node process RSS with a TransferProver of n Workers (started; after one proof), one fresh process per n",
    wasm: args.wasm,
    wasm_bytes: readFileSync(args.wasm).length,
    rows,
    per_extra_worker_mb:
      one === undefined
        ? null
        : rows.filter((r) => r.workers > 1).map((r) => ({ workers: r.workers, started: (r.rss_started_mb - one.rss_started_mb) / (r.workers - 1), after_proof: (r.rss_after_proof_mb - one.rss_after_proof_mb) / (r.workers - 1) })),
    node_version: process.version,
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    loadavg_before: loadBefore,
    loadavg_after: loadavg(),
    date: new Date().toISOString(),
  };
  console.log(JSON.stringify(result, null, 2));
  if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
