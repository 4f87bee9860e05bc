// The shielded wallet and the transfer prover in the nox-wasm module, checked against native
// nox-wallet / nox-zk (the `prover_peer` example) and the committed note vectors
// (docs/spec/vectors/notes.json). Run by js/test/run.sh:
//   NOX_WASM=<nox_wasm.wasm> NOX_PROVER_PEER=<prover_peer binary> node --test crates/nox-wasm/js/test/prover.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NoxWasm, NoxWasmError, Status } from '../nox_wasm.mjs';

const WASM = process.env.NOX_WASM;
const PEER = process.env.NOX_PROVER_PEER;
if (!WASM || !PEER) throw new Error('set NOX_WASM and NOX_PROVER_PEER (crates/nox-wasm/js/test/run.sh does)');

const wasmModule = new WebAssembly.Module(readFileSync(WASM));
const dir = mkdtempSync(join(tmpdir(), 'nox-prover-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const unhex = (text) => new Uint8Array(Buffer.from(text, 'hex'));
const peer = (...args) => execFileSync(PEER, args.map(String), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const vectors = JSON.parse(readFileSync(new URL('../../../../docs/spec/vectors/notes.json', import.meta.url), 'utf8'));

peer('fixture', dir);
const fixture = JSON.parse(readFileSync(join(dir, 'fixture.json'), 'utf8'));
const provingKey = readFileSync(join(dir, 'transfer.pk'));
const uncompressedKey = readFileSync(join(dir, 'transfer.pk.uncompressed'));

function expectStatus(fn, status) {
  assert.throws(fn, (e) => e instanceof NoxWasmError && e.code === status, `expected status ${status}`);
}

test('a seed gives the committed payment address (the same as nox wallet)', async () => {
  const wasm = await NoxWasm.instantiate(wasmModule);
  assert.equal(wasm.walletAddress(unhex(vectors.seed)), vectors.payment_address);
  assert.equal(wasm.walletAddress(unhex(fixture.seed)), fixture.address);
  expectStatus(() => wasm.walletAddress(new Uint8Array(31)), Status.BAD_ARGUMENT);
});

test('note ciphertexts open in wasm as the committed vectors say (mine, not mine, corrupt)', async () => {
  const wasm = await NoxWasm.instantiate(wasmModule);
  const seed = unhex(vectors.seed);
  for (const v of vectors.scans) {
    const opened = wasm.walletOpenNote(seed, unhex(v.ciphertext), unhex(v.asset), unhex(v.commitment));
    assert.equal(opened.result, v.result, v.name);
    if (v.result === 'mine') {
      assert.equal(opened.value, v.value, v.name);
      assert.equal(opened.blinding, v.blinding, v.name);
    }
  }
});

test("a native wallet's pool view has the same balance in wasm", async () => {
  const wasm = await NoxWasm.instantiate(wasmModule);
  const b = wasm.walletBalances(fixture.view);
  assert.equal(b.root, fixture.root);
  assert.equal(b.assets.length, 1);
  assert.equal(b.assets[0].spendable, fixture.spendable);
  assert.equal(b.assets[0].notes, 2);
  expectStatus(() => wasm.walletBalances('{"not":"a view"}'), Status.WALLET);
});

test('a transfer proved in wasm verifies natively; altered public inputs do not', async () => {
  const wasm = await NoxWasm.instantiate(wasmModule);
  // The uncompressed form (what the SDK's Worker caches after its first, compressed, load:
  // that load is in sdk/ts/test/prover.test.mjs) loads in milliseconds; the module writes the
  // same bytes back.
  let t = performance.now();
  const key = wasm.loadProvingKey(uncompressedKey, { uncompressed: true });
  const loadMs = performance.now() - t;
  assert.ok(Buffer.from(wasm.provingKeyBytes(key)).equals(uncompressedKey));
  const { handle, description } = wasm.walletPrepare(unhex(fixture.seed), fixture.view, fixture.request);
  assert.equal(description.root, fixture.root);
  assert.deepEqual(description.outputs.map((o) => o.role).sort(), ['change', 'requested']);
  assert.equal(description.fee, fixture.request.fee);
  t = performance.now();
  const { proof, publicInputs, bytes } = wasm.proveTransfer(key, handle);
  const proveMs = performance.now() - t;
  console.log(`# wasm (Node): proving key load ${loadMs.toFixed(0)} ms (uncompressed, matrices included); transfer proof ${proveMs.toFixed(0)} ms`);
  assert.equal(proof.length, 256);
  assert.equal(Buffer.from(publicInputs[0]).toString('hex'), fixture.root);
  assert.equal(Buffer.from(publicInputs[1]).toString('hex'), description.nullifiers[0]);
  assert.equal(Buffer.from(publicInputs[3]).toString('hex'), description.commitments[0]);
  assert.equal(Buffer.from(publicInputs[7]).toString('hex'), description.context);
  const file = join(dir, 'proof.bin');
  writeFileSync(file, bytes);
  assert.deepEqual(JSON.parse(peer('verify', file)), { verified: true });
  // The proof binds its statement: another context (fee, relayer, deadline...) or another
  // nullifier is refused by the native verifier.
  for (const word of [1, 7]) {
    const altered = bytes.slice();
    altered[256 + 32 * word + 31] ^= 1;
    writeFileSync(file, altered);
    assert.throws(() => peer('verify', file), undefined, `public input ${word} altered`);
  }
  // The prepared transaction was consumed (its witness zeroized).
  expectStatus(() => wasm.proveTransfer(key, handle), Status.UNKNOWN_HANDLE);
  expectStatus(() => wasm.proveTransfer(handle, key), Status.UNKNOWN_HANDLE);
});

test('refusals: a key of another shape, a wrong handle, more than the balance, a bad request', async () => {
  const wasm = await NoxWasm.instantiate(wasmModule);
  expectStatus(() => wasm.loadProvingKey(provingKey.subarray(0, 1000)), Status.ZK);
  expectStatus(() => wasm.loadProvingKey(new Uint8Array(0)), Status.ZK);
  // The compressed key read as uncompressed (and the reverse) is refused by its shape or length.
  expectStatus(() => wasm.loadProvingKey(provingKey, { uncompressed: true }), Status.ZK);
  expectStatus(() => wasm.call('nox_prover_load', [2], [provingKey]), Status.BAD_ARGUMENT);
  const seed = unhex(fixture.seed);
  const tooMuch = { ...fixture.request, outputs: [{ ...fixture.request.outputs[0], value: '5000000000000000000' }] };
  expectStatus(() => wasm.walletPrepare(seed, fixture.view, tooMuch), Status.WALLET);
  expectStatus(() => wasm.walletPrepare(seed, fixture.view, { ...fixture.request, extra: 1 }), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.walletPrepare(seed, fixture.view, { ...fixture.request, pool: '00' }), Status.BAD_ARGUMENT);
  const { handle } = wasm.walletPrepare(seed, fixture.view, fixture.request);
  // A prepared transaction is not a proving key (and stays usable after the refusal).
  expectStatus(() => wasm.proveTransfer(handle, handle), Status.WRONG_HANDLE);
  wasm.drop(handle);
  expectStatus(() => wasm.proveTransfer(handle, handle), Status.UNKNOWN_HANDLE);
});

test('the split prover (issue 31): 2 parts verify natively; bad parts, indices and handles are refused', async () => {
  const wasm = await NoxWasm.instantiate(wasmModule);
  const key = wasm.loadProvingKey(uncompressedKey, { uncompressed: true });
  // Two instances stand for two Workers: the parts are computed apart and added in a third call.
  const helper = await NoxWasm.instantiate(wasmModule);
  const helperKey = helper.loadProvingKey(uncompressedKey, { uncompressed: true });
  const { handle } = wasm.walletPrepare(unhex(fixture.seed), fixture.view, fixture.request);
  const prepared = wasm.splitPrepare(handle);
  expectStatus(() => wasm.splitPrepare(handle), Status.UNKNOWN_HANDLE); // consumed
  const parts = [helper.splitPart(helperKey, prepared, 1, 2), wasm.splitPart(key, prepared, 0, 2)];
  assert.equal(parts[0].length, 396);
  const { bytes } = wasm.splitFinish(key, prepared, parts);
  const file = join(dir, 'proof-split.bin');
  writeFileSync(file, bytes);
  assert.deepEqual(JSON.parse(peer('verify', file)), { verified: true });
  // Part index ≥ n, zero parts, more than 64 (status 11, ZK: the split prover's typed error).
  expectStatus(() => wasm.splitPart(key, prepared, 2, 2), Status.ZK);
  expectStatus(() => wasm.splitPart(key, prepared, 0, 0), Status.ZK);
  expectStatus(() => wasm.splitPart(key, prepared, 0, 65), Status.ZK);
  // A truncated assignment; parts of the wrong length, missing or twice; a wrong handle.
  expectStatus(() => wasm.splitPart(key, prepared.subarray(0, prepared.length - 1), 0, 1), Status.ZK);
  expectStatus(() => wasm.splitFinish(key, prepared, [parts[0].subarray(1)]), Status.BAD_ARGUMENT);
  expectStatus(() => wasm.splitFinish(key, prepared, [parts[0]]), Status.ZK);
  expectStatus(() => wasm.splitFinish(key, prepared, [parts[0], parts[0]]), Status.ZK);
  const other = wasm.walletPrepare(unhex(fixture.seed), fixture.view, fixture.request).handle;
  expectStatus(() => wasm.splitPart(other, prepared, 0, 1), Status.WRONG_HANDLE);
  expectStatus(() => wasm.splitPrepare(key), Status.WRONG_HANDLE);
});
