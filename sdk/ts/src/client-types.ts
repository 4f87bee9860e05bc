// The client's public types: a topology node, the core's answers, the interface of the
// WebAssembly client core the host drives, and the options of `NoxClient.connect`.
// Moved out of client.ts (issue 34); client.ts re-exports them.

import type { CoverProfileName } from "./cover-profile.js";
import type { LinkMachine, WebSocketLike } from "./link.js";

/** A node of a verified topology, as the module describes it. */
export interface TopologyNode {
  /** Node id, hex. */
  id: string;
  layer: number;
  /** Link public key, hex. */
  linkKey: string;
  /** WebSocket client endpoint (`host:port`), when the node accepts browser clients. */
  websocket?: string;
  /**
   * The endpoint serves TLS (`wss://`): the node's signed descriptor says so (tag 0x53,
   * docs/spec/topology.md). Absent or false: plain `ws://`.
   */
  websocketTls?: boolean;
}

/** A request the core finished: an answer from the exit, or a failure. */
export interface Completed {
  id: bigint;
  response?: { status: number; body: Uint8Array };
  error?: string;
}

/** One packet for an entry node. */
export interface Outgoing {
  entry: Uint8Array;
  packet: Uint8Array;
}

/** What the client needs of the WebAssembly module (`wasm.ts` implements it over crates/nox-wasm). */
export interface ClientCoreModule {
  verifyTopology(json: Uint8Array, authority: Uint8Array, nowUnix: number): number;
  topologyNodes(topology: number, nowUnix: number): TopologyNode[];
  clientNew(
    topology: number,
    config: Uint8Array,
    nowMs: number,
    nowUnix: number,
  ): { handle: number; gateway: Uint8Array; mailbox: Uint8Array };
  request(
    client: number,
    kind: number,
    body: Uint8Array,
    expectedReplyLen: number,
    nowMs: number,
    nowUnix: number,
    exit: Uint8Array | null,
  ): { id: bigint; packets: Outgoing[] };
  pollTransmit(client: number, nowMs: number, nowUnix: number): Outgoing | null;
  onDownstream(client: number, from: Uint8Array, record: Uint8Array, nowMs: number, nowUnix: number): Completed | null;
  pollTimeouts(client: number, nowMs: number, nowUnix: number): Completed[];
  /** Monotonic ms at which to call again at the latest, or null. */
  nextDeadline(client: number): number | null;
  stats(client: number): Record<string, number>;
  /** A newer verified topology for the core: the new reply gateway if it moved, else null. */
  setTopology(client: number, topology: number, nowMs: number, nowUnix: number): Uint8Array | null;
  /** The gateways to keep a reply link to: the current one first, then former ones replies in flight name. */
  gateways(client: number): Uint8Array[];
  linkStart(topology: number, node: Uint8Array, mailbox: Uint8Array | null): { link: LinkMachine; first: Uint8Array };
  drop(handle: number): void;
}

/** Settings of `NoxClient.connect`. */
export interface NoxClientOptions {
  /** The directory's `GET /topology` URL(s); tried in order until one verifies. */
  directory: string | readonly string[];
  /** The directory authority's Ed25519 public key, 64 hex digits. */
  authorityKey: string;
  /** The loaded module. */
  module: ClientCoreModule;
  /**
   * Loopix λ_P, packets per second (default 2.75, the native daemon's): real
   * packets wait for a slot and empty slots carry cover, so an observer of
   * the link sees the same stream whether the client is busy or idle. It
   * costs one 4 KiB packet (4,112 B link record) per slot upstream: 11 KiB/s
   * ≈ 0.98 GB/day at the default, and a request of n packets waits about n/λ_P s for its slots.
   * 0 turns cover off (requests go out at once; the link then shows when the
   * client is active).
   */
  coverRate?: number;
  /**
   * Which free cover slots carry a cover packet (as `nox client --profile`; the Rust core
   * decides at every slot). Real packets take the same λ_P slots under every profile.
   * - `always-on` (default): all of them — idle and busy look the same; ≈ 0.98 GB/day at the
   *   defaults; reveals only that the client runs.
   * - `wallet`: only during a session, which starts with a request and lasts until
   *   max(last request + 30 s, start + 120 s); nothing while the app is idle or closed.
   *   Reveals when a session happens and roughly how long.
   * - `mobile`: cover thinned so the day's bytes stay within `mobileBudgetBytesPerDay`
   *   (default 125 MB). Reveals the budget class, and activity by volume.
   * Unknown names are refused with an `UnknownCoverProfileError` (code `bad-input`) listing
   * the valid ones. Measured costs: README.md of this package.
   */
  coverProfile?: CoverProfileName;
  /** The `mobile` profile's budget, bytes of packets a day (default 125 000 000). */
  mobileBudgetBytesPerDay?: number;
  /** Fail a request with no complete reply after this long (default 30 000 ms). */
  requestTimeoutMs?: number;
  /** Give up a link whose handshake has not completed after this long (default 10 000 ms). */
  handshakeTimeoutMs?: number;
  /** WebSocket implementation (default: the global one; in Node 20 pass `ws`). */
  WebSocket?: WebSocketLike;
  /** fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Force one scheme for every node. By default each node is dialed as its signed descriptor
   * says: `wss://` when it serves TLS, `ws://` otherwise. A page served over `https:` never
   * dials `ws://` (browsers block it as mixed content): such nodes fail with a `transport`
   * error naming the node instead.
   */
  scheme?: "ws" | "wss";
  /**
   * Fetch the directory's document again this often (default 600 000 ms; 0: never, call
   * `refreshTopology` yourself). Packets are built for the current key epoch, and a gateway
   * that left the network is replaced only when a newer document says so.
   */
  topologyRefreshMs?: number;
}
