// Cross-checks of the nox-wasm module against native nox_sphinx / nox_topology
// (the `wasm_peer` example). Run by scripts/test.sh through js/test/run.sh:
//   NOX_WASM=<nox_wasm.wasm> NOX_WASM_PEER=<wasm_peer binary> node --test crates/nox-wasm/js/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NoxWasm, NoxWasmError, Status } from '../nox_wasm.mjs';

const WASM = process.env.NOX_WASM;
const PEER = process.env.NOX_WASM_PEER;
if (!WASM || !PEER) throw new Error('set NOX_WASM and NOX_WASM_PEER (crates/nox-wasm/js/test/run.sh does)');

const wasmModule = new WebAssembly.Module(readFileSync(WASM));
const dir = mkdtempSync(join(tmpdir(), 'nox-wasm-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const hex = (bytes) => Buffer.from(bytes).toString('hex');
const unhex = (text) => new Uint8Array(Buffer.from(text, 'hex'));
const peer = (...args) => execFileSync(PEER, args.map(String), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const peerJson = (...args) => JSON.parse(peer(...args));
const fresh = (seed) => NoxWasm.instantiate(wasmModule, seed ? { randomBytes: () => seed } : {});

function expectStatus(fn, status) {
  assert.throws(fn, (e) => e instanceof NoxWasmError && e.code === status, `expected status ${status}`);
}

function rawKeys(hops, seed) {
  const file = join(dir, `keys-${hops}-${seed}.json`);
  peer('keys', hops, seed, file);
  return { file, hops: unhex(JSON.parse(readFileSync(file, 'utf8')).hops) };
}

const NOW = 1_800_000_000;
function makeTopology(seed) {
  const doc = join(dir, `doc-${seed}.json`);
  const secrets = join(dir, `secrets-${seed}.json`);
  peer('topology', NOW, seed, doc, secrets);
  return { doc: readFileSync(doc), secrets, authority: unhex(JSON.parse(readFileSync(secrets, 'utf8')).authority) };
}

test('the module imports nothing: no clock, no entropy source from the host', () => {
  assert.deepEqual(WebAssembly.Module.imports(wasmModule), []);
});

test('a forward packet built in wasm is processed hop by hop by native nox_sphinx', async () => {
  const wasm = await fresh();
  for (const hops of [1, 3, 5]) {
    const keys = rawKeys(hops, 11 + hops);
    const payload = new TextEncoder().encode(`hello over ${hops} hops`);
    const packet = wasm.buildForward(keys.hops, payload, 7);
    assert.equal(packet.length, 32768);
    const file = join(dir, `fwd-${hops}.bin`);
    writeFileSync(file, packet);
    const out = peerJson('process', keys.file, hops, 7, hex(keys.hops.slice(0, 32)), file);
    assert.equal(out.kind, 'deliver');
    assert.equal(out.payload, hex(payload));
    assert.equal(out.path.length, hops);
    // The same node ids with other keys: the first hop's MAC check refuses it.
    const others = rawKeys(hops, 100 + hops);
    assert.throws(() => peer('process', others.file, hops, 7, hex(keys.hops.slice(0, 32)), file), /MAC|mac/);
  }
});

test('a SURB built in wasm, answered natively, opens in wasm; tampering and the wrong SURB are refused', async () => {
  const wasm = await fresh();
  const keys = rawKeys(3, 21);
  const recipient = new Uint8Array(32).fill(0xab);
  const a = wasm.buildSurb(keys.hops, recipient, 7);
  const b = wasm.buildSurb(keys.hops, recipient, 7);
  assert.equal(hex(a.firstHop), hex(keys.hops.slice(0, 32)));
  const surbFile = join(dir, 'surb-a.bin');
  const bodyFile = join(dir, 'body-a.bin');
  writeFileSync(surbFile, a.surb);
  const reply = new TextEncoder().encode('the native reply');
  const delivered = peerJson('reply', keys.file, 3, 7, surbFile, hex(reply), bodyFile);
  assert.equal(delivered.recipient, hex(recipient));
  assert.equal(delivered.surb_id, hex(a.surbId));
  const body = new Uint8Array(readFileSync(bodyFile));
  assert.deepEqual(wasm.openReply(a.handle, a.surbId, body), reply);
  // One flipped bit anywhere in the body: not authentic.
  for (const at of [0, 100, body.length - 1]) {
    const tampered = body.slice();
    tampered[at] ^= 1;
    expectStatus(() => wasm.openReply(a.handle, a.surbId, tampered), Status.SPHINX);
  }
  // Another SURB's keys or id.
  expectStatus(() => wasm.openReply(b.handle, b.surbId, body), Status.SPHINX);
  expectStatus(() => wasm.openReply(a.handle, b.surbId, body), Status.SPHINX);
  // Dropped keys are gone.
  wasm.drop(a.handle);
  expectStatus(() => wasm.openReply(a.handle, a.surbId, body), Status.UNKNOWN_HANDLE);
  expectStatus(() => wasm.drop(a.handle), Status.UNKNOWN_HANDLE);
});

test('a signed topology verifies in wasm; packets and SURBs through it work natively (PoW included)', async () => {
  const wasm = await fresh();
  const topo = makeTopology(5);
  const handle = wasm.verifyTopology(topo.doc, topo.authority, NOW + 10);
  const info = wasm.topologyInfo(handle, NOW + 10);
  assert.equal(info.layers, 3);
  assert.equal(info.nodes.length, 6);
  assert.equal(info.scheme, 'ristretto255');
  assert.equal(info.fingerprint.length, 64);
  const epoch = info.client_epoch;
  const payload = new TextEncoder().encode('through a verified topology');
  const seenPaths = new Set();
  for (let i = 0; i < 4; i++) {
    const { firstHop, packet } = wasm.topologyForward(handle, payload, NOW + 10);
    const file = join(dir, `topo-fwd-${i}.bin`);
    writeFileSync(file, packet);
    const out = peerJson('process', topo.secrets, 3, epoch, hex(firstHop), file);
    assert.equal(out.kind, 'deliver');
    assert.equal(out.payload, hex(payload));
    out.path.forEach((id, layer) => assert.equal(info.nodes.find((n) => n.id === id).layer, layer));
    seenPaths.add(out.path.join());
  }
  // An explicit path: layer order enforced.
  const byLayer = [0, 1, 2].map((l) => info.nodes.find((n) => n.layer === l).id);
  const path = unhex(byLayer.join(''));
  const { firstHop } = wasm.topologyForward(handle, payload, NOW + 10, path);
  assert.equal(hex(firstHop), byLayer[0]);
  expectStatus(() => wasm.topologyForward(handle, payload, NOW + 10, unhex([...byLayer].reverse().join(''))),
    Status.BAD_ARGUMENT);
  expectStatus(() => wasm.topologyForward(handle, payload, NOW + 10, path.slice(0, 64)), Status.BAD_ARGUMENT);
  // A SURB through the topology, answered natively.
  const recipient = new Uint8Array(32).fill(7);
  const s = wasm.topologySurb(handle, recipient, NOW + 10);
  const surbFile = join(dir, 'topo-surb.bin');
  const bodyFile = join(dir, 'topo-body.bin');
  writeFileSync(surbFile, s.surb);
  peerJson('reply', topo.secrets, 3, epoch, surbFile, hex(payload), bodyFile);
  assert.deepEqual(wasm.openReply(s.handle, s.surbId, new Uint8Array(readFileSync(bodyFile))), payload);
  // Handles of the wrong kind.
  expectStatus(() => wasm.openReply(handle, s.surbId, new Uint8Array(32)), Status.WRONG_HANDLE);
  expectStatus(() => wasm.topologyInfo(s.handle, NOW), Status.WRONG_HANDLE);
});

test('topology documents are refused: wrong authority, altered, malformed, expired, from the future', async () => {
  const wasm = await fresh();
  const topo = makeTopology(6);
  const other = makeTopology(7);
  expectStatus(() => wasm.verifyTopology(topo.doc, other.authority, NOW + 10), Status.TOPOLOGY);
  const text = topo.doc.toString('utf8');
  const altered = text.replace('127.0.0.1:9000', '127.0.0.1:9999');
  assert.notEqual(altered, text);
  expectStatus(() => wasm.verifyTopology(altered, topo.authority, NOW + 10), Status.TOPOLOGY);
  expectStatus(() => wasm.verifyTopology(text.slice(0, text.length / 2), topo.authority, NOW + 10), Status.TOPOLOGY);
  expectStatus(() => wasm.verifyTopology('', topo.authority, NOW + 10), Status.TOPOLOGY);
  expectStatus(() => wasm.verifyTopology(topo.doc, topo.authority, NOW + 3 * 3600), Status.TOPOLOGY);
  expectStatus(() => wasm.verifyTopology(topo.doc, topo.authority, NOW - 3600), Status.TOPOLOGY);
  expectStatus(() => wasm.verifyTopology(topo.doc, topo.authority.slice(0, 31), NOW), Status.BAD_ARGUMENT);
  // Still usable afterwards.
  assert.ok(wasm.verifyTopology(topo.doc, topo.authority, NOW + 10) > 0);
});

test('bad input returns a status, never traps, and the module keeps working', async () => {
  const raw = await WebAssembly.instantiate(wasmModule, {});
  const unseeded = new NoxWasm(raw);
  const keys = rawKeys(3, 31);
  expectStatus(() => unseeded.buildForward(keys.hops, new Uint8Array(1), 1), Status.NOT_SEEDED);
  expectStatus(() => unseeded.seed(new Uint8Array(31)), Status.BAD_ARGUMENT);
  unseeded.seed(new Uint8Array(32).fill(1));
  const wasm = unseeded;
  expectStatus(() => wasm.buildForward(keys.hops.slice(0, 63), new Uint8Array(1), 1), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.buildForward(new Uint8Array(0), new Uint8Array(1), 1), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.buildForward(new Uint8Array(17 * 64), new Uint8Array(1), 1), Status.SPHINX);
  const badKey = keys.hops.slice();
  badKey.fill(0xff, 32, 64);
  expectStatus(() => wasm.buildForward(badKey, new Uint8Array(1), 1), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.buildForward(keys.hops, new Uint8Array(40000), 1), Status.SPHINX);
  expectStatus(() => wasm.buildSurb(keys.hops, new Uint8Array(31), 1), Status.BAD_ARGUMENT);
  const s = wasm.buildSurb(keys.hops, new Uint8Array(32), 1);
  expectStatus(() => wasm.openReply(s.handle, s.surbId.slice(1), new Uint8Array(10)), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.openReply(s.handle, s.surbId, new Uint8Array(10)), Status.SPHINX);
  expectStatus(() => wasm.openReply(4242, s.surbId, new Uint8Array(10)), Status.UNKNOWN_HANDLE);
  expectStatus(() => wasm.topologyInfo(0, 0), Status.UNKNOWN_HANDLE);
  // An argument slot out of range or too large is refused by nox_arg (offset 0).
  assert.equal(raw.exports.nox_arg(4, 1), 0);
  assert.equal(raw.exports.nox_arg(0, 64 << 20), 0);
  assert.equal(wasm.buildForward(keys.hops, new Uint8Array(1), 1).length, 32768);
});

test('randomness comes only from the host seed: same seed, same packets; other seed, other packets', async () => {
  const keys = rawKeys(3, 41);
  const seedA = new Uint8Array(32).fill(3);
  const seedB = new Uint8Array(32).fill(4);
  const [a1, a2, b] = await Promise.all([fresh(seedA), fresh(seedA), fresh(seedB)]);
  const payload = new Uint8Array([1, 2, 3]);
  const p1 = a1.buildForward(keys.hops, payload, 7);
  assert.deepEqual(a2.buildForward(keys.hops, payload, 7), p1);
  assert.notDeepEqual(b.buildForward(keys.hops, payload, 7), p1);
  // The RNG advances: the next packet from the same module differs.
  assert.notDeepEqual(a1.buildForward(keys.hops, payload, 7), p1);
});
