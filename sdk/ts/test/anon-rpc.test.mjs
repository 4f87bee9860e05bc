// NOX as an anon-rpc worker (src/anon-rpc.ts) against an in-memory exit: what a host's fetch to
// /ethereum-rpc becomes at the exits (one unlinked request per JSON-RPC request, the host's ids
// never sent), HTTP errors for what NOX does not serve, and the worker lifecycle (ready, failed,
// unknown call kinds). test/anon-rpc-testnet.test.mjs drives the real mixnet.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createPublicClient, http } from "viem";
import { ETHEREUM_RPC_PATH, NoxError, NoxProvider, runAnonRpcWorker, serveAnonRpc } from "../dist/index.js";
import { inProcessHarness } from "./anon-rpc-harness.mjs";

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const URL_RPC = `http://nox.anon${ETHEREUM_RPC_PATH}`;

/** A requester answering like an exit's upstream; records every request the exits received. */
function fakeExit(answer) {
  const sent = [];
  return {
    sent,
    async request(kind, body) {
      const request = JSON.parse(decoder.decode(body));
      sent.push({ kind, request });
      return encoder.encode(JSON.stringify({ jsonrpc: "2.0", id: request.id, ...(await answer(request)) }));
    },
  };
}

function started(exit) {
  const harness = inProcessHarness(undefined);
  const stop = new AbortController();
  const done = serveAnonRpc(harness.api, new NoxProvider(exit), { signal: stop.signal });
  return { harness, stop: () => (stop.abort(), done) };
}

const post = (body) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

test("viem over the worker's fetch: each read is one json-rpc request, sent with id 1", async () => {
  const exit = fakeExit(async (r) => ({ result: r.method === "eth_chainId" ? "0x7a69" : "0x2a" }));
  const { harness, stop } = started(exit);
  const chain = createPublicClient({ transport: http(URL_RPC, { fetchFn: harness.fetch, retryCount: 0 }) });
  assert.equal(await chain.getBlockNumber(), 42n);
  assert.equal(await chain.getChainId(), 31337);
  assert.deepEqual(exit.sent.map((s) => [s.kind, s.request.method, s.request.id]), [
    ["json-rpc", "eth_blockNumber", 1],
    ["json-rpc", "eth_chainId", 1],
  ]);
  await stop();
});

test("a batch is split into unlinked mixnet requests; the host's ids come back but never leave", async () => {
  const exit = fakeExit(async (r) => (r.method === "eth_bad" ? { error: { code: -32601, message: "no" } } : { result: r.method }));
  const { harness, stop } = started(exit);
  const batch = [
    { jsonrpc: "2.0", id: "host-secret-7", method: "eth_blockNumber" },
    { jsonrpc: "2.0", id: 99, method: "eth_bad", params: [] },
    { jsonrpc: "2.0", method: "eth_notify" },
  ];
  const answer = await (await harness.fetch(URL_RPC, post(batch))).json();
  assert.deepEqual(answer, [
    { jsonrpc: "2.0", id: "host-secret-7", result: "eth_blockNumber" },
    { jsonrpc: "2.0", id: 99, error: { code: -32601, message: "no" } },
  ]);
  assert.equal(exit.sent.length, 3, "one mixnet request per JSON-RPC request, the notification too");
  for (const { request } of exit.sent) {
    assert.equal(request.id, 1);
    assert.ok(!JSON.stringify(request).includes("host-secret"), JSON.stringify(request));
  }
  await stop();
});

test("what NOX does not serve is an HTTP error, and nothing reaches an exit", async () => {
  const exit = fakeExit(async () => ({ result: "0x1" }));
  const { harness, stop } = started(exit);
  assert.equal((await harness.fetch("https://example.org/")).status, 404);
  assert.equal((await harness.fetch("http://nox.anon/ethereum-rpc/../x", post({}))).status, 404);
  const get = await harness.fetch(URL_RPC);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  const big = await harness.fetch(URL_RPC, { method: "POST", body: "x".repeat(300 * 1024) });
  assert.equal(big.status, 413);
  const bad = await (await harness.fetch(URL_RPC, { method: "POST", body: "{not json" })).json();
  assert.equal(bad.error.code, -32700);
  const empty = await (await harness.fetch(URL_RPC, post([]))).json();
  assert.equal(empty.error.code, -32600);
  const noMethod = await (await harness.fetch(URL_RPC, post({ id: 3 }))).json();
  assert.deepEqual([noMethod.id, noMethod.error.code], [3, -32600]);
  const signing = await (await harness.fetch(URL_RPC, post({ id: 4, method: "eth_sendTransaction", params: [{}] }))).json();
  assert.equal(signing.error.code, 4200, "no keys in the worker: refused, as the provider does");
  assert.equal(exit.sent.length, 0);
  await stop();
});

