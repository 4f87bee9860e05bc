// NoxClient's shell logic with a fake module, fetch and WebSocket (the real
// module and network are in testnet.test.mjs): the gateway link's loss fails
// the requests in flight with the reason and is redialed with backoff, never
// in a tight loop; a closed client rejects and frees everything.

import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { NoxClient, NoxError } from "../dist/index.js";

const GATEWAY = new Uint8Array(32).fill(0xaa);
const ENTRY = new Uint8Array(32).fill(0xbb);
const hex = (b) => Buffer.from(b).toString("hex");

function fakeModule() {
  const dropped = [];
  let next = 10n;
  return {
    dropped,
    verifyTopology: () => 1,
    topologyNodes: () => [
      { id: hex(ENTRY), layer: 0, linkKey: "00", websocket: "127.0.0.1:1" },
      { id: hex(GATEWAY), layer: 2, linkKey: "00", websocket: "127.0.0.1:2" },
    ],
    clientNew: () => ({ handle: 2, gateway: GATEWAY, mailbox: new Uint8Array(32).fill(7) }),
    request: () => ({ id: next++, packets: [{ entry: ENTRY, packet: new Uint8Array(8) }] }),
    pollTransmit: () => null,
    onDownstream: () => null,
    pollTimeouts: () => [],
    nextDeadline: () => null,
    stats: () => ({}),
    linkStart: () => ({
      first: new Uint8Array([1]),
      link: {
        feed: () => ({ send: new Uint8Array(0), records: [], established: true }),
        seal: (p) => p,
        drop: () => {},
      },
    }),
    drop: (h) => dropped.push(h),
  };
}

/** A WebSocket that opens at once and answers the first flight with "message 2". */
function fakeSockets() {
  const made = [];
  class FakeSocket {
    constructor(url) {
      this.url = url;
      this.readyState = 0;
      this.sent = [];
      made.push(this);
      queueMicrotask(() => {
        if (this.readyState === 0) {
          this.readyState = 1;
          this.onopen?.({});
        }
      });
    }
    send(data) {
      this.sent.push(data);
      if (this.sent.length === 1) {
        queueMicrotask(() => this.onmessage?.({ data: new ArrayBuffer(4) }));
      }
    }
    close() {
      this.readyState = 3;
    }
    /** The node goes away. */
    kill() {
      this.readyState = 3;
      this.onclose?.({});
    }
  }
  return { made, FakeSocket };
}

async function connected() {
  const module = fakeModule();
  const { made, FakeSocket } = fakeSockets();
  const client = await NoxClient.connect({
    directory: "http://directory.invalid/topology",
    authorityKey: "11".repeat(32),
    module,
    WebSocket: FakeSocket,
    fetch: async () => new Response("{}"),
  });
  return { client, module, made };
}

test("losing the gateway fails requests in flight with the reason and redials with backoff", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { client, made } = await connected();
    const gatewayLinks = () => made.filter((s) => s.url.includes(":2/"));
    assert.equal(gatewayLinks().length, 1);
    const pending = client.request("echo", new Uint8Array([1]));
    const outcome = pending.then(
      () => "resolved",
      (error) => error,
    );
    await new Promise((resolve) => setImmediate(resolve));
    gatewayLinks()[0].kill();
    const error = await outcome;
    assert.ok(error instanceof NoxError && error.code === "transport", String(error));
    // Nothing is redialed at once: the first retry waits 0.5 s.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(gatewayLinks().length, 1, "no tight redial loop");
    mock.timers.tick(499);
    assert.equal(gatewayLinks().length, 1);
    mock.timers.tick(1);
    assert.equal(gatewayLinks().length, 2, "redialed after 0.5 s");
    // The redial dies before its handshake: the next wait is longer (1 s).
    const second = gatewayLinks()[1];
    second.kill();
    mock.timers.tick(999);
    assert.equal(gatewayLinks().length, 2);
    mock.timers.tick(1);
    assert.equal(gatewayLinks().length, 3);
    client.close();
    mock.timers.tick(60_000);
    assert.equal(gatewayLinks().length, 3, "a closed client redials nothing");
  } finally {
    mock.timers.reset();
  }
});

test("close rejects what is pending, frees the module's state and refuses new requests", async () => {
  const { client, module } = await connected();
  const pending = client.request("echo", new Uint8Array([1]));
  client.close();
  await assert.rejects(pending, (error) => error.code === "closed");
  await assert.rejects(client.request("echo", new Uint8Array([2])), (error) => error.code === "closed");
  assert.deepEqual(module.dropped.sort(), [1, 2], "the client core and the topology are freed");
});

test("a topology that does not verify is a topology error, naming each directory tried", async () => {
  const module = { ...fakeModule(), verifyTopology: () => { throw new Error("signature does not verify"); } };
  const { FakeSocket } = fakeSockets();
  await assert.rejects(
    NoxClient.connect({
      directory: ["http://a.invalid/topology", "http://b.invalid/topology"],
      authorityKey: "11".repeat(32),
      module,
      WebSocket: FakeSocket,
      fetch: async (url) => (url.startsWith("http://a") ? new Response("down", { status: 503 }) : new Response("{}")),
    }),
    (error) =>
      error instanceof NoxError &&
      error.code === "topology" &&
      error.message.includes("a.invalid/topology: HTTP 503") &&
      error.message.includes("signature does not verify"),
  );
  await assert.rejects(
    NoxClient.connect({ directory: "http://x", authorityKey: "zz", module, WebSocket: FakeSocket }),
    (error) => error.code === "bad-input",
  );
});
