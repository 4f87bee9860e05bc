// NoxClient's shell logic with a fake module, fetch and WebSocket (the real
// module and network are in testnet.test.mjs): the gateway link's loss fails
// the requests in flight with the reason and is redialed with backoff, never
// in a tight loop; a closed client rejects and frees everything; a newer topology
// moves the gateway and the old gateway's link stays open while replies are owed.

import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { NoxClient, NoxError } from "../dist/index.js";

const GATEWAY = new Uint8Array(32).fill(0xaa);
const ENTRY = new Uint8Array(32).fill(0xbb);
const NEW_GATEWAY = new Uint8Array(32).fill(0xcc);
const hex = (b) => Buffer.from(b).toString("hex");

function fakeModule() {
  const dropped = [];
  const mailboxes = [];
  let next = 10n;
  let topologies = 0;
  const state = { gateways: [GATEWAY], moveTo: null, downstream: () => null };
  return {
    dropped,
    mailboxes,
    state,
    verifyTopology: () => ++topologies,
    topologyNodes: (topology) => [
      { id: hex(ENTRY), layer: 0, linkKey: "00", websocket: "127.0.0.1:1" },
      // The second document: the old gateway left, a new one joined.
      topology === 1
        ? { id: hex(GATEWAY), layer: 2, linkKey: "00", websocket: "127.0.0.1:2" }
        : { id: hex(NEW_GATEWAY), layer: 2, linkKey: "00", websocket: "127.0.0.1:3" },
    ],
    setTopology: () => state.moveTo,
    gateways: () => state.gateways,
    clientNew: () => ({ handle: 2, gateway: GATEWAY, mailbox: new Uint8Array(32).fill(7) }),
    request: () => ({ id: next++, packets: [{ entry: ENTRY, packet: new Uint8Array(8) }] }),
    pollTransmit: () => null,
    onDownstream: (_client, from, record) => state.downstream(from, record),
    pollTimeouts: () => [],
    nextDeadline: () => null,
    stats: () => ({}),
    linkStart: (_topology, node, mailbox) => {
      mailboxes.push([hex(node), mailbox === null ? null : hex(mailbox)]);
      return {
      first: new Uint8Array([1]),
      link: {
        // The handshake's answer (4 bytes) opens nothing; anything longer is one record.
        feed: (bytes) => ({ send: new Uint8Array(0), records: bytes.length === 4 ? [] : [bytes], established: true }),
        seal: (p) => p,
        drop: () => {},
      },
      };
    },
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

async function connected(options = {}) {
  const module = fakeModule();
  const { made, FakeSocket } = fakeSockets();
  const client = await NoxClient.connect({
    directory: "http://directory.invalid/topology",
    authorityKey: "11".repeat(32),
    module,
    WebSocket: FakeSocket,
    fetch: async () => new Response("{}"),
    ...options,
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

test("a newer topology moves the gateway; the old gateway's link stays open until its replies are in", async () => {
  const { client, module, made } = await connected({ topologyRefreshMs: 0 });
  const at = (port) => made.filter((s) => s.url.includes(`:${port}/`));
  assert.equal(client.gateway, hex(GATEWAY));
  const inFlight = client.request("echo", new Uint8Array([1]));
  // The next document lacks the gateway: the core draws another and still owes a reply
  // through the old one.
  module.state.moveTo = NEW_GATEWAY;
  module.state.gateways = [NEW_GATEWAY, GATEWAY];
  assert.equal(await client.refreshTopology(), hex(NEW_GATEWAY));
  assert.equal(client.gateway, hex(NEW_GATEWAY));
  assert.deepEqual(client.replyGateways, [hex(NEW_GATEWAY), hex(GATEWAY)]);
  assert.equal(at(3).length, 1, "a link to the new gateway");
  assert.equal(at(2).length, 1);
  assert.equal(at(2)[0].readyState, 1, "the old gateway's link stays open");
  // Both gateway links name the mailbox; the entry's does not.
  const mailbox = hex(new Uint8Array(32).fill(7));
  assert.deepEqual(
    module.mailboxes.filter(([node]) => node !== hex(ENTRY)),
    [[hex(GATEWAY), mailbox], [hex(NEW_GATEWAY), mailbox]],
  );
  assert.ok(module.mailboxes.filter(([node]) => node === hex(ENTRY)).every(([, m]) => m === null));
  assert.equal(module.dropped.includes(1), true, "the old document is freed");

  // The reply arrives through the old gateway and completes the request; nothing is owed
  // there any more, so its link closes.
  module.state.downstream = (from, record) => {
    assert.equal(hex(from), hex(GATEWAY));
    module.state.gateways = [NEW_GATEWAY];
    return { id: 10n, response: { status: 0, body: record } };
  };
  await new Promise((resolve) => setImmediate(resolve));
  at(2)[0].onmessage({ data: new Uint8Array([9, 9, 9, 9, 9]).buffer });
  assert.deepEqual([...(await inFlight)], [9, 9, 9, 9, 9]);
  assert.equal(at(2)[0].readyState, 3, "the old gateway's link is closed");
  assert.deepEqual(client.replyGateways, [hex(NEW_GATEWAY)]);
  assert.equal(at(3)[0].readyState, 1);
  // The new gateway's link is the one the client keeps: losing it fails what is in flight.
  const later = client.request("echo", new Uint8Array([2])).catch((error) => error);
  await new Promise((resolve) => setImmediate(resolve));
  at(3)[0].kill();
  assert.equal((await later).code, "transport");
  client.close();
});

test("refreshTopology refuses after close, and a document the core refuses is a topology error", async () => {
  const { client, module } = await connected({ topologyRefreshMs: 0 });
  module.setTopology = () => {
    throw new Error("CLIENT: wrong geometry");
  };
  await assert.rejects(client.refreshTopology(), (error) => error.code === "topology" && /geometry/.test(error.message));
  assert.equal(client.gateway, hex(GATEWAY), "nothing changed");
  assert.ok(module.dropped.includes(2), "the refused document is freed");
  client.close();
  await assert.rejects(client.refreshTopology(), (error) => error.code === "closed");
});

test("the directory's fetch is called as a plain function (a browser's fetch refuses any other `this`)", async () => {
  function strictFetch() {
    if (this !== undefined && this !== globalThis) {
      throw new TypeError("Failed to execute 'fetch': Illegal invocation");
    }
    return Promise.resolve(new Response("{}"));
  }
  const { client } = await connected({ fetch: strictFetch, topologyRefreshMs: 0 });
  assert.equal(await client.refreshTopology(), null);
  client.close();
});

test("each node is dialed as its descriptor says (wss:// or ws://); an https page refuses ws://", async () => {
  const tlsNodes = (module, tls) => {
    const nodes = module.topologyNodes;
    module.topologyNodes = (t) => nodes(t).map((n) => ({ ...n, websocketTls: tls(n) }));
    return module;
  };
  // The entry serves wss://, the gateway plain ws://: each gets its own scheme.
  {
    const module = tlsNodes(fakeModule(), (n) => n.id === hex(ENTRY));
    const { made, FakeSocket } = fakeSockets();
    const client = await NoxClient.connect({
      directory: "http://directory.invalid/topology",
      authorityKey: "11".repeat(32),
      module,
      WebSocket: FakeSocket,
      fetch: async () => new Response("{}"),
    });
    client.request("echo", new Uint8Array([1])).catch(() => {});
    await new Promise((resolve) => setImmediate(resolve));
    const urls = made.map((s) => s.url).sort();
    assert.deepEqual(urls, ["wss://127.0.0.1:1/", "ws://127.0.0.1:2/"].sort());
    client.close();
  }
  // On an https page the plain gateway is refused by name before any socket is made; a
  // network whose nodes all serve wss:// connects.
  const saved = Object.getOwnPropertyDescriptor(globalThis, "location");
  Object.defineProperty(globalThis, "location", { value: { protocol: "https:" }, configurable: true });
  try {
    const { made, FakeSocket } = fakeSockets();
    const options = (module) => ({
      directory: "http://directory.invalid/topology",
      authorityKey: "11".repeat(32),
      module,
      WebSocket: FakeSocket,
      fetch: async () => new Response("{}"),
    });
    await assert.rejects(
      NoxClient.connect(options(tlsNodes(fakeModule(), (n) => n.id === hex(ENTRY)))),
      (error) => error instanceof NoxError && error.code === "transport" && /mixed content/.test(error.message),
    );
    assert.equal(made.length, 0, "no ws:// socket from an https page");
    const client = await NoxClient.connect(options(tlsNodes(fakeModule(), () => true)));
    assert.ok(made.length >= 1 && made.every((s) => s.url.startsWith("wss://")), made.map((s) => s.url).join(" "));
    client.close();
  } finally {
    if (saved === undefined) {
      delete globalThis.location;
    } else {
      Object.defineProperty(globalThis, "location", saved);
    }
  }
});
