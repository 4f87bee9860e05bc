// The browser wallet's sealed key and stored state (issue 31), in Node: the seed sealed in
// `nox wallet`'s `wallet.key` format opens only with its passphrase and unaltered (typed errors),
// a key written by the native `nox wallet new` opens here to the same address and the reverse,
// and a wallet kept in a store resumes its sync from the stored cursor instead of block 0.
//
// Needs the module (NOX_WASM) and the `nox` binary (NOX_BIN); no testnet.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { MemoryWalletStore, NoxError, NoxWallet, openSeed, openState } from "../dist/index.js";
import { NoxWasm } from "../dist/nox_wasm.mjs";
import { fakeChain } from "./fake-chain.mjs";
import { NOX, WASM } from "./testnet-helper.mjs";

const PASSPHRASE = "correct horse battery staple";
const POOL = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
let module;
let dir;

before(async () => {
  module = await NoxWasm.instantiate(readFileSync(WASM));
  dir = mkdtempSync(join(tmpdir(), "nox-sdk-seal-"));
});

after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A chain read through EIP-1193 with `head` blocks and no pool log (./fake-chain.mjs); records
 * every `eth_getLogs` range asked, and fails the `failAt`-th page (a reload in the middle of a sync).
 */
const chain = (head) => fakeChain({ head });

