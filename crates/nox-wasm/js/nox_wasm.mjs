// JavaScript glue for the nox-wasm module (crates/nox-wasm/README.md, "The ABI").
// Plain ES module, no dependencies: runs in Node >= 20 and in browsers.
//
// The host injects randomness (32 bytes from crypto.getRandomValues, passed to
// nox_seed) and time (unix seconds as arguments): the module has no clock and
// no entropy source of its own.

/** Status codes returned by the exports (0 is success). */
export const Status = Object.freeze({
  OK: 0,
  BAD_ARGUMENT: 1,
  NOT_SEEDED: 2,
  UNKNOWN_HANDLE: 3,
  WRONG_HANDLE: 4,
  SPHINX: 5,
  TOPOLOGY: 6,
  PATH: 7,
  CLIENT: 8,
  LINK: 9,
  WALLET: 10,
  ZK: 11,
  WRONG_PASSPHRASE: 12,
  BAD_KEY_FILE: 13,
  BUSY: 100,
});

const STATUS_NAMES = Object.fromEntries(Object.entries(Status).map(([k, v]) => [v, k]));

/** An export refused its input: `code` is one of `Status`, `message` the module's text. */
export class NoxWasmError extends Error {
  constructor(code, message) {
    super(`${STATUS_NAMES[code] ?? `status ${code}`}: ${message}`);
    this.name = 'NoxWasmError';
    this.code = code;
    this.status = STATUS_NAMES[code] ?? 'UNKNOWN';
  }
}

const ABI_VERSION = 1;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

