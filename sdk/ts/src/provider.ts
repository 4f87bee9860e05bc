// An EIP-1193 provider whose JSON-RPC calls travel through the mixnet.
//
// Each call is one anonymous request to an exit (kind JsonRpc,
// docs/spec/messages.md): the exit forwards it to its Ethereum upstream and
// the answer comes back on single-use reply blocks (SURBs). Nothing links two
// calls at the exit: the JSON-RPC `id` sent is always 1 (the reply is matched
// by its SURBs, not by id) and the caller's id is put back on the answer.
//
// The provider holds no accounts. Transactions are signed where the keys are
// (a viem local account, ethers' Wallet, a hardware wallet) and broadcast with
// `eth_sendRawTransaction`; methods that need keys at the provider are refused
// with EIP-1193's 4200 (unsupported) or 4100 (unauthorized). Built with a
// shielded wallet (`options.private`, a PrivateSender), it also accepts
// `eth_sendTransaction`: the transaction is sent privately, its gas paid from
// the shielded balance through an exit's relayer (private.ts).

import { NoxError, ProviderRpcError, RpcCode, toProviderError } from "./errors.js";
import type { PrivateSent, PrivateTransaction } from "./private.js";

/** What a request asks the exit to do (docs/spec/messages.md §2). */
export type RequestKind = "echo" | "json-rpc" | "relay";

/** Per-request settings. */
export interface RequestOptions {
  /** Reply size the caller expects, in bytes: the client sends SURBs for this much (default 16 KiB). */
  expectedReplyLen?: number;
  /** Give up after this many milliseconds (default: the client's request timeout). */
  timeoutMs?: number;
  /** The exit to use (hex node id of the last layer); default: a random exit per request. */
  exit?: string;
}

/**
 * Sends one request through the mixnet and resolves with the exit's reply
 * body; rejects with a `NoxError`. `NoxClient` implements it.
 */
export interface MixnetRequester {
  request(kind: RequestKind, body: Uint8Array, options?: RequestOptions): Promise<Uint8Array>;
}

/** EIP-1193 `request` arguments. */
export interface RequestArguments {
  readonly method: string;
  readonly params?: readonly unknown[] | object;
}

/** EIP-1193 events this provider emits. */
export type ProviderEvent = "connect" | "disconnect" | "chainChanged" | "accountsChanged" | "message";

type Listener = (...args: unknown[]) => void;

/** Settings of the provider. */
export interface ProviderOptions {
  /** Reply size to budget SURBs for (default 16 KiB, as the native client's RPC endpoint). */
  expectedReplyLen?: number;
  /** Per-call timeout in milliseconds (default: the client's). */
  timeoutMs?: number;
  /** Largest JSON-RPC request sent, in bytes (default 256 KiB, as the native endpoint). */
  maxRequestBytes?: number;
  /**
   * A shielded wallet's sender (`PrivateSender`): `eth_sendTransaction` and `sendPrivate` then
   * send private paid transactions. Without it both are refused (4200).
   */
  private?: { send(tx: PrivateTransaction): Promise<PrivateSent> };
}

/** Methods that need keys held by the provider: refused, sign where the keys are. */
const SIGNING = new Set([
  "eth_sendTransaction",
  "eth_signTransaction",
  "eth_sign",
  "personal_sign",
  "eth_signTypedData",
  "eth_signTypedData_v3",
  "eth_signTypedData_v4",
]);

