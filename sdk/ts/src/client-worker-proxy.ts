// The main thread's side of a NoxClient that runs in a dedicated Web Worker (issue 31): the
// client core, its WebSockets and its cover schedule live in the Worker (`client-worker.js`),
// and the page holds this proxy, which has the calls the provider and a dapp need and carries
// them as messages. A Worker's timers are not throttled like a hidden tab's main thread (see
// docs/benchmarks/browser.md, "Cover traffic in a hidden tab"), so the Poisson schedule keeps
// its shape when the page goes to the background.

import { NoxError, NoxRefusedError, type NoxErrorCode } from "./errors.js";
import { type MixnetRequester, NoxProvider, type ProviderOptions, type RequestKind, type RequestOptions } from "./provider.js";
import type { RelayOutcome, RelayQuote, RelaySubmission } from "./relay.js";
import type { NoxClientOptions } from "./client.js";

/** What a Worker handle needs: the browser's `Worker` or Node's `worker_threads.Worker`. */
export interface ClientWorkerLike {
  postMessage(message: unknown): void;
  terminate(): unknown;
  addEventListener?(type: "message" | "error", listener: (event: { data?: unknown; message?: string }) => void): void;
  on?(type: "message" | "error", listener: (data: unknown) => void): unknown;
}

/**
 * Settings of `WorkerNoxClient.connect`: those of `NoxClient.connect` that can cross to a
 * Worker (no functions, no module object), plus where the Worker gets the module from.
 */
export interface WorkerClientOptions
  extends Omit<NoxClientOptions, "module" | "WebSocket" | "fetch"> {
  /**
   * The module for the Worker: its URL (fetched in the Worker), its bytes (copied), or a
   * compiled `WebAssembly.Module` (shared, not copied). Default: the `nox_wasm.wasm` beside
   * `client-worker.js` in the package.
   */
  wasm?: string | ArrayBuffer | Uint8Array | WebAssembly.Module;
  /**
   * Outside browsers (a Node `worker_threads` Worker without a global WebSocket): a module
   * specifier the Worker imports its WebSocket class from, e.g. `"ws"`.
   */
  webSocketModule?: string;
  /** The Worker to run in (default: a new module Worker on `client-worker.js`). */
  worker?: ClientWorkerLike;
}

/** A call to the Worker. Every message carries a numeric `id` its answer repeats. */
export type ClientWorkerRequest =
  | { id: number; op: "connect"; options: Omit<WorkerClientOptions, "worker"> }
  | { id: number; op: "request"; kind: RequestKind; body: Uint8Array; options: RequestOptions }
  | { id: number; op: "stats" }
  | { id: number; op: "refresh" }
  | { id: number; op: "exits" }
  | { id: number; op: "relayQuote"; exit?: string }
  | { id: number; op: "relaySubmit"; exit: string; submission: RelaySubmission; timeoutMs?: number }
  | { id: number; op: "close" };

/** A failure as it crosses the boundary: the SDK's code kept (and the exit's status). */
export interface WireError {
  code: NoxErrorCode;
  message: string;
  status?: string;
}

/** A call before its id is given. */
type Unnumbered<R> = R extends unknown ? Omit<R, "id"> : never;

/** The Worker's answer to one call. */
export type ClientWorkerReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: WireError };

/**
 * The Worker's first message: its listener is installed. A browser delivers a module Worker's
 * messages as soon as its top-level code starts, and drops those that arrive before a listener
 * exists (a wrapper module awaiting `import("client-worker.js")`, or the Worker's own top-level
 * `await`), so the proxy posts nothing before this.
 */
export const READY = { op: "ready" } as const;

/** A failure rebuilt on this side: the same class and `code` the Worker's client threw. */
export function fromWire(error: WireError): NoxError {
  if (error.code === "refused" && error.status !== undefined) {
    const refused = new NoxRefusedError(error.status, "");
    refused.message = error.message;
    return refused;
  }
  return new NoxError(error.code, error.message);
}

/** A failure as it goes to the page: a `NoxError` keeps its code, anything else is `transport`. */
export function toWire(error: unknown): WireError {
  if (error instanceof NoxRefusedError) {
    return { code: error.code, message: error.message, status: error.status };
  }
  if (error instanceof NoxError) {
    return { code: error.code, message: error.message };
  }
  return { code: "transport", message: error instanceof Error ? error.message : String(error) };
}

async function defaultWorker(): Promise<ClientWorkerLike> {
  if (typeof Worker !== "undefined" && typeof window !== "undefined") {
    // One expression, as written: bundlers (Vite, webpack 5) recognise `new Worker(new URL("…",
    // import.meta.url), …)` and bundle the Worker with its imports. A URL built apart is copied as
    // a bare asset whose own imports then 404 in the built app: the Worker never starts.
    return new Worker(new URL("./client-worker.js", import.meta.url), { type: "module" }) as unknown as ClientWorkerLike;
  }
  const threads = await import("node:worker_threads");
  return new threads.Worker(new URL("./client-worker.js", import.meta.url)) as unknown as ClientWorkerLike;
}

interface Call {
  resolve(value: unknown): void;
  reject(error: NoxError): void;
}

/**
 * A `NoxClient` running in a Worker, seen from the page: `request`, `stats`, `exits`,
 * `relayQuote`, `relaySubmit`, `refreshTopology`, `provider()` and `close()` as on `NoxClient`
 * (answers arrive as promises; failures are `NoxError`s with the same codes). `NoxProvider`
 * works over it unchanged.
 */
