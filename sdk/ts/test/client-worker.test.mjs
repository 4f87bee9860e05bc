// The client core in a Worker (issue 31), without a network: a Node worker_threads Worker runs
// dist/client-worker.js and the page-side proxy (WorkerNoxClient) gets its failures back with
// the SDK's codes and classes, as NoxClient.connect would throw them on the main thread.
// The mixnet path itself (a page's Worker client gets eth_blockNumber) is in
// client-worker-browser.test.mjs.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { test } from "node:test";
import { NoxClient, NoxError, NoxRefusedError, WorkerNoxClient, loadModule } from "../dist/index.js";
import { fromWire, toWire } from "../dist/client-worker-proxy.js";
import { WASM } from "./testnet-helper.mjs";

const AUTHORITY = "11".repeat(32);

test("a failure keeps its code and class across the Worker boundary", () => {
  const refused = fromWire(toWire(new NoxRefusedError("forbidden", "eth_sign is not allowed")));
  assert.ok(refused instanceof NoxRefusedError);
  assert.equal(refused.code, "refused");
  assert.equal(refused.status, "forbidden");
  assert.match(refused.message, /refused by the exit \(forbidden\): eth_sign is not allowed/);
  const timeout = fromWire(toWire(new NoxError("timeout", "no reply within 5 ms")));
  assert.ok(timeout instanceof NoxError && !(timeout instanceof NoxRefusedError));
  assert.equal(timeout.code, "timeout");
  // Anything that is not an SDK error is a transport failure, never an untyped one.
  assert.equal(fromWire(toWire(new TypeError("boom"))).code, "transport");
});

test("the Worker's client refuses as the main thread's: same codes for a bad key and an unverifiable directory", async () => {
  const server = createServer((_, response) => response.writeHead(200).end("{\"not\":\"a topology\"}"));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const directory = `http://127.0.0.1:${server.address().port}/topology`;
  const wasm = readFileSync(WASM);
  try {
    const module = await loadModule(wasm);
    for (const [options, code] of [
      [{ directory, authorityKey: "not hex" }, "bad-input"],
      [{ directory, authorityKey: AUTHORITY }, "topology"],
    ]) {
      const main = await NoxClient.connect({ ...options, module, WebSocket: class {} }).then(
        () => "connected",
        (e) => e,
      );
      const worker = await WorkerNoxClient.connect({ ...options, wasm, webSocketModule: "ws" }).then(
        () => "connected",
        (e) => e,
      );
      assert.ok(main instanceof NoxError, String(main));
      assert.ok(worker instanceof NoxError, String(worker));
      assert.equal(main.code, code);
      assert.equal(worker.code, code, worker.message);
      assert.equal(worker.message, main.message);
    }
  } finally {
    server.close();
  }
});
