// One WebSocket link to a node: the bytes of the client link (docs/spec/link.md),
// sealed and opened by the WebAssembly module, carried in binary messages.

import { NoxError } from "./errors.js";

/** The module's side of one link (crates/nox-wasm: `nox_link_*`). */
export interface LinkMachine {
  /** Feeds received bytes: `send` goes out now, `records` are opened packets. */
  feed(bytes: Uint8Array): { send: Uint8Array; records: Uint8Array[]; established: boolean };
  /** Seals one packet as a record (the link must be established). */
  seal(packet: Uint8Array): Uint8Array;
  /** Frees the module's state of the link. */
  drop(): void;
}

/** The WebSocket constructor: the browser's, or `ws` in Node. */
export type WebSocketLike = new (url: string) => {
  binaryType: string;
  readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onclose: ((event: unknown) => void) | null;
};

const OPEN = 1;

/** Most packets held for a link still in its handshake; beyond, the oldest go (as a full link queue). */
export const MAX_QUEUED = 256;

/** A link's life, as the client sees it. */
export interface LinkEvents {
  onRecord(record: Uint8Array): void;
  onClose(reason: NoxError): void;
}

/** A link: opens the socket, runs the handshake, sends packets, hands records up. */
export class NodeLink {
  readonly #machine: LinkMachine;
  readonly #socket: InstanceType<WebSocketLike>;
  readonly #events: LinkEvents;
  readonly #queue: Uint8Array[] = [];
  #established = false;
  #closed = false;
  #ready: Promise<void>;
  #resolveReady!: () => void;
  #rejectReady!: (error: NoxError) => void;
  /** Packets dropped because the handshake queue was full. */
  dropped = 0;

  constructor(
    url: string,
    first: Uint8Array,
    machine: LinkMachine,
    events: LinkEvents,
    WebSocketImpl: WebSocketLike,
    handshakeTimeoutMs: number,
  ) {
    this.#machine = machine;
    this.#events = events;
    this.#ready = new Promise((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    // Nobody may be waiting yet: an unobserved rejection is not an error here.
    this.#ready.catch(() => {});
    this.#socket = new WebSocketImpl(url);
    this.#socket.binaryType = "arraybuffer";
    const timer = setTimeout(() => {
      if (!this.#established) {
        this.#fail(new NoxError("transport", `link to ${url}: no handshake within ${handshakeTimeoutMs} ms`));
      }
    }, handshakeTimeoutMs);
    this.#socket.onopen = () => {
      this.#socket.send(first);
    };
    this.#socket.onmessage = (event) => {
      const data = event.data;
      if (!(data instanceof ArrayBuffer)) {
        this.#fail(new NoxError("transport", `link to ${url}: a non-binary message`));
        return;
      }
      let fed;
      try {
        fed = this.#machine.feed(new Uint8Array(data));
      } catch (error) {
        this.#fail(new NoxError("transport", `link to ${url}: ${String(error)}`, { cause: error }));
        return;
      }
      if (fed.send.length > 0) {
        this.#socket.send(fed.send);
      }
      if (fed.established) {
        clearTimeout(timer);
        this.#established = true;
        for (const packet of this.#queue.splice(0)) {
          this.#sendNow(packet);
        }
        this.#resolveReady();
      }
      for (const record of fed.records) {
        this.#events.onRecord(record);
      }
    };
    this.#socket.onerror = () => {
      this.#fail(new NoxError("transport", `link to ${url}: WebSocket error`));
    };
    this.#socket.onclose = () => {
      clearTimeout(timer);
      this.#fail(new NoxError("transport", `link to ${url} closed`));
    };
  }

  /** Resolves when the handshake completed; rejects if the link failed first. */
  get ready(): Promise<void> {
    return this.#ready;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sends one packet, or holds it until the handshake completes. */
  send(packet: Uint8Array): void {
    if (this.#closed) {
      return;
    }
    if (!this.#established) {
      if (this.#queue.length >= MAX_QUEUED) {
        this.#queue.shift();
        this.dropped += 1;
      }
      this.#queue.push(packet);
      return;
    }
    this.#sendNow(packet);
  }

  close(): void {
    this.#fail(new NoxError("closed", "link closed by the client"));
  }

  #sendNow(packet: Uint8Array): void {
    if (this.#socket.readyState !== OPEN) {
      return;
    }
    try {
      this.#socket.send(this.#machine.seal(packet));
    } catch (error) {
      this.#fail(new NoxError("transport", `sealing a packet: ${String(error)}`, { cause: error }));
    }
  }

  #fail(reason: NoxError): void {
    if (this.#closed) {
      return;
    }
    this.#closed = true;
    this.#queue.length = 0;
    this.#rejectReady(reason);
    try {
      this.#socket.close();
    } catch {
      // Already closing.
    }
    this.#machine.drop();
    this.#events.onClose(reason);
  }
}