export class WorkerNoxClient implements MixnetRequester {
  readonly #worker: ClientWorkerLike;
  readonly #calls = new Map<number, Call>();
  readonly #providers = new Set<NoxProvider>();
  #next = 1;
  #gateway = "";
  #closed = false;
  /** Calls posted before the Worker said READY, in order; `undefined` once it has. */
  #queued: ClientWorkerRequest[] | undefined = [];

  private constructor(worker: ClientWorkerLike) {
    this.#worker = worker;
    const onMessage = (data: unknown) => this.#receive(data);
    const onError = (message: string) => this.#fail(new NoxError("transport", `the client Worker failed: ${message}`));
    if (typeof worker.on === "function") {
      worker.on("message", onMessage);
      worker.on("error", (e) => onError(e instanceof Error ? e.message : String(e)));
    } else if (typeof worker.addEventListener === "function") {
      worker.addEventListener("message", (e) => onMessage(e.data));
      worker.addEventListener("error", (e) => onError(e.message ?? "error event"));
    } else {
      throw new NoxError("bad-input", "the worker has neither on() nor addEventListener()");
    }
  }

  /**
   * Starts the Worker and connects its client (topology fetched and verified, gateway link
   * up) as `NoxClient.connect` does; rejects with the same `NoxError` codes. The Worker is
   * terminated if the connection fails.
   */
  static async connect(options: WorkerClientOptions): Promise<WorkerNoxClient> {
    const { worker, ...rest } = options;
    const client = new WorkerNoxClient(worker ?? (await defaultWorker()));
    try {
      const result = (await client.#call({ op: "connect", options: rest })) as { gateway: string };
      client.#gateway = result.gateway;
    } catch (error) {
      client.#closed = true;
      client.#worker.terminate();
      throw error;
    }
    return client;
  }

  /** The reply gateway's node id, hex, as of the connection. */
  get gateway(): string {
    return this.#gateway;
  }

  /** One anonymous request through the mixnet: resolves with the exit's answer body. */
  request(kind: RequestKind, body: Uint8Array, options: RequestOptions = {}): Promise<Uint8Array> {
    return this.#call({ op: "request", kind, body, options }) as Promise<Uint8Array>;
  }

  /** The core's counters (packets sent, cover, replies, timeouts, ...). */
  stats(): Promise<Record<string, number>> {
    return this.#call({ op: "stats" }) as Promise<Record<string, number>>;
  }

  /** The exits of the topology (node ids, hex). */
  exits(): Promise<string[]> {
    return this.#call({ op: "exits" }) as Promise<string[]>;
  }

  /** `NoxClient.refreshTopology` in the Worker: the new gateway's id, or null. */
  async refreshTopology(): Promise<string | null> {
    const moved = (await this.#call({ op: "refresh" })) as string | null;
    if (moved !== null) this.#gateway = moved;
    return moved;
  }

  /** `NoxClient.relayQuote` in the Worker. */
  relayQuote(exit?: string): Promise<{ exit: string; quote: RelayQuote }> {
    return this.#call(exit === undefined ? { op: "relayQuote" } : { op: "relayQuote", exit }) as Promise<{
      exit: string;
      quote: RelayQuote;
    }>;
  }

  /** `NoxClient.relaySubmit` in the Worker. */
  relaySubmit(exit: string, submission: RelaySubmission, options: { timeoutMs?: number } = {}): Promise<RelayOutcome> {
    const message: Unnumbered<Extract<ClientWorkerRequest, { op: "relaySubmit" }>> = { op: "relaySubmit", exit, submission };
    if (options.timeoutMs !== undefined) message.timeoutMs = options.timeoutMs;
    return this.#call(message) as Promise<RelayOutcome>;
  }

  /** An EIP-1193 provider over this client (the same `NoxProvider` as the main-thread client's). */
  provider(options: ProviderOptions = {}): NoxProvider {
    const provider = new NoxProvider(this, options);
    this.#providers.add(provider);
    return provider;
  }

  /** Closes the Worker's client (its links, its pending requests fail with `closed`) and the Worker. */
  close(): void {
    if (this.#closed) return;
    // The close message goes first, so the Worker's sockets close cleanly before it ends.
    this.#post({ id: 0, op: "close" });
    this.#fail(new NoxError("closed", "the client was closed"));
    setTimeout(() => this.#worker.terminate(), 100);
  }

  #fail(reason: NoxError): void {
    this.#closed = true;
    for (const call of this.#calls.values()) call.reject(reason);
    this.#calls.clear();
    for (const provider of this.#providers) provider.disconnect(reason);
  }

  #call(message: Unnumbered<ClientWorkerRequest>): Promise<unknown> {
    if (this.#closed) {
      return Promise.reject(new NoxError("closed", "the client is closed"));
    }
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject });
      this.#post({ ...message, id } as ClientWorkerRequest);
    });
  }

  /** Posts now if the Worker is listening, else when it says READY. */
  #post(message: ClientWorkerRequest): void {
    if (this.#queued === undefined) this.#worker.postMessage(message);
    else this.#queued.push(message);
  }

  #receive(data: unknown): void {
    if (typeof data === "object" && data !== null && (data as { op?: unknown }).op === READY.op) {
      const queued = this.#queued ?? [];
      this.#queued = undefined;
      for (const message of queued) this.#worker.postMessage(message);
      return;
    }
    const reply = data as ClientWorkerReply;
    if (typeof reply !== "object" || reply === null || typeof reply.id !== "number") return;
    const call = this.#calls.get(reply.id);
    if (call === undefined) return;
    this.#calls.delete(reply.id);
    if (reply.ok) call.resolve(reply.result);
    else call.reject(fromWire(reply.error));
  }
}
