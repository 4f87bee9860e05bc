// The WebAssembly side of the benchmark, shared by Node (bench.mjs) and the
// browser page (page.html): no Node APIs here.

/** The seed of the module that rebuilds the fixture's SURB (its first call after seeding). */
export const FIXTURE_SEED = new Uint8Array(32).fill(0x5e);

const fromHex = (text) => new Uint8Array(text.match(/../g).map((b) => parseInt(b, 16)));

/** Median of 15 batches after 5 warm-up calls, as `wasm_peer bench` does natively. */
export function timeOp(seconds, now, op) {
  for (let i = 0; i < 5; i++) op();
  let start = now();
  op();
  const one = Math.max((now() - start) / 1000, 1e-7);
  const batches = 15;
  const perBatch = Math.max(Math.ceil(seconds / batches / one), 1);
  const samples = [];
  for (let b = 0; b < batches; b++) {
    start = now();
    for (let i = 0; i < perBatch; i++) op();
    samples.push(((now() - start) * 1000) / perBatch);
  }
  samples.sort((x, y) => x - y);
  return { median_us: samples[batches >> 1], min_us: samples[0], max_us: samples[batches - 1], calls: batches * perBatch };
}

/**
 * Times the three operations in the module. `fixture`: { hops, surb_id, body } (hex), made by
 * bench.mjs: a reply to the SURB a module seeded with FIXTURE_SEED builds first.
 */
export async function benchmarkWasm(NoxWasm, wasmBytes, fixture, seconds, now) {
  const hops = fromHex(fixture.hops);
  const module = await NoxWasm.instantiate(wasmBytes, { randomBytes: () => FIXTURE_SEED });
  const surb = module.buildSurb(hops, new Uint8Array(32).fill(9), 7);
  const body = fromHex(fixture.body);
  const expectedId = fixture.surb_id;
  const id = Array.from(surb.surbId, (b) => b.toString(16).padStart(2, '0')).join('');
  if (id !== expectedId) throw new Error('the fixture SURB was not rebuilt (seeding changed?)');
  if (module.openReply(surb.handle, surb.surbId, body).length !== 1000) throw new Error('reply length');
  const payload = new Uint8Array(256).fill(7);
  const recipient = new Uint8Array(32).fill(9);
  return {
    forward_3_hops_256B: timeOp(seconds, now, () => module.buildForward(hops, payload, 7)),
    surb_build_3_hops: timeOp(seconds, now, () => module.drop(module.buildSurb(hops, recipient, 7).handle)),
    surb_reply_open_1000B: timeOp(seconds, now, () => {
      if (module.openReply(surb.handle, surb.surbId, body).length !== 1000) throw new Error('reply length');
    }),
  };
}
