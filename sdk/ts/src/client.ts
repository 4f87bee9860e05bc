// NoxClient: the Rust client core (compiled to WebAssembly) driven by the
// host's timers and WebSockets. The core decides everything a client decides
// natively — paths, SURBs, fragments, cover slots, timeouts — and this shell
// only carries bytes and wakes it up: the browser client is the native one.
// Its public types are in client-types.ts, the directory fetch and the nodes'
// URLs in client-directory.ts (both re-exported here).

import { coverProfileConfig } from "./cover-profile.js";
import { NoxError, NoxRefusedError } from "./errors.js";
import { NodeLink, type WebSocketLike } from "./link.js";
import { QUOTE_BODY, type RelayOutcome, type RelayQuote, type RelaySubmission, parseRelayAnswer, submitBody } from "./relay.js";
import { type MixnetRequester, NoxProvider, type ProviderOptions, type RequestKind, type RequestOptions } from "./provider.js";
import { type Directory, endpointUrl, fetchTopology, nowUnix } from "./client-directory.js";
import type { ClientCoreModule, Completed, NoxClientOptions, Outgoing, TopologyNode } from "./client-types.js";

export type { ClientCoreModule, Completed, NoxClientOptions, Outgoing, TopologyNode } from "./client-types.js";
export { endpointUrl } from "./client-directory.js";

/** Request kinds of docs/spec/messages.md §2. */
const KINDS: Record<RequestKind, number> = { echo: 1, "json-rpc": 3, relay: 4 };

/** Exit status names (docs/spec/messages.md, `Status`). */
const STATUS = ["ok", "bad-request", "forbidden", "timeout", "too-large", "upstream", "busy", "unsupported", "not-enough-surbs"];