function u32le(bytes, at = 0) {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

function unixSeconds(now) {
  return BigInt(Math.floor(now ?? Date.now() / 1000));
}

function u64le(bytes, at = 0) {
  return BigInt(u32le(bytes, at)) | (BigInt(u32le(bytes, at + 4)) << 32n);
}

function millis(nowMs) {
  return BigInt(Math.floor(nowMs ?? globalThis.performance.now()));
}

/** A completed request: { id, response: { status, body } } or { id, error }. */
function completedResult(bytes) {
  const id = u64le(bytes);
  if (bytes[8] === 0) return { id, response: { status: bytes[9], body: bytes.slice(10) } };
  return { id, error: decoder.decode(bytes.slice(9)) };
}

function surbResult(out) {
  return { handle: u32le(out), surbId: out.slice(4, 20), surb: out.slice(20), firstHop: out.slice(20, 52) };
}

export class NoxWasm {
  /**
   * Instantiates the module from its bytes (or a compiled WebAssembly.Module) and seeds it.
   * `randomBytes(n)` must return n bytes from a CSPRNG; by default crypto.getRandomValues.
   */
  static async instantiate(source, { randomBytes } = {}) {
    const { instance } = source instanceof WebAssembly.Module
      ? { instance: await WebAssembly.instantiate(source, {}) }
      : await WebAssembly.instantiate(source, {});
    const module = new NoxWasm(instance);
    module.seed((randomBytes ?? ((n) => globalThis.crypto.getRandomValues(new Uint8Array(n))))(32));
    return module;
  }

  constructor(instance) {
    this.exports = instance.exports;
    const version = this.exports.nox_abi_version();
    if (version !== ABI_VERSION) throw new Error(`nox-wasm ABI ${version}, glue expects ${ABI_VERSION}`);
  }

  #arg(slot, bytes) {
    const data = typeof bytes === 'string' ? encoder.encode(bytes) : (bytes ?? new Uint8Array(0));
    const ptr = this.exports.nox_arg(slot, data.length);
    if (ptr === 0 && data.length > 0) throw new NoxWasmError(Status.BAD_ARGUMENT, `argument ${slot} too large`);
    // Views are made after the call: nox_arg may grow (and so detach) the memory.
    new Uint8Array(this.exports.memory.buffer, ptr, data.length).set(data);
  }

  /** Calls `name` with scalar `params` after writing `args` into the slots; returns the output bytes. */
  call(name, params, args = []) {
    args.forEach((bytes, slot) => this.#arg(slot, bytes));
    const status = this.exports[name](...params);
    const out = new Uint8Array(this.exports.memory.buffer, this.exports.nox_out_ptr(), this.exports.nox_out_len()).slice();
    if (status !== Status.OK) throw new NoxWasmError(status, decoder.decode(out));
    return out;
  }

  /** The shielded payment address (`nox1…`) of a 32-byte wallet seed, as `nox wallet` derives it. */
  walletAddress(seed) {
    return decoder.decode(this.call('nox_wallet_address', [], [seed]));
  }

  /**
   * Opens a published note ciphertext with the seed's viewing key (asset and commitment: 32-byte
   * words). Returns { result: 'mine', value, blinding } | { result: 'not_mine' } | { result: 'corrupt' }.
   */
  walletOpenNote(seed, ciphertext, asset, commitment) {
    return JSON.parse(decoder.decode(this.call('nox_wallet_open_note', [], [seed, ciphertext, asset, commitment])));
  }

  /** Balances of a pool view (the wallet state's JSON): { root, next_leaf, assets: [...] }. */
  walletBalances(viewJson) {
    return JSON.parse(decoder.decode(this.call('nox_wallet_balances', [], [viewJson])));
  }

  /**
   * Prepares a private transaction (note selection, change, ciphertexts, context, witness) over a
   * pool view. `request`: an object or its JSON (crates/nox-wasm/README.md). The witness stays in
   * the module: returns { handle, description } for `proveTransfer`.
   */
  walletPrepare(seed, viewJson, request) {
    const json = typeof request === 'string' ? request : JSON.stringify(request);
    const out = this.call('nox_wallet_prepare', [], [seed, viewJson ?? '', json]);
    return { handle: u32le(out), description: JSON.parse(decoder.decode(out.slice(4))) };
  }

  /**
   * Decodes and checks a transfer proving key; returns its handle. `uncompressed`: the bytes are
   * `provingKeyBytes`' form (a cache's copy, fast to load), else arkworks compressed (published).
   */
  loadProvingKey(bytes, { uncompressed = false } = {}) {
    return u32le(this.call('nox_prover_load', [uncompressed ? 1 : 0], [bytes]));
  }

  /** The loaded key behind `key`, uncompressed: what a cache keeps (`loadProvingKey(b, { uncompressed: true })`). */
  provingKeyBytes(key) {
    return this.call('nox_prover_key_bytes', [key >>> 0]);
  }

  /**
   * Proves the prepared transaction `prepared` (consumed) with the key `key`: { proof (256 bytes,
   * the pool's uint256[8]), publicInputs: 8 × 32-byte words, bytes (both, as the module returned them) }.
   */
  proveTransfer(key, prepared) {
    const out = this.call('nox_transfer_prove', [key >>> 0, prepared >>> 0]);
    const publicInputs = [];
    for (let i = 0; i < 8; i++) publicInputs.push(out.slice(256 + 32 * i, 288 + 32 * i));
    return { proof: out.slice(0, 256), publicInputs, bytes: out };
  }

  /**
   * The split prover (issue 31), phase 1: consumes the prepared transaction `prepared` and returns
   * the prepared assignment (bytes, secret: the witness) that every MSM part takes.
   */
  splitPrepare(prepared) {
    return this.call('nox_split_prepare', [prepared >>> 0]);
  }

  /** Phase 2: MSM part `k` of `n` (k < n <= 64) of the prepared assignment with key `key` (396 bytes). */
  splitPart(key, prepared, k, n) {
    return this.call('nox_split_part', [key >>> 0, k >>> 0, n >>> 0], [prepared]);
  }

  /** Phase 3: every part (an array, any order) added and blinded; the result as `proveTransfer`'s. */
  splitFinish(key, prepared, parts) {
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    const out = this.call('nox_split_finish', [key >>> 0], [prepared, all]);
    const publicInputs = [];
    for (let i = 0; i < 8; i++) publicInputs.push(out.slice(256 + 32 * i, 288 + 32 * i));
    return { proof: out.slice(0, 256), publicInputs, bytes: out };
  }

  /**
   * The raw execution hash (32 bytes) a payment for `action` binds:
   * keccak256(target ‖ data ‖ fee ‖ gas), `action` = { target, data (hex), gas, fee (decimal) }.
   */
  payExecutionHash(action) {
    return this.call('nox_pay_execution_hash', [], [JSON.stringify(action)]);
  }

  /**
   * The bytes whose L1 data fee is this client's own figure of a paid bundle's through `pool`
   * with `actionLen` bytes of action calldata (the relayer's reference shape + a signed envelope).
   */
  payDataFeeSample(pool, actionLen) {
    return this.call('nox_pay_data_fee_sample', [], [JSON.stringify({ pool, action_len: actionLen })]);
  }

  /**
   * `BatchExecutor.execute(Bundle)` calldata for a proved transaction: its `description`
   * (walletPrepare's, object or JSON), its 256-byte `proof`, and `action` = { pool, target, data, gas }.
   */
  payBundle(description, proof, action) {
    const d = typeof description === 'string' ? description : JSON.stringify(description);
    return this.call('nox_pay_bundle', [], [d, proof, JSON.stringify(action)]);
  }

  /**
   * Applies the pool's `eth_getLogs` entries (in chain order) to a wallet view (JSON, empty: a new
   * view) with the seed's keys, up to `lastBlock`; returns the new view's JSON (a string).
   */
  walletSync(seed, viewJson, logs, pool, lastBlock) {
    const out = this.call('nox_wallet_sync', [BigInt(lastBlock)], [seed, viewJson ?? '', JSON.stringify(logs), pool]);
    return decoder.decode(out);
  }

  /** The seed sealed under `passphrase` as `nox wallet`'s `wallet.key` (`nox wallet restore --from` opens it). */
  walletSealKey(seed, passphrase) {
    return this.call('nox_wallet_seal_key', [], [seed, passphrase]);
  }

  /**
   * Opens a `wallet.key` (`nox wallet new`'s, or walletSealKey's) with `passphrase`: the 32-byte
   * seed (the caller zeroes it when done). Throws status WRONG_PASSPHRASE (also for an altered
   * byte) or BAD_KEY_FILE.
   */
  walletOpenKey(sealed, passphrase) {
    return this.call('nox_wallet_open_key', [], [sealed, passphrase]);
  }

  /** A pool view's JSON sealed under the seed's state key (`nox wallet`'s `state` file format). */
  walletSealState(seed, viewJson) {
    return this.call('nox_wallet_seal_state', [], [seed, viewJson]);
  }

  /** Opens a sealed state with the seed: the view's JSON (a string). Throws WRONG_PASSPHRASE or BAD_KEY_FILE. */
  walletOpenState(seed, sealed) {
    return decoder.decode(this.call('nox_wallet_open_state', [], [seed, sealed]));
  }

  /** Re-seeds the module's ChaCha20 RNG with 32 host-drawn bytes. */
  seed(bytes) {
    this.call('nox_seed', [], [bytes]);
  }

  /** Forward packet along raw hops (n × (node id 32 ‖ ristretto255 key 32)). */
  buildForward(hops, payload, keyEpoch) {
    return this.call('nox_build_forward', [keyEpoch >>> 0], [hops, payload]);
  }

  /** SURB along raw hops for `recipient` (32 bytes): { handle, surbId, surb, firstHop }. */
  buildSurb(hops, recipient, keyEpoch) {
    return surbResult(this.call('nox_build_surb', [keyEpoch >>> 0], [hops, recipient]));
  }

  /** Opens a reply body delivered with `surbId` using the recovery keys behind `handle`. */
  openReply(handle, surbId, body) {
    return this.call('nox_surb_open', [handle >>> 0], [surbId, body]);
  }

  /** Verifies the directory's signed JSON under the authority's Ed25519 key; returns a handle. */
  verifyTopology(json, authority, nowUnix) {
    return u32le(this.call('nox_topology_verify', [unixSeconds(nowUnix)], [json, authority]));
  }

  /** Fingerprint, geometry, client epoch and nodes of a verified topology. */
  topologyInfo(handle, nowUnix) {
    return JSON.parse(decoder.decode(this.call('nox_topology_info', [handle >>> 0, unixSeconds(nowUnix)])));
  }

  /** Forward packet through a topology (random path unless `path` gives L node ids): { firstHop, packet }. */
  topologyForward(handle, payload, nowUnix, path) {
    const out = this.call('nox_topology_forward', [handle >>> 0, unixSeconds(nowUnix)], [payload, path]);
    return { firstHop: out.slice(0, 32), packet: out.slice(32) };
  }

  /** SURB through a topology for `recipient`: { handle, surbId, surb, firstHop }. */
  topologySurb(handle, recipient, nowUnix, path) {
    return surbResult(this.call('nox_topology_surb', [handle >>> 0, unixSeconds(nowUnix)], [recipient, path]));
  }

  /**
   * A client core over a verified topology (a copy: the topology handle stays usable).
   * `config`: { cover_rate, timeout_ms, loss, target, max_pending, queue_capacity,
   * loop_fraction, parity_percent, profile ('always-on' | 'wallet' | 'mobile'),
   * mobile_budget_bytes_per_day } (all optional). Time: `nowMs` monotonic milliseconds
   * (performance.now() by default), `nowUnix` seconds (Date.now() / 1000 by default).
   * Returns { handle, gateway, mailbox }.
   */
  clientNew(topology, config = {}, nowMs, nowUnix) {
    const out = this.call('nox_client_new', [topology >>> 0, millis(nowMs), unixSeconds(nowUnix)],
      [JSON.stringify(config)]);
    return { handle: u32le(out), gateway: out.slice(4, 36), mailbox: out.slice(36, 68) };
  }

  /**
   * Sends a request: `kind` 1 echo, 2 HTTP (an encoded HttpRequestMsg), 3 JSON-RPC, 4 relay;
   * to the exit `exit` (32-byte node id) if given, else to a random exit.
   * Returns { id, packets: [{ entry, packet }] } (no packets with cover traffic on: they leave
   * through clientPollTransmit). `raw` is the output as the ABI returns it.
   */
  clientRequest(client, kind, body, expectedReplyLen, nowMs, nowUnix, exit) {
    const out = this.call('nox_client_request',
      [client >>> 0, kind >>> 0, expectedReplyLen >>> 0, millis(nowMs), unixSeconds(nowUnix)], [body, exit]);
    const packets = [];
    let at = 12;
    for (let i = 0; i < u32le(out, 8); i++) {
      const len = u32le(out, at + 32);
      packets.push({ entry: out.slice(at, at + 32), packet: out.slice(at + 36, at + 36 + len) });
      at += 36 + len;
    }
    return { id: u64le(out), packets, raw: out };
  }

  /** The packet of the next due Poisson slot: { entry, packet } or null. */
  clientPollTransmit(client, nowMs, nowUnix) {
    const out = this.call('nox_client_poll_transmit', [client >>> 0, millis(nowMs), unixSeconds(nowUnix)]);
    return out.length === 0 ? null : { entry: out.slice(0, 32), packet: out.slice(32) };
  }

  /** One downstream record from the gateway link (`from`: sender id or null); a completed request or null. */
  clientOnDownstream(client, from, record, nowMs, nowUnix) {
    const out = this.call('nox_client_on_downstream', [client >>> 0, millis(nowMs), unixSeconds(nowUnix)],
      [from ?? new Uint8Array(0), record]);
    return out.length === 0 ? null : completedResult(out);
  }

  /** Requests timed out by now: [{ id, error }]. */
  clientPollTimeouts(client, nowMs, nowUnix) {
    const out = this.call('nox_client_poll_timeouts', [client >>> 0, millis(nowMs), unixSeconds(nowUnix)]);
    const done = [];
    let at = 4;
    for (let i = 0; i < u32le(out); i++) {
      const len = u32le(out, at);
      done.push(completedResult(out.slice(at + 4, at + 4 + len)));
      at += 4 + len;
    }
    return done;
  }

  /**
   * Gives the client a newly verified topology (fetch one every epoch: the old one's keys run out).
   * Returns the new reply gateway's id if the gateway changed (it left the network or is
   * degraded), else null. After it, and after clientPollTimeouts (loop health can move the
   * gateway), reconcile the links with clientGateways.
   */
  clientSetTopology(client, topology, nowMs, nowUnix) {
    const out = this.call('nox_client_set_topology', [client >>> 0, topology >>> 0, millis(nowMs), unixSeconds(nowUnix)]);
    return out.length === 0 ? null : out;
  }

  /**
   * The gateways to keep a reply link to (each naming the client's mailbox): the current one
   * first, then former gateways that replies in flight still name. Close links to the others.
   */
  clientGateways(client) {
    const out = this.call('nox_client_gateways', [client >>> 0]);
    return Array.from({ length: u32le(out) }, (_, i) => out.slice(4 + 32 * i, 36 + 32 * i));
  }

  /** When to call again at the latest (monotonic ms as a Number), or null. */
  clientNextDeadline(client) {
    const out = this.call('nox_client_next_deadline', [client >>> 0]);
    return out.length === 0 ? null : Number(u64le(out));
  }

  /** The core's counters. */
  clientStats(client) {
    return JSON.parse(decoder.decode(this.call('nox_client_stats', [client >>> 0])));
  }

  /**
   * Starts a client link to `node` (32-byte id) of a verified topology; `mailbox` (32 bytes) on
   * the link to the client's reply gateway, null elsewhere. Returns { handle, first }: send
   * `first`, then feed what arrives to linkFeed.
   */
  linkStart(topology, node, mailbox) {
    const out = this.call('nox_link_start', [topology >>> 0], [node, mailbox ?? new Uint8Array(0)]);
    return { handle: u32le(out), first: out.slice(4) };
  }

  /** Bytes received on a link: { established, send, records } (`send` goes out now). */
  linkFeed(handle, bytes) {
    const out = this.call('nox_link_feed', [handle >>> 0], [bytes]);
    const sendLen = u32le(out, 1);
    const send = out.slice(5, 5 + sendLen);
    let at = 5 + sendLen;
    const records = [];
    for (let i = 0, n = u32le(out, at); i < n; i++) {
      const len = u32le(out, at + 4);
      records.push(out.slice(at + 8, at + 8 + len));
      at += 4 + len;
    }
    return { established: (out[0] & 1) === 1, send, records };
  }

  /** Seals one packet for an established link: the record to send. */
  linkSeal(handle, packet) {
    return this.call('nox_link_seal', [handle >>> 0], [packet]);
  }

  /** Frees a topology, SURB recovery, client or link handle. */
  drop(handle) {
    this.call('nox_drop', [handle >>> 0]);
  }
}
