// WASM vs native Sphinx benchmark (docs/benchmarks/wasm.md). Times, in one
// run, the nox-wasm module in this JavaScript engine and the native build
// (wasm_peer bench, release), with the same method: 5 warm-up calls, then
// 15 batches sized to `seconds` in total; the median batch's time per call.
//
//   node crates/nox-wasm/bench/bench.mjs --wasm <nox_wasm.wasm> --peer <release wasm_peer> \
//        [--seconds 2] [--rounds 3] [--out bench/data/wasm.json] [--chromium /usr/bin/chromium]
//
// Each round times every engine once, one after the other; the figures are the median over
// rounds of the per-round medians, and each ratio is the median of the per-round ratios (the
// machine is shared: rounds spread the engines over the same load).
//
// With --chromium, the same operations also run in headless Chromium (bench/page.html, served
// on 127.0.0.1 by chromium.mjs), in the same run.
//
// Operations (default geometry: 4 KiB packets since issue 32, 3 hops, ristretto255):
//   forward_3_hops_256B     build_forward with a 256-byte payload
//   surb_build_3_hops       build_surb
//   surb_reply_open_1000B   SurbRecovery::open of a 1000-byte reply that went through 3 hops
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { NoxWasm } from '../js/nox_wasm.mjs';
import { benchmarkWasm, FIXTURE_SEED } from './ops.mjs';
import { benchmarkChromium } from './chromium.mjs';

const { values } = parseArgs({
  options: {
    wasm: { type: 'string' },
    peer: { type: 'string' },
    seconds: { type: 'string', default: '2' },
    out: { type: 'string' },
    fixture: { type: 'string' },
    chromium: { type: 'string' },
    rounds: { type: 'string', default: '3' },
  },
});
if (!values.wasm || !values.peer) throw new Error('--wasm and --peer are required');
const seconds = Number(values.seconds);
const peer = (...args) => execFileSync(values.peer, args.map(String), { encoding: 'utf8' });
const dir = mkdtempSync(join(tmpdir(), 'nox-wasm-bench-'));

try {
  // Keys, and a reply that went through the return path natively, for a SURB the module
  // builds as its first call after being seeded with FIXTURE_SEED (deterministic).
  peer('keys', 3, 3, join(dir, 'keys.json'));
  const hops = new Uint8Array(Buffer.from(JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')).hops, 'hex'));
  const wasmBytes = readFileSync(values.wasm);
  const probe = await NoxWasm.instantiate(wasmBytes, { randomBytes: () => FIXTURE_SEED });
  const surb = probe.buildSurb(hops, new Uint8Array(32).fill(9), 7);
  writeFileSync(join(dir, 'surb.bin'), surb.surb);
  peer('reply', join(dir, 'keys.json'), 3, 7, join(dir, 'surb.bin'), '01'.repeat(1000), join(dir, 'body.bin'));
  const fixture = {
    hops: Buffer.from(hops).toString('hex'),
    surb_id: Buffer.from(surb.surbId).toString('hex'),
    body: readFileSync(join(dir, 'body.bin')).toString('hex'),
  };
  if (values.fixture) writeFileSync(values.fixture, JSON.stringify(fixture));

  const rounds = [];
  let chromiumEngine;
  for (let r = 0; r < Number(values.rounds); r++) {
    const native = JSON.parse(peer('bench', seconds));
    const node = await benchmarkWasm(NoxWasm, wasmBytes, fixture, seconds, () => performance.now());
    let chromium;
    if (values.chromium) {
      const page = await benchmarkChromium({ chromium: values.chromium, wasmBytes, fixture, seconds });
      chromiumEngine = page.engine;
      chromium = page.results;
    }
    rounds.push({ native, node, ...(chromium && { chromium }) });
    console.error(`round ${r + 1}/${values.rounds} done`);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const ops = ['forward_3_hops_256B', 'surb_build_3_hops', 'surb_reply_open_1000B'];
  const engines = values.chromium ? ['node', 'chromium'] : ['node'];
  const results = Object.fromEntries(ops.map((op) => {
    const entry = { native_us: median(rounds.map((r) => r.native[op].median_us)) };
    for (const engine of engines) {
      entry[`${engine}_us`] = median(rounds.map((r) => r[engine][op].median_us));
      entry[`${engine}_ratio`] = median(rounds.map((r) => r[engine][op].median_us / r.native[op].median_us));
    }
    return [op, entry];
  }));
  const report = {
    engine: `node ${process.version} (V8 ${process.versions.v8})`,
    ...(chromiumEngine && { chromium: chromiumEngine }),
    rounds: rounds.length,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    load_average_1m_at_end: loadavg()[0],
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
    wasm_bytes: wasmBytes.length,
    seconds_per_op: seconds,
    results,
    per_round: rounds,
  };
  const text = JSON.stringify(report, null, 2);
  if (values.out) writeFileSync(values.out, `${text}\n`);
  console.log(text);
  for (const op of ops) {
    const r = results[op];
    const cells = engines.map((e) => `${e} ${r[`${e}_us`].toFixed(1).padStart(9)} µs (×${r[`${e}_ratio`].toFixed(2)})`);
    console.log(`${op.padEnd(24)} native ${r.native_us.toFixed(1).padStart(9)} µs  ${cells.join('  ')}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