/** Methods that need a push channel, which one-shot anonymous replies do not give. */
const SUBSCRIPTIONS = new Set(["eth_subscribe", "eth_unsubscribe"]);

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The EIP-1193 provider. Pass it to viem's `custom(...)` transport or ethers' `BrowserProvider`. */
export class NoxProvider {
  readonly #requester: MixnetRequester;
  readonly #options: Required<Pick<ProviderOptions, "expectedReplyLen" | "maxRequestBytes">> & {
    timeoutMs: number | undefined;
  };
  readonly #listeners = new Map<ProviderEvent, Set<Listener>>();
  #private: ProviderOptions["private"];
  #connectedChain: string | undefined;
  #disconnected: NoxError | undefined;

  constructor(requester: MixnetRequester, options: ProviderOptions = {}) {
    this.#requester = requester;
    this.#options = {
      expectedReplyLen: options.expectedReplyLen ?? 16 * 1024,
      maxRequestBytes: options.maxRequestBytes ?? 256 * 1024,
      timeoutMs: options.timeoutMs,
    };
    this.#private = options.private;
  }

  /** Gives the provider a shielded wallet's sender (see `ProviderOptions.private`). */
  setPrivate(sender: ProviderOptions["private"]): void {
    this.#private = sender;
  }

  /**
   * Sends `{to, data, value, gas}` privately: a fee proved from the shielded balance pays an
   * exit's relayer, which sends it from its BatchExecutor (the action's `msg.sender`); `value`
   * (only without `data`) goes to `to` out of the shielded balance. Resolves once mined, with the
   * transaction hash and the parts' timings; rejects with a `ProviderRpcError` (4200 without a wallet).
   */
  async sendPrivate(tx: PrivateTransaction): Promise<PrivateSent> {
    if (this.#disconnected !== undefined) {
      throw toProviderError(this.#disconnected);
    }
    if (this.#private === undefined) {
      throw new ProviderRpcError(
        RpcCode.UnsupportedMethod,
        "eth_sendTransaction needs keys at the provider: sign locally and send with eth_sendRawTransaction",
      );
    }
    try {
      return await this.#private.send(tx);
    } catch (error) {
      throw toProviderError(error);
    }
  }

  /** EIP-1193 `request`. Rejects with a `ProviderRpcError` only. */
  async request(args: RequestArguments): Promise<unknown> {
    if (typeof args !== "object" || args === null || typeof args.method !== "string" || args.method === "") {
      throw new ProviderRpcError(RpcCode.InvalidParams, "request needs { method: string, params? }");
    }
    const { method } = args;
    if (this.#disconnected !== undefined) {
      throw toProviderError(this.#disconnected);
    }
    if (method === "eth_accounts") {
      return [];
    }
    if (method === "eth_requestAccounts") {
      throw new ProviderRpcError(
        RpcCode.Unauthorized,
        "the NOX provider holds no accounts: sign with a local account or a wallet, then eth_sendRawTransaction",
      );
    }
    if (method === "eth_sendTransaction" && this.#private !== undefined) {
      const params = args.params;
      const tx = Array.isArray(params) ? (params[0] as unknown) : undefined;
      if (typeof tx !== "object" || tx === null) {
        throw new ProviderRpcError(RpcCode.InvalidParams, "eth_sendTransaction needs [transaction]");
      }
      return (await this.sendPrivate(tx as PrivateTransaction)).txHash;
    }
    if (SIGNING.has(method)) {
      throw new ProviderRpcError(
        RpcCode.UnsupportedMethod,
        `${method} needs keys at the provider: sign locally and send with eth_sendRawTransaction`,
      );
    }
    if (SUBSCRIPTIONS.has(method) || method.startsWith("wallet_")) {
      throw new ProviderRpcError(RpcCode.UnsupportedMethod, `${method} is not available through the mixnet`);
    }
    const params = args.params ?? [];
    if (typeof params !== "object" || params === null) {
      throw new ProviderRpcError(RpcCode.InvalidParams, "params must be an array or an object");
    }
    let body: Uint8Array;
    try {
      body = encoder.encode(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }));
    } catch (error) {
      throw new ProviderRpcError(RpcCode.InvalidParams, `params do not serialise to JSON: ${String(error)}`);
    }
    if (body.length > this.#options.maxRequestBytes) {
      throw new ProviderRpcError(
        RpcCode.InvalidParams,
        `request of ${body.length} bytes exceeds the ${this.#options.maxRequestBytes}-byte limit`,
      );
    }
    let reply: Uint8Array;
    try {
      const options: RequestOptions = { expectedReplyLen: this.#options.expectedReplyLen };
      if (this.#options.timeoutMs !== undefined) {
        options.timeoutMs = this.#options.timeoutMs;
      }
      reply = await this.#requester.request("json-rpc", body, options);
    } catch (error) {
      throw toProviderError(error);
    }
    const result = parseResponse(reply);
    if (method === "eth_chainId" && typeof result === "string") {
      this.#sawChain(result);
    }
    return result;
  }

  /** EIP-1193 event subscription. */
  on(event: ProviderEvent, listener: Listener): this {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener);
    return this;
  }

  /** EIP-1193 event unsubscription. */
  removeListener(event: ProviderEvent, listener: Listener): this {
    this.#listeners.get(event)?.delete(listener);
    return this;
  }

  /**
   * The client behind the provider closed or lost the network: every later
   * call rejects with 4900 and `disconnect` is emitted once.
   */
  disconnect(reason: NoxError): void {
    if (this.#disconnected !== undefined) {
      return;
    }
    this.#disconnected = reason;
    this.#emit("disconnect", toProviderError(reason));
  }

  #sawChain(chainId: string): void {
    if (this.#connectedChain === undefined) {
      this.#connectedChain = chainId;
      this.#emit("connect", { chainId });
    } else if (this.#connectedChain !== chainId) {
      this.#connectedChain = chainId;
      this.#emit("chainChanged", chainId);
    }
  }

  #emit(event: ProviderEvent, value: unknown): void {
    for (const listener of this.#listeners.get(event) ?? []) {
      try {
        listener(value);
      } catch {
        // A listener's failure is its own; the provider goes on.
      }
    }
  }
}

/** The `result` of a JSON-RPC response, or its `error` as a `ProviderRpcError`. */
export function parseResponse(reply: Uint8Array): unknown {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(reply));
  } catch {
    throw new ProviderRpcError(RpcCode.Internal, `the exit's reply is not JSON (${reply.length} bytes)`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ProviderRpcError(RpcCode.Internal, "the exit's reply is not a JSON-RPC response object");
  }
  const response = value as { result?: unknown; error?: unknown };
  if (response.error !== undefined) {
    const error = response.error as { code?: unknown; message?: unknown; data?: unknown } | null;
    const code = typeof error?.code === "number" && Number.isInteger(error.code) ? error.code : RpcCode.Internal;
    const message = typeof error?.message === "string" ? error.message : "error without a message";
    throw new ProviderRpcError(code, message, error?.data);
  }
  if (!("result" in response)) {
    throw new ProviderRpcError(RpcCode.Internal, "the exit's reply has neither result nor error");
  }
  return response.result;
}
