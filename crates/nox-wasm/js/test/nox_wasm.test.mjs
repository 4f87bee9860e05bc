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
    assert.equal(packet.length, 4096);
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
  assert.equal(wasm.buildForward(keys.hops, new Uint8Array(1), 1).length, 4096);
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

function parseRecords(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records = [];
  let at = 4;
  for (let i = 0; i < view.getUint32(0, true); i++) {
    const len = view.getUint32(at + 32, true);
    records.push({ gateway: bytes.slice(at, at + 32), record: bytes.slice(at + 36, at + 36 + len) });
    at += 36 + len;
  }
  return records;
}

test('the client core in wasm: an echo request through the native mixnet and exit completes; replays, timeouts', async () => {
  const wasm = await fresh();
  const topo = makeTopology(8);
  const topology = wasm.verifyTopology(topo.doc, topo.authority, NOW + 10);
  const info = wasm.topologyInfo(topology, NOW + 10);
  const client = wasm.clientNew(topology, { timeout_ms: 30000 }, 0, NOW + 10);
  assert.equal(info.nodes.find((n) => n.id === hex(client.gateway)).layer, 2);
  const text = 'echo through the wasm client core';
  const request = wasm.clientRequest(client.handle, 1, text, 200, 1000, NOW + 11);
  assert.ok(request.packets.length >= 1);
  for (const p of request.packets) assert.equal(info.nodes.find((n) => n.id === hex(p.entry)).layer, 0);
  const packetsFile = join(dir, 'client-packets.bin');
  const recordsFile = join(dir, 'client-records.bin');
  writeFileSync(packetsFile, request.raw.slice(8));
  const exit = peerJson('exit', topo.secrets, info.client_epoch, packetsFile, recordsFile);
  assert.equal(exit.answered, 1);
  const records = parseRecords(new Uint8Array(readFileSync(recordsFile)));
  assert.ok(records.length >= 1);
  let done = null;
  for (const { gateway, record } of records) {
    assert.equal(hex(gateway), hex(client.gateway), 'replies come through the client\'s gateway');
    const completed = wasm.clientOnDownstream(client.handle, gateway, record, 2000, NOW + 12);
    if (completed) {
      assert.equal(done, null, 'one completion');
      done = completed;
    }
  }
  assert.ok(done, 'the request completed');
  assert.equal(done.id, request.id);
  assert.equal(done.response.status, 0);
  assert.equal(new TextDecoder().decode(done.response.body), text);
  // The same records again complete nothing.
  for (const { gateway, record } of records) {
    assert.equal(wasm.clientOnDownstream(client.handle, gateway, record, 2100, NOW + 12), null);
  }
  // A malformed record is counted, not fatal.
  assert.equal(wasm.clientOnDownstream(client.handle, null, new Uint8Array(7), 2200, NOW + 12), null);
  const stats = wasm.clientStats(client.handle);
  assert.equal(stats.completed, 1);
  assert.equal(stats.malformed_downstream, 1);
  // A request never answered times out at its deadline, not before.
  const lost = wasm.clientRequest(client.handle, 1, 'lost', 10, 3000, NOW + 13);
  assert.equal(wasm.clientNextDeadline(client.handle), 33000);
  assert.deepEqual(wasm.clientPollTimeouts(client.handle, 32999, NOW + 42), []);
  const timedOut = wasm.clientPollTimeouts(client.handle, 33000, NOW + 43);
  assert.equal(timedOut.length, 1);
  assert.equal(timedOut[0].id, lost.id);
  assert.match(timedOut[0].error, /time/i);
  // Refusals.
  expectStatus(() => wasm.clientRequest(client.handle, 9, 'x', 10, 4000, NOW + 44), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.clientRequest(client.handle, 2, 'not an HTTP message', 10, 4000, NOW + 44),
    Status.BAD_ARGUMENT);
  expectStatus(() => wasm.clientRequest(topology, 1, 'x', 10, 4000, NOW + 44), Status.WRONG_HANDLE);
  expectStatus(() => wasm.clientNew(topology, { cover: 1 }, 0, NOW + 10), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.clientNew(topology, { loss: 2 }, 0, NOW + 10), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.clientNew(client.handle, {}, 0, NOW + 10), Status.WRONG_HANDLE);
  wasm.drop(client.handle);
  expectStatus(() => wasm.clientStats(client.handle), Status.UNKNOWN_HANDLE);
});

