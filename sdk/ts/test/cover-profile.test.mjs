// The SDK's cover profiles (`coverProfile`, `mobileBudgetBytesPerDay`): NoxClient.connect refuses
// an unknown name with a typed error listing the valid ones before fetching anything, and passes
// a valid choice to the module; the module's client core (the real WebAssembly module, driven in
// virtual time, a topology signed by the native `wasm_peer`) then sends fewer cover packets under
// `mobile` with a small budget than under `always-on` in the same window, and none under `wallet`
// before the first request and after its padded session ends.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { COVER_PROFILES, NoxClient, NoxError, UnknownCoverProfileError, loadModule } from "../dist/index.js";
import { WASM, target } from "./testnet-helper.mjs";

const PEER = process.env.NOX_WASM_PEER ?? join(target, "debug/examples/wasm_peer");
const NOW = 1_800_000_000;
const AUTHORITY = "11".repeat(32);

/** A module that records the configuration it is given; `verifyTopology` counts fetches. */
function recordingModule() {
  const seen = { configs: [], fetched: 0 };
  const m = {
    seen,
    verifyTopology: () => 1,
    topologyNodes: () => [{ id: "aa".repeat(32), layer: 0, linkKey: "00" }],
    clientNew: (_topology, config) => {
      seen.configs.push(JSON.parse(new TextDecoder().decode(config)));
      // Stop here: the configuration is what this test checks.
      throw new Error("stop");
    },
    drop: () => {},
  };
  const fetch = async () => {
    seen.fetched += 1;
    return new Response(new Uint8Array(1));
  };
  return { m, fetch, seen };
}

const connect = (m, fetch, extra) =>
  NoxClient.connect({ directory: "http://directory.invalid/topology", authorityKey: AUTHORITY, module: m, fetch, WebSocket: class {}, ...extra });

test("an unknown cover profile is a typed error listing the valid names, raised before any fetch", async () => {
  const { m, fetch, seen } = recordingModule();
  for (const bad of ["always_on", "Wallet", "", 3]) {
    await assert.rejects(connect(m, fetch, { coverProfile: bad }), (error) => {
      assert.ok(error instanceof UnknownCoverProfileError, String(error));
      assert.ok(error instanceof NoxError);
      assert.equal(error.code, "bad-input");
      assert.deepEqual([...error.valid], ["always-on", "wallet", "mobile"]);
      for (const name of COVER_PROFILES) assert.match(error.message, new RegExp(name));
      return true;
    });
  }
  // A budget without the mobile profile, or a budget that is not a positive whole number.
  for (const extra of [
    { mobileBudgetBytesPerDay: 1_000_000 },
    { coverProfile: "wallet", mobileBudgetBytesPerDay: 1_000_000 },
    { coverProfile: "mobile", mobileBudgetBytesPerDay: 0 },
    { coverProfile: "mobile", mobileBudgetBytesPerDay: 1.5 },
    { coverProfile: "wallet", coverRate: 0 },
  ]) {
    await assert.rejects(connect(m, fetch, extra), (e) => e instanceof NoxError && e.code === "bad-input", JSON.stringify(extra));
  }
  assert.equal(seen.fetched, 0, "refused before the directory was asked");
});

test("the profile and budget reach the module's configuration; no profile sends no field (always-on)", async () => {
  const { m, fetch, seen } = recordingModule();
  for (const extra of [{}, { coverProfile: "wallet" }, { coverProfile: "mobile", mobileBudgetBytesPerDay: 5_000_000 }]) {
    await assert.rejects(connect(m, fetch, extra));
  }
  assert.deepEqual(seen.configs, [
    { cover_rate: 2.75, timeout_ms: 30_000 },
    { cover_rate: 2.75, timeout_ms: 30_000, profile: "wallet" },
    { cover_rate: 2.75, timeout_ms: 30_000, profile: "mobile", mobile_budget_bytes_per_day: 5_000_000 },
  ]);
});

