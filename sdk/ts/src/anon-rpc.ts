// NOX as an anon-rpc worker (privacy-ethereum/anon-rpc, SPEC.md 0.3.0).
//
// anon-rpc lets a wallet run a pluggable anonymity client in a sandboxed
// worker: the host calls the worker's `fetch`, the worker answers through the
// capability API (`anonRpcWorker.acceptCall`, `signalReady`, `signalFailed`).
// A conforming worker must either give general web access or serve Ethereum
// JSON-RPC at a nominated URL. NOX does the second: its exits forward JSON-RPC
// (kind JsonRpc, docs/spec/messages.md), not arbitrary HTTP, so this worker
// serves `POST /ethereum-rpc` and answers every other URL 404.
//
// Each JSON-RPC request in a POST (one, or each element of a batch) becomes one
// anonymous mixnet request through the EIP-1193 `NoxProvider`: a batch is not
// linked at the exit, and ids never leave the worker (provider.ts sends id 1).
// docs/design/wallet-standards.md says where the standard and NOX do not fit.
//
// The types below describe the spec's shapes as this module uses them; they are
// structural, so the harness's own `anonRpcWorker` object is passed as is.

import { NoxError, ProviderRpcError, toProviderError } from "./errors.js";
import type { RequestArguments } from "./provider.js";

/** The URL path this worker serves Ethereum JSON-RPC at (anon-rpc §3.2). */
export const ETHEREUM_RPC_PATH = "/ethereum-rpc";

/** Largest POST body read, in bytes (as the provider's own request bound, 256 KiB). */
export const MAX_ANON_RPC_BODY = 256 * 1024;

/** Most requests in one JSON-RPC batch (each is one mixnet request). */
export const MAX_ANON_RPC_BATCH = 100;

/** anon-rpc §9.1: header names and values in order, duplicates kept. */
export type AnonHeaderList = [name: string, value: string][];

/** anon-rpc §9.1: a request or response body. */
export type AnonByteBody = Uint8Array | ReadableStream<Uint8Array>;

/** anon-rpc §9.1: what the host passed to `fetch`. */
export interface AnonRequestInit {
  method?: string;
  headers?: AnonHeaderList;
  body?: AnonByteBody;
  redirect?: "follow" | "manual" | "error";
  signal?: AbortSignal;
}

/** anon-rpc §9.2: the worker's answer to a fetch call. */
export interface AnonFetchResponse {
  status: number;
  headers: AnonHeaderList;
  body: AnonByteBody;
  url?: string;
}

/** anon-rpc §8: a `fetch` call from the host. */
export interface AnonFetchCall {
  kind: "fetch";
  url: string;
  requestInit?: AnonRequestInit;
  respond(response: AnonFetchResponse | Promise<AnonFetchResponse>): void;
}

/** anon-rpc §8: any inbound call; kinds other than `fetch` are left unanswered-but-failed. */
export type AnonIncomingCall = AnonFetchCall | { kind: string; respond?: (response: Promise<never>) => void };

/** The part of anon-rpc's `AnonRpcWorkerApi` (§7) this worker uses. */
export interface AnonRpcWorkerApiLike {
  signalReady(): void;
  signalFailed(reason?: { code?: string; message?: string }): void;
  acceptCall(opts?: { signal?: AbortSignal }): Promise<AnonIncomingCall>;
  readonly config: unknown;
}

/** An EIP-1193 provider (`NoxProvider`, or `client.provider()` of `NoxClient`/`WorkerNoxClient`). */
export interface Eip1193Requester {
  request(args: RequestArguments): Promise<unknown>;
}

/** A started NOX client as the worker needs it. */
export interface AnonRpcBackend {
  provider(): Eip1193Requester;
  close?(): void;
}

/** Settings of the worker loop. */
export interface AnonRpcServeOptions {
  /** Largest POST body read (default `MAX_ANON_RPC_BODY`). */
  maxBodyBytes?: number;
  /** Most requests in a batch (default `MAX_ANON_RPC_BATCH`). */
  maxBatch?: number;
  /** Stops accepting calls when aborted (the pending `acceptCall` is aborted with it). */
  signal?: AbortSignal;
}

const JSON_HEADERS: AnonHeaderList = [["content-type", "application/json"]];
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** JSON-RPC 2.0 codes for malformed input (not EIP-1193's). */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

function jsonResponse(status: number, value: unknown): AnonFetchResponse {
  return { status, headers: JSON_HEADERS, body: encoder.encode(JSON.stringify(value)) };
}

function rpcError(id: unknown, code: number, message: string, data?: unknown): object {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** Reads a body of at most `limit` bytes; `undefined` when it is larger. */
async function readBody(body: AnonByteBody | undefined, limit: number): Promise<Uint8Array | undefined> {
  if (body === undefined) {
    return new Uint8Array(0);
  }
  if (body instanceof Uint8Array) {
    return body.length > limit ? undefined : body;
  }
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    total += value.length;
    if (total > limit) {
      await reader.cancel();
      return undefined;
    }
    parts.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** One JSON-RPC request through the provider; `undefined` for a notification (no id). */
async function answerOne(provider: Eip1193Requester, request: unknown): Promise<object | undefined> {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    return rpcError(null, INVALID_REQUEST, "a JSON-RPC request is an object");
  }
  const { id, method, params } = request as { id?: unknown; method?: unknown; params?: unknown };
  const replyId = id === undefined ? null : id;
  if (typeof method !== "string") {
    return rpcError(replyId, INVALID_REQUEST, "method must be a string");
  }
  if (params !== undefined && (typeof params !== "object" || params === null)) {
    return rpcError(replyId, INVALID_REQUEST, "params must be an array or an object");
  }
  let reply: object;
  try {
    const result = await provider.request(params === undefined ? { method } : { method, params });
    reply = { jsonrpc: "2.0", id: replyId, result: result === undefined ? null : result };
  } catch (error) {
    const failure = error instanceof ProviderRpcError ? error : toProviderError(error);
    reply = rpcError(replyId, failure.code, failure.message, failure.data);
  }
  return id === undefined ? undefined : reply;
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new NoxError("closed", "the fetch call was aborted"));
    if (signal.aborted) {
      fail();
    } else {
      signal.addEventListener("abort", fail, { once: true });
    }
  });
}