test("a streamed body is read, and a body over the bound is refused mid-stream", async () => {
  const exit = fakeExit(async () => ({ result: "0x5" }));
  const { harness, stop } = started(exit);
  const streamOf = (text, chunk) =>
    new ReadableStream({
      start(controller) {
        const bytes = encoder.encode(text);
        for (let at = 0; at < bytes.length; at += chunk) controller.enqueue(bytes.subarray(at, at + chunk));
        controller.close();
      },
    });
  const ok = await harness.fetch(URL_RPC, { method: "POST", body: streamOf('{"id":1,"method":"eth_blockNumber"}', 5), duplex: "half" });
  assert.deepEqual(await ok.json(), { jsonrpc: "2.0", id: 1, result: "0x5" });
  const big = await harness.fetch(URL_RPC, { method: "POST", body: streamOf("x".repeat(300 * 1024), 4096), duplex: "half" });
  assert.equal(big.status, 413);
  assert.equal(exit.sent.length, 1);
  await stop();
});

test("an aborted call fails; unknown call kinds fail without stopping the worker", async () => {
  let release;
  let held = true;
  const exit = fakeExit((r) =>
    held ? new Promise((resolve) => (release = () => resolve({ result: "0x1" }))) : { result: r.method },
  );
  const { harness, stop } = started(exit);
  const abort = new AbortController();
  const pending = harness.fetch(URL_RPC, { ...post({ id: 1, method: "eth_blockNumber" }), signal: abort.signal });
  await new Promise((resolve) => setTimeout(resolve, 20));
  abort.abort();
  await assert.rejects(pending, (error) => error instanceof NoxError && error.code === "closed");
  held = false;
  release();
  await assert.rejects(harness.deliverOther("subscribe"), (error) => error.code === "bad-input");
  const after = await (await harness.fetch(URL_RPC, post({ id: 2, method: "eth_chainId" }))).json();
  assert.equal(after.result, "eth_chainId");
  await stop();
});

test("runAnonRpcWorker: ready after the client starts, signalFailed (never ready) when it cannot", async () => {
  const good = inProcessHarness({ directory: "http://x/topology" });
  const seen = [];
  const stop = new AbortController();
  const running = runAnonRpcWorker(
    good.api,
    async (config) => {
      seen.push(config);
      return { provider: () => new NoxProvider(fakeExit(async () => ({ result: "0x9" }))), close: () => seen.push("closed") };
    },
    { signal: stop.signal },
  );
  await good.ready;
  const answer = await (await good.fetch(URL_RPC, post({ id: 1, method: "eth_blockNumber" }))).json();
  assert.equal(answer.result, "0x9");
  stop.abort();
  await running;
  assert.deepEqual(seen, [{ directory: "http://x/topology" }, "closed"]);

  const bad = inProcessHarness({});
  const queued = bad.fetch(URL_RPC, post({ id: 1, method: "eth_blockNumber" }));
  await runAnonRpcWorker(bad.api, async () => {
    throw new NoxError("topology", "signature does not verify");
  });
  await assert.rejects(bad.ready, (error) => error.code === "network-error" && /signature/.test(error.message));
  await assert.rejects(queued, (error) => error.code === "network-error", "a call queued before the failure fails too");
  await assert.rejects(bad.fetch(URL_RPC, post({ id: 2, method: "eth_chainId" })));

  const refused = inProcessHarness({});
  await runAnonRpcWorker(refused.api, async () => {
    throw new NoxError("bad-input", "config lacks directory");
  });
  await assert.rejects(refused.ready, (error) => error.code === "unsupported");
});