// The real module from here on.
assert.ok(existsSync(WASM), `the module is missing at ${WASM} (see crates/nox-wasm/README.md, or set NOX_WASM)`);
assert.ok(existsSync(PEER), `the native peer is missing at ${PEER} (cargo build --example wasm_peer, or set NOX_WASM_PEER)`);
const dir = mkdtempSync(join(tmpdir(), "nox-sdk-profile-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
execFileSync(PEER, ["topology", String(NOW), "5", join(dir, "doc.json"), join(dir, "secrets.json")], { stdio: "ignore" });
const DOC = new Uint8Array(readFileSync(join(dir, "doc.json")));
const AUTHORITY_KEY = new Uint8Array(Buffer.from(JSON.parse(readFileSync(join(dir, "secrets.json"), "utf8")).authority, "hex"));
const wasmModule = new WebAssembly.Module(readFileSync(WASM));

/** A client core of the real module under `config`, created at virtual time 0 ms. */
async function core(config) {
  const m = await loadModule(wasmModule);
  const topology = m.verifyTopology(DOC, AUTHORITY_KEY, NOW + 10);
  const { handle } = m.clientNew(topology, new TextEncoder().encode(JSON.stringify({ cover_rate: 2.75, ...config })), 0, NOW + 10);
  return { m, handle };
}

/** Runs the core's slots from `fromMs` to `toMs` (virtual), as NoxClient's timer does; returns the packets sent. */
function run({ m, handle }, fromMs, toMs) {
  let sent = 0;
  let t = fromMs;
  for (;;) {
    while (m.pollTransmit(handle, t, NOW + 10) !== null) sent += 1;
    m.pollTimeouts(handle, t, NOW + 10);
    const next = m.nextDeadline(handle);
    if (next === null || next > toMs) return sent;
    // Deadlines are whole milliseconds, rounded up: one not yet due is due a millisecond later.
    t = next > t ? next : t + 1;
  }
}

test("mobile with a small budget sends fewer packets than always-on in the same window, within its budget", async () => {
  const windowMs = 300_000;
  const always = run(await core({}), 0, windowMs);
  // 2.75/s for 300 s: ~825 slots, all cover.
  assert.ok(always > 700 && always < 950, `always-on sent ${always}`);
  // 1,000 packets of 4 KiB a day: ~0.0116/s, ~3.5 expected in the window.
  const budget = 1_000 * 4096;
  const mobileCore = await core({ profile: "mobile", mobile_budget_bytes_per_day: budget });
  const mobile = run(mobileCore, 0, windowMs);
  assert.ok(mobile < 30, `mobile (budget ${budget} B/day) sent ${mobile} packets in 300 s; always-on ${always}`);
  // Every one of them cover (drop or loop): no request was made.
  const stats = mobileCore.m.stats(mobileCore.handle);
  assert.equal(stats.cover_packets + stats.loops_sent, mobile);
  assert.equal(stats.real_packets, 0);
  // The default budget (125 MB/day, 0.353 packets/s) also thins it, to ~106 in 300 s.
  const byDefault = run(await core({ profile: "mobile" }), 0, windowMs);
  assert.ok(byDefault > 50 && byDefault < 170, `mobile (default budget) sent ${byDefault}`);
  // The profile name alone changes nothing but the gate: always-on by name is the default.
  const named = run(await core({ profile: "always-on" }), 0, windowMs);
  assert.ok(named > 700, `always-on by name sent ${named}`);
});

test("wallet sends nothing before a request, cover during its padded session, nothing after it ends", async () => {
  const c = await core({ profile: "wallet" });
  assert.equal(run(c, 0, 60_000), 0, "no cover before the first request");
  const request = c.m.request(c.handle, 1, new TextEncoder().encode("hi"), 10, 60_000, NOW + 10, null);
  assert.equal(request.packets.length, 0, "the request waits for a slot");
  // The session: from 60 s to max(60 + 30, 60 + 120) = 180 s at 2.75/s, ~330 packets.
  const during = run(c, 60_000, 180_000);
  assert.ok(during > 250 && during < 420, `wallet session sent ${during}`);
  assert.equal(c.m.stats(c.handle).real_packets, 1);
  // After the session: silent for as long as the app makes no request.
  const after = run(c, 180_100, 600_000);
  assert.equal(after, 0, `wallet sent ${after} packets after its session ended`);
  // A new request starts a new session.
  c.m.request(c.handle, 1, new TextEncoder().encode("again"), 10, 600_000, NOW + 10, null);
  assert.ok(run(c, 600_000, 660_000) > 100);
});

test("the module itself refuses an unknown profile and a stray budget, naming the valid profiles", async () => {
  const m = await loadModule(wasmModule);
  const topology = m.verifyTopology(DOC, AUTHORITY_KEY, NOW + 10);
  const make = (config) => () => m.clientNew(topology, new TextEncoder().encode(JSON.stringify(config)), 0, NOW + 10);
  assert.throws(make({ profile: "offline" }), /always-on, wallet or mobile/);
  assert.throws(make({ profile: 1 }), /always-on, wallet, mobile/);
  assert.throws(make({ profile: "wallet", mobile_budget_bytes_per_day: 10 }), /needs profile "mobile"/);
  assert.throws(make({ profile: "wallet", cover_rate: 0 }), /cover_rate > 0/);
});