/**
 * Answers one anon-rpc fetch call: `POST /ethereum-rpc` with a JSON-RPC request or batch is
 * sent through `provider`, one mixnet request per JSON-RPC request; anything else is an HTTP
 * error (404 other paths, 405 other methods, 413 bodies over `maxBodyBytes`).
 */
export async function answerFetchCall(
  provider: Eip1193Requester,
  url: string,
  init: AnonRequestInit | undefined,
  options: AnonRpcServeOptions = {},
): Promise<AnonFetchResponse> {
  const work = answer(provider, url, init, options);
  return init?.signal ? Promise.race([work, aborted(init.signal)]) : work;
}

async function answer(
  provider: Eip1193Requester,
  url: string,
  init: AnonRequestInit | undefined,
  options: AnonRpcServeOptions,
): Promise<AnonFetchResponse> {
  let path: string;
  try {
    // A relative URL is resolved against a placeholder origin: only the path matters.
    path = new URL(url, "http://anon-rpc.invalid").pathname;
  } catch {
    return jsonResponse(400, { error: "the URL does not parse" });
  }
  if (path !== ETHEREUM_RPC_PATH) {
    return jsonResponse(404, {
      error: `this worker serves only ${ETHEREUM_RPC_PATH}: NOX exits forward Ethereum JSON-RPC, not web requests`,
    });
  }
  const method = (init?.method ?? "GET").toUpperCase();
  if (method !== "POST") {
    return { status: 405, headers: [...JSON_HEADERS, ["allow", "POST"]], body: encoder.encode('{"error":"POST only"}') };
  }
  const bytes = await readBody(init?.body, options.maxBodyBytes ?? MAX_ANON_RPC_BODY);
  if (bytes === undefined) {
    return jsonResponse(413, { error: "request body too large" });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(bytes));
  } catch {
    return jsonResponse(200, rpcError(null, PARSE_ERROR, "the body is not JSON"));
  }
  if (!Array.isArray(parsed)) {
    const reply = await answerOne(provider, parsed);
    return reply === undefined ? { status: 204, headers: [], body: new Uint8Array(0) } : jsonResponse(200, reply);
  }
  if (parsed.length === 0 || parsed.length > (options.maxBatch ?? MAX_ANON_RPC_BATCH)) {
    return jsonResponse(200, rpcError(null, INVALID_REQUEST, "a batch holds 1 to the batch limit of requests"));
  }
  // Each element is its own mixnet request, sent at once: the exits see unlinked requests.
  const replies = (await Promise.all(parsed.map((request) => answerOne(provider, request)))).filter(
    (reply): reply is object => reply !== undefined,
  );
  return replies.length === 0 ? { status: 204, headers: [], body: new Uint8Array(0) } : jsonResponse(200, replies);
}

/**
 * Serves anon-rpc calls until `options.signal` aborts: accepts calls one at a time (the
 * spec's backpressure) and answers each without waiting for the previous one (requests run
 * concurrently through the mixnet). Unknown call kinds are failed, not crashed on (§8).
 */
export async function serveAnonRpc(
  api: AnonRpcWorkerApiLike,
  provider: Eip1193Requester,
  options: AnonRpcServeOptions = {},
): Promise<void> {
  for (;;) {
    let call: AnonIncomingCall;
    try {
      call = await api.acceptCall(options.signal ? { signal: options.signal } : undefined);
    } catch (error) {
      if (options.signal?.aborted) {
        return;
      }
      throw error;
    }
    if (call.kind === "fetch") {
      const fetchCall = call as AnonFetchCall;
      fetchCall.respond(answerFetchCall(provider, fetchCall.url, fetchCall.requestInit, options));
    } else if (typeof call.respond === "function") {
      call.respond(Promise.reject(new NoxError("bad-input", `call kind ${call.kind} is not served by NOX`)));
    }
  }
}

/**
 * The whole worker: starts NOX with `start(api.config)` (the config is the worker's, opaque
 * to the harness; `NoxClient.connect` options built from it), signals ready, and serves. A
 * failed start is reported with `signalFailed` (code `network-error`, or `unsupported` when
 * the config is refused) and never signals ready.
 */
export async function runAnonRpcWorker(
  api: AnonRpcWorkerApiLike,
  start: (config: unknown) => Promise<AnonRpcBackend>,
  options: AnonRpcServeOptions = {},
): Promise<void> {
  let backend: AnonRpcBackend;
  try {
    backend = await start(api.config);
  } catch (error) {
    const code = error instanceof NoxError && error.code === "bad-input" ? "unsupported" : "network-error";
    api.signalFailed({ code, message: error instanceof Error ? error.message : String(error) });
    return;
  }
  api.signalReady();
  try {
    await serveAnonRpc(api, backend.provider(), options);
  } finally {
    backend.close?.();
  }
}