/** `nox wallet <args>` with the test passphrase. */
function nox(args) {
  return execFileSync(NOX, ["wallet", ...args], {
    encoding: "utf8",
    env: { ...process.env, NOX_WALLET_PASSPHRASE: PASSPHRASE },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof NoxError, `a NoxError, not ${e}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

test("a created wallet's sealed key restores it; a wrong passphrase or any altered byte is refused with a typed error", async () => {
  const passphrase = new TextEncoder().encode(PASSPHRASE);
  const created = await NoxWallet.create({ module, provider: chain(0), pool: POOL, passphrase });
  assert.ok(passphrase.every((b) => b === 0), "a passphrase given as bytes is wiped after use");
  const sealed = created.sealedKey;
  assert.equal(sealed.length, 96, "wallet.key's length (48-byte header, 32-byte seed, 16-byte tag)");
  assert.equal(new TextDecoder().decode(sealed.slice(0, 8)), "NOXWLT01");
  const seed = created.seedCopy();
  assert.ok(!Buffer.from(sealed).includes(Buffer.from(seed)), "the seed is not in the sealed bytes");

  const restored = await NoxWallet.restore({ module, provider: chain(0), pool: POOL, sealed, passphrase: PASSPHRASE });
  assert.equal(restored.address, created.address);
  assert.deepEqual(restored.seedCopy(), seed);

  await rejectsWith(NoxWallet.restore({ module, provider: chain(0), pool: POOL, sealed, passphrase: "wrong" }), "wrong-passphrase");
  // An altered byte anywhere the AEAD covers: the KDF cost (header, associated data), the salt,
  // the nonce, the sealed seed, the tag.
  for (const at of [15, 20, 36, 48, 95]) {
    const tampered = sealed.slice();
    tampered[at] ^= 1;
    assert.throws(() => openSeed(module, tampered, PASSPHRASE), (e) => e instanceof NoxError && e.code === "wrong-passphrase", `byte ${at}`);
  }
  // Not a key file: another magic, a truncated file, KDF parameters out of range (0 lanes).
  const magic = sealed.slice();
  magic[0] ^= 1;
  assert.throws(() => openSeed(module, magic, PASSPHRASE), (e) => e.code === "bad-key-file");
  assert.throws(() => openSeed(module, sealed.slice(0, 95), PASSPHRASE), (e) => e.code === "bad-key-file");
  const lanes = sealed.slice();
  lanes[19] = 0;
  assert.throws(() => openSeed(module, lanes, PASSPHRASE), (e) => e.code === "bad-key-file");

  // Closing wipes the seed: nothing is served from the wallet afterwards.
  created.close();
  assert.throws(() => created.seedCopy(), (e) => e.code === "closed");
  assert.throws(() => created.exportKeyFile(PASSPHRASE), (e) => e.code === "closed");
});

test("native interop: nox wallet new's wallet.key opens in the SDK to the same address, and the SDK's key restores natively", async () => {
  const native = join(dir, "native");
  nox(["new", "--wallet", native]);
  const nativeAddress = nox(["address", "--wallet", native]).trim();
  const sealed = new Uint8Array(readFileSync(join(native, "wallet.key")));
  const inSdk = await NoxWallet.restore({ module, provider: chain(0), pool: POOL, sealed, passphrase: PASSPHRASE });
  assert.equal(inSdk.address, nativeAddress);
  await rejectsWith(NoxWallet.restore({ module, provider: chain(0), pool: POOL, sealed, passphrase: "not it" }), "wrong-passphrase");

  const sdk = await NoxWallet.create({ module, provider: chain(0), pool: POOL, passphrase: PASSPHRASE });
  const file = join(dir, "sdk.key");
  writeFileSync(file, sdk.sealedKey);
  const back = join(dir, "back");
  nox(["restore", "--wallet", back, "--from", file]);
  assert.equal(nox(["address", "--wallet", back]).trim(), sdk.address);
  // An altered byte natively refused too (the same code).
  const bad = sdk.sealedKey;
  bad[60] ^= 1;
  writeFileSync(file, bad);
  assert.throws(() => nox(["restore", "--wallet", join(dir, "bad"), "--from", file]));
});

test("a stored wallet resumes its sync from the stored cursor, not from block 0; the stored view is sealed", async () => {
  const store = new MemoryWalletStore();
  const reads = chain(2_500);
  const fromBlock = 10;
  const wallet = await NoxWallet.create({ module, provider: reads, pool: POOL, fromBlock, store, walletId: "w1", passphrase: PASSPHRASE });
  await rejectsWith(NoxWallet.create({ module, provider: reads, pool: POOL, store, walletId: "w1", passphrase: PASSPHRASE }), "bad-input");
  // An interrupted sync (the page closed on the third page) keeps what it read.
  reads.failAt = 2;
  await assert.rejects(wallet.sync());
  assert.deepEqual(reads.ranges, [[10, 1009], [1010, 2009]]);
  let record = await store.get("w1");
  assert.deepEqual(record.cursor, { pool: POOL, fromBlock, lastBlock: 2009 });
  assert.ok(!Buffer.from(record.state).includes(Buffer.from("last_block")), "the view is stored sealed, not in the clear");
  assert.match(openState(module, wallet.seedCopy(), record.state), /"last_block":2009/);

  // A reload: the wallet unlocked from the store with its passphrase resumes at block 2010.
  reads.failAt = undefined;
  reads.ranges = [];
  const reloaded = await NoxWallet.unlock({ module, provider: reads, pool: POOL, fromBlock, store, walletId: "w1", passphrase: PASSPHRASE });
  assert.equal(reloaded.address, wallet.address);
  assert.equal(reloaded.lastBlock, 2009);
  const report = await reloaded.sync();
  assert.equal(report.head, 2_500);
  assert.deepEqual(reads.ranges, [[2010, 2500]]);
  reads.head = 2_600;
  reads.ranges = [];
  await reloaded.sync();
  assert.deepEqual(reads.ranges, [[2501, 2600]]);
  record = await store.get("w1");
  assert.equal(record.cursor.lastBlock, 2600);
  assert.deepEqual(reloaded.balances().assets, []);

  // Refusals: a wrong passphrase; the same id for another pool; a state altered in the store;
  // another wallet's key over this id.
  await rejectsWith(NoxWallet.unlock({ module, provider: reads, pool: POOL, store, walletId: "w1", passphrase: "wrong" }), "wrong-passphrase");
  const otherPool = "0x" + "11".repeat(20);
  await rejectsWith(NoxWallet.unlock({ module, provider: reads, pool: otherPool, store, walletId: "w1", passphrase: PASSPHRASE }), "bad-input");
  const other = await NoxWallet.create({ module, provider: reads, pool: POOL, passphrase: PASSPHRASE });
  await rejectsWith(
    NoxWallet.restore({ module, provider: reads, pool: POOL, store, walletId: "w1", sealed: other.sealedKey, passphrase: PASSPHRASE }),
    "bad-input",
  );
  const altered = record.state.slice();
  altered[30] ^= 1;
  await store.put("w1", { state: altered });
  await rejectsWith(NoxWallet.unlock({ module, provider: reads, pool: POOL, store, walletId: "w1", passphrase: PASSPHRASE }), "bad-input");
  await rejectsWith(NoxWallet.unlock({ module, provider: reads, pool: POOL, store, walletId: "none", passphrase: PASSPHRASE }), "bad-input");
});