test('the client core in wasm with cover traffic: real packets leave only in Poisson slots', async () => {
  const wasm = await fresh();
  const topo = makeTopology(9);
  const topology = wasm.verifyTopology(topo.doc, topo.authority, NOW + 10);
  const client = wasm.clientNew(topology, { cover_rate: 20, loop_fraction: 0 }, 0, NOW + 10);
  const request = wasm.clientRequest(client.handle, 1, 'queued', 10, 0, NOW + 10);
  assert.equal(request.packets.length, 0, 'queued for the slots');
  let sent = 0;
  let t = 0;
  while (sent < 5) {
    const deadline = wasm.clientNextDeadline(client.handle);
    assert.ok(deadline !== null && deadline >= t, 'a next slot is scheduled');
    // Nothing before the slot; two slots may fall in the same millisecond (deadline = t), and
    // then the second is due at once.
    if (deadline > t) assert.equal(wasm.clientPollTransmit(client.handle, deadline - 1, NOW + 10), null);
    t = deadline;
    const out = wasm.clientPollTransmit(client.handle, t, NOW + 10);
    assert.ok(out, 'a packet at the slot');
    assert.equal(out.packet.length, 4096);
    sent++;
  }
  const stats = wasm.clientStats(client.handle);
  assert.ok(stats.real_packets >= 1);
  assert.ok(stats.cover_packets >= 1);
});

// Runs a request's packets through the native mixnet and echo exit; returns the gateway records.
function throughPeer(topo, epoch, request, name) {
  const packetsFile = join(dir, `${name}-packets.bin`);
  const recordsFile = join(dir, `${name}-records.bin`);
  writeFileSync(packetsFile, request.raw.slice(8));
  assert.equal(peerJson('exit', topo.secrets, epoch, packetsFile, recordsFile).answered, 1);
  return parseRecords(new Uint8Array(readFileSync(recordsFile)));
}

test('gateway hand-over in wasm: a new topology moves the gateway, replies in flight still arrive through the old one', async () => {
  const wasm = await fresh();
  const topo = makeTopology(9);
  const before = wasm.verifyTopology(topo.doc, topo.authority, NOW + 10);
  const epoch = wasm.topologyInfo(before, NOW + 10).client_epoch;
  const client = wasm.clientNew(before, { timeout_ms: 30000 }, 0, NOW + 10);
  const old = client.gateway;
  assert.deepEqual(wasm.clientGateways(client.handle).map(hex), [hex(old)]);
  // The same network again: the gateway stays.
  assert.equal(wasm.clientSetTopology(client.handle, before, 500, NOW + 10), null);

  const inFlight = wasm.clientRequest(client.handle, 1, 'sent before the move', 200, 1000, NOW + 11);
  // The gateway leaves the network: the next document (same seed, same keys) lacks it.
  const docFile = join(dir, 'doc-9-without-gateway.json');
  peer('topology', NOW, 9, docFile, join(dir, 'secrets-9-again.json'), hex(old));
  const after = wasm.verifyTopology(readFileSync(docFile), topo.authority, NOW + 11);
  const nodes = wasm.topologyInfo(after, NOW + 11).nodes;
  assert.equal(nodes.length, 5);
  assert.ok(!nodes.some((n) => n.id === hex(old)));
  const moved = wasm.clientSetTopology(client.handle, after, 1500, NOW + 11);
  assert.ok(moved, 'the gateway moved');
  assert.notEqual(hex(moved), hex(old));
  assert.equal(nodes.find((n) => n.id === hex(moved)).layer, 2);
  // Both links are kept: the new gateway first, the old one while the request is in flight.
  assert.deepEqual(wasm.clientGateways(client.handle).map(hex), [hex(moved), hex(old)]);

  // The request sent before the move is answered through the old gateway and completes.
  const oldRecords = throughPeer(topo, epoch, inFlight, 'handover-old');
  let done = null;
  for (const { gateway, record } of oldRecords) {
    assert.equal(hex(gateway), hex(old), 'its SURBs name the old gateway');
    done = wasm.clientOnDownstream(client.handle, gateway, record, 2000, NOW + 12) ?? done;
  }
  assert.ok(done, 'the reply through the old gateway completed the request');
  assert.equal(done.id, inFlight.id);
  assert.equal(new TextDecoder().decode(done.response.body), 'sent before the move');
  // Nothing names the old gateway any more: its link can close.
  assert.deepEqual(wasm.clientGateways(client.handle).map(hex), [hex(moved)]);

  // A request sent after the move is answered through the new gateway.
  const next = wasm.clientRequest(client.handle, 1, 'sent after the move', 200, 3000, NOW + 13);
  let second = null;
  for (const { gateway, record } of throughPeer(topo, epoch, next, 'handover-new')) {
    assert.equal(hex(gateway), hex(moved));
    second = wasm.clientOnDownstream(client.handle, gateway, record, 3500, NOW + 13) ?? second;
  }
  assert.equal(second?.id, next.id);
  assert.equal(wasm.clientStats(client.handle).completed, 2);
  // Refusals: handles of the wrong kind.
  expectStatus(() => wasm.clientSetTopology(client.handle, client.handle, 4000, NOW + 14), Status.WRONG_HANDLE);
  expectStatus(() => wasm.clientSetTopology(after, after, 4000, NOW + 14), Status.WRONG_HANDLE);
  expectStatus(() => wasm.clientGateways(after), Status.WRONG_HANDLE);
});