const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function unhex(text: string, what: string): Uint8Array {
  if (!/^([0-9a-fA-F]{2})*$/.test(text)) {
    throw new NoxError("bad-input", `${what}: not hex`);
  }
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

const nowMs = (): number => performance.now();

interface LinkSettings {
  handshakeTimeoutMs: number;
  scheme: "ws" | "wss" | undefined;
  WebSocket: WebSocketLike;
}

interface Waiter {
  resolve(body: Uint8Array): void;
  reject(error: NoxError): void;
}

/** A connected client. `request` sends one anonymous request; `provider()` gives an EIP-1193 provider. */
export class NoxClient implements MixnetRequester {
  readonly #m: ClientCoreModule;
  #topology: number;
  readonly #client: number;
  #nodes: Map<string, TopologyNode>;
  /** The current reply gateway (new SURBs name it). */
  #gateway: Uint8Array;
  /** Every gateway a reply link (with the mailbox) is kept to, hex: the core's `gateways`. */
  #replyGateways: Set<string>;
  readonly #mailbox: Uint8Array;
  readonly #directory: Directory;
  #refresh: ReturnType<typeof setTimeout> | undefined;
  readonly #options: LinkSettings;
  readonly #links = new Map<string, NodeLink>();
  readonly #waiting = new Map<bigint, Waiter>();
  readonly #providers = new Set<NoxProvider>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #reconnect: ReturnType<typeof setTimeout> | undefined;
  #gatewayFailures = 0;
  #closed = false;

  private constructor(
    m: ClientCoreModule,
    topology: number,
    nodes: TopologyNode[],
    client: { handle: number; gateway: Uint8Array; mailbox: Uint8Array },
    options: LinkSettings,
    directory: Directory,
  ) {
    this.#m = m;
    this.#topology = topology;
    this.#nodes = new Map(nodes.map((n) => [n.id, n]));
    this.#client = client.handle;
    this.#gateway = client.gateway;
    this.#replyGateways = new Set([hex(client.gateway)]);
    this.#mailbox = client.mailbox;
    this.#options = options;
    this.#directory = directory;
  }

  /**
   * Fetches and verifies the topology, starts the client core, opens the link
   * to the reply gateway and waits for its handshake. Rejects with a
   * `NoxError` (`topology`, `transport`, `bad-input`).
   */
  static async connect(options: NoxClientOptions): Promise<NoxClient> {
    const WebSocketImpl = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketLike }).WebSocket;
    if (WebSocketImpl === undefined) {
      throw new NoxError("bad-input", "no WebSocket implementation: pass options.WebSocket (e.g. the `ws` package)");
    }
    const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    const authority = unhex(options.authorityKey, "authorityKey");
    if (authority.length !== 32) {
      throw new NoxError("bad-input", "authorityKey: expected 32 bytes (64 hex digits)");
    }
    // Checked before anything is fetched: an unknown profile fails at once.
    const coverRate = options.coverRate ?? 2.75;
    const profile = coverProfileConfig(options.coverProfile, options.mobileBudgetBytesPerDay, coverRate);
    const m = options.module;
    const urls = typeof options.directory === "string" ? [options.directory] : [...options.directory];
    const directory: Directory = { urls, authority, fetch: fetchImpl };
    const topology = await fetchTopology(m, directory);
    const nodes = m.topologyNodes(topology, nowUnix());
    const config = new TextEncoder().encode(
      JSON.stringify({
        cover_rate: coverRate,
        timeout_ms: options.requestTimeoutMs ?? 30_000,
        ...profile,
      }),
    );
    let core;
    try {
      core = m.clientNew(topology, config, nowMs(), nowUnix());
    } catch (error) {
      m.drop(topology);
      throw new NoxError("topology", `the client cannot use this topology: ${String(error)}`, { cause: error });
    }
    const client = new NoxClient(
      m,
      topology,
      nodes,
      core,
      { handshakeTimeoutMs: options.handshakeTimeoutMs ?? 10_000, scheme: options.scheme, WebSocket: WebSocketImpl },
      directory,
    );
    try {
      await client.#link(client.#gateway).ready;
    } catch (error) {
      client.close();
      throw error;
    }
    client.#schedule();
    client.#scheduleRefresh(options.topologyRefreshMs ?? 600_000);
    return client;
  }

  /**
   * Fetches and verifies the directory's document again and gives it to the core. If the
   * reply gateway left the network (or loop cover found it degraded), the core draws a new
   * one: a link to it opens with the same mailbox, and the old gateway's link stays open
   * until the requests whose replies it carries are over (gateway hand-over). Resolves with
   * the new gateway's id (hex), or null if it did not change. Rejects with `topology`.
   */
  async refreshTopology(): Promise<string | null> {
    if (this.#closed) {
      throw new NoxError("closed", "the client is closed");
    }
    const topology = await fetchTopology(this.#m, this.#directory);
    let moved: Uint8Array | null;
    let nodes: TopologyNode[];
    try {
      moved = this.#m.setTopology(this.#client, topology, nowMs(), nowUnix());
      nodes = this.#m.topologyNodes(topology, nowUnix());
    } catch (error) {
      this.#m.drop(topology);
      throw new NoxError("topology", `the client cannot use this topology: ${String(error)}`, { cause: error });
    }
    // Links already open keep their state; new ones are started under the new document.
    this.#m.drop(this.#topology);
    this.#topology = topology;
    this.#nodes = new Map(nodes.map((n) => [n.id, n]));
    this.#reconcileGateways();
    this.#schedule();
    return moved === null ? null : hex(moved);
  }

  /** The reply gateways' links follow the core: open to each listed gateway, closed to the others. */
  #reconcileGateways(): void {
    if (this.#closed) {
      return;
    }
    let listed: Uint8Array[];
    try {
      listed = this.#m.gateways(this.#client);
    } catch {
      return;
    }
    const current = listed[0];
    if (current === undefined) {
      return;
    }
    const before = this.#replyGateways;
    this.#gateway = current;
    this.#replyGateways = new Set(listed.map(hex));
    // A gateway new to the list gets its link now; a listed one whose link died is redialed
    // with backoff by #linkClosed, never here (this runs at every slot).
    for (const gateway of listed.filter((g) => !before.has(hex(g)))) {
      try {
        this.#link(gateway);
      } catch {
        // No WebSocket endpoint in the topology: replies through it are lost and their
        // requests time out, as for any lost packet.
      }
    }
    for (const id of before) {
      if (!this.#replyGateways.has(id)) {
        const link = this.#links.get(id);
        this.#links.delete(id);
        link?.close();
      }
    }
  }

  #scheduleRefresh(everyMs: number): void {
    if (this.#closed || !(everyMs > 0)) {
      return;
    }
    this.#refresh = setTimeout(() => {
      this.refreshTopology().then(
        () => this.#scheduleRefresh(everyMs),
        () => this.#scheduleRefresh(everyMs),
      );
    }, everyMs);
    // In Node, a pending refresh does not keep the process alive.
    (this.#refresh as { unref?: () => void }).unref?.();
  }

  /** The gateways reply links are kept to (hex): the current one first, then former ones still owed replies. */
  get replyGateways(): string[] {
    return [...this.#replyGateways];
  }

  /** The reply gateway's node id, hex. */
  get gateway(): string {
    return hex(this.#gateway);
  }

  /** The core's counters (packets sent, cover, replies, timeouts, ...). */
  stats(): Record<string, number> {
    return this.#m.stats(this.#client);
  }

  /** One anonymous request through the mixnet: resolves with the exit's answer body. */
  request(kind: RequestKind, body: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    if (this.#closed) {
      return Promise.reject(new NoxError("closed", "the client is closed"));
    }
    const code = KINDS[kind];
    if (code === undefined) {
      return Promise.reject(new NoxError("bad-input", `unknown request kind ${String(kind)}`));
    }
    let sent;
    try {
      const exit = options.exit === undefined ? null : unhex(options.exit, "exit");
      sent = this.#m.request(this.#client, code, body, options.expectedReplyLen ?? 16 * 1024, nowMs(), nowUnix(), exit);
    } catch (error) {
      return Promise.reject(new NoxError("bad-input", String(error), { cause: error }));
    }
    const answer = new Promise<Uint8Array>((resolve, reject) => {
      this.#waiting.set(sent.id, { resolve, reject });
    });
    for (const packet of sent.packets) {
      this.#send(packet);
    }
    if (options.timeoutMs !== undefined) {
      const id = sent.id;
      setTimeout(() => {
        this.#finish({ id, error: `no reply within ${options.timeoutMs} ms` });
      }, options.timeoutMs);
    }
    this.#schedule();
    return answer;
  }

  /** The exits of the topology (the last layer's node ids, hex). */
  exits(): string[] {
    const last = Math.max(...[...this.#nodes.values()].map((n) => n.layer));
    return [...this.#nodes.values()].filter((n) => n.layer === last).map((n) => n.id);
  }

  /**
   * Asks an exit's relayer for its price (relay.md §3): to `exit`, or to a
   * random exit. Returns the exit asked, to send the bundle to the same one.
   */
  async relayQuote(exit?: string): Promise<{ exit: string; quote: RelayQuote }> {
    const exits = this.exits();
    const chosen = exit ?? exits[crypto.getRandomValues(new Uint32Array(1))[0]! % exits.length];
    if (chosen === undefined || !exits.includes(chosen)) {
      throw new NoxError("bad-input", `not an exit of the topology: ${String(chosen)}`);
    }
    const body = await this.request("relay", QUOTE_BODY, { exit: chosen, expectedReplyLen: 4096 });
    return { exit: chosen, quote: parseRelayAnswer<RelayQuote>(body) };
  }

  /**
   * Hands a bundle to the relayer of `exit` (the one that quoted): it checks
   * the gas payment's proof, simulates, signs and sends it, and answers with
   * the outcome (relay.md §3), once the transaction is mined (`timeoutMs`:
   * how long to wait, default the client's request timeout). The calldata —
   * with its zero-knowledge gas payment — comes from `PrivateSender`.
   */
  async relaySubmit(exit: string, submission: RelaySubmission, options: { timeoutMs?: number } = {}): Promise<RelayOutcome> {
    if (!this.exits().includes(exit)) {
      throw new NoxError("bad-input", `not an exit of the topology: ${exit}`);
    }
    const request: RequestOptions = { exit, expectedReplyLen: 4096 };
    if (options.timeoutMs !== undefined) request.timeoutMs = options.timeoutMs;
    const body = await this.request("relay", submitBody(submission), request);
    return parseRelayAnswer<RelayOutcome>(body);
  }

  /** An EIP-1193 provider over this client. */
  provider(options: ProviderOptions = {}): NoxProvider {
    const provider = new NoxProvider(this, options);
    this.#providers.add(provider);
    return provider;
  }

  /** Closes every link, fails pending requests with `closed`, frees the module's state. */
  close(): void {
    if (this.#closed) {
      return;
    }
    this.#closed = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#reconnect);
    clearTimeout(this.#refresh);
    for (const link of this.#links.values()) {
      link.close();
    }
    this.#links.clear();
    const closed = new NoxError("closed", "the client was closed");
    for (const waiter of this.#waiting.values()) {
      waiter.reject(closed);
    }
    this.#waiting.clear();
    for (const provider of this.#providers) {
      provider.disconnect(closed);
    }
    this.#m.drop(this.#client);
    this.#m.drop(this.#topology);
  }

  /** The link to `node`, opened if needed (with the mailbox on a reply gateway's). */
  #link(node: Uint8Array): NodeLink {
    const id = hex(node);
    const existing = this.#links.get(id);
    if (existing !== undefined && !existing.closed) {
      return existing;
    }
    const info = this.#nodes.get(id);
    if (info?.websocket === undefined) {
      throw new NoxError("transport", `node ${id.slice(0, 8)} has no WebSocket endpoint in the topology`);
    }
    const mailbox = this.#replyGateways.has(id) ? this.#mailbox : null;
    const { link, first } = this.#m.linkStart(this.#topology, node, mailbox);
    const url = endpointUrl(id, info, this.#options.scheme);
    const created = new NodeLink(
      url,
      first,
      link,
      {
        onRecord: (record) => this.#downstream(node, record),
        onClose: (reason) => this.#linkClosed(id, reason),
      },
      this.#options.WebSocket,
      this.#options.handshakeTimeoutMs,
    );
    this.#links.set(id, created);
    return created;
  }

  #send(outgoing: Outgoing): void {
    try {
      this.#link(outgoing.entry).send(outgoing.packet);
    } catch {
      // No link to this entry: the packet is lost, and its request times out
      // like any lost packet (the core's timeout is the single recovery path).
    }
  }

  #downstream(from: Uint8Array, record: Uint8Array): void {
    if (this.#closed) {
      return;
    }
    try {
      const done = this.#m.onDownstream(this.#client, from, record, nowMs(), nowUnix());
      if (done !== null) {
        this.#finish(done);
        // Its SURBs are spent: a former gateway owed nothing more leaves the list.
        this.#reconcileGateways();
      }
    } catch {
      // A record the core refuses (malformed, unknown SURB) is dropped; the core counts it.
    }
    this.#schedule();
  }

  #linkClosed(id: string, reason: NoxError): void {
    if (this.#links.get(id)?.closed === true) {
      this.#links.delete(id);
    }
    if (this.#closed || id !== hex(this.#gateway)) {
      return;
    }
    // Without the gateway link the replies of the requests in flight are lost
    // (the gateway holds no mailbox for an absent client): fail them now, with
    // the reason, rather than at their timeouts. Then reconnect with
    // exponential backoff (0.5 s doubling to 30 s; reset once a link is up), so
    // a dead gateway is not redialed in a tight loop.
    for (const waiter of this.#waiting.values()) {
      waiter.reject(reason);
    }
    this.#waiting.clear();
    const delay = Math.min(30_000, 500 * 2 ** Math.min(this.#gatewayFailures, 6));
    this.#gatewayFailures += 1;
    clearTimeout(this.#reconnect);
    this.#reconnect = setTimeout(() => {
      if (this.#closed) {
        return;
      }
      try {
        this.#link(this.#gateway).ready.then(
          () => {
            this.#gatewayFailures = 0;
          },
          () => {},
        );
      } catch {
        // No endpoint for the gateway in the topology: nothing to redial.
      }
    }, delay);
  }

  #finish(done: Completed): void {
    const waiter = this.#waiting.get(done.id);
    if (waiter === undefined) {
      return;
    }
    this.#waiting.delete(done.id);
    if (done.response === undefined) {
      const message = done.error ?? "request failed";
      waiter.reject(new NoxError(/timed? ?out|no reply/i.test(message) ? "timeout" : "transport", message));
      return;
    }
    const status = done.response.status;
    if (status === 0) {
      waiter.resolve(done.response.body);
      return;
    }
    const text = new TextDecoder().decode(done.response.body);
    waiter.reject(new NoxRefusedError(STATUS[status] ?? `status-${status}`, text));
  }

  /** Runs what is due (cover slots, timeouts) and sets the timer for the next deadline. */
  #schedule(): void {
    if (this.#closed) {
      return;
    }
    clearTimeout(this.#timer);
    const now = nowMs();
    const unix = nowUnix();
    for (let packet = this.#m.pollTransmit(this.#client, now, unix); packet !== null; ) {
      this.#send(packet);
      packet = this.#m.pollTransmit(this.#client, now, unix);
    }
    for (const done of this.#m.pollTimeouts(this.#client, now, unix)) {
      this.#finish(done);
    }
    // Timeouts end requests, and loop cover may have found the gateway degraded.
    this.#reconcileGateways();
    const deadline = this.#m.nextDeadline(this.#client);
    if (deadline !== null) {
      this.#timer = setTimeout(() => this.#schedule(), Math.max(0, deadline - nowMs()));
    }
  }
}
