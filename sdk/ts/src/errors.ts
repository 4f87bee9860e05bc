// Typed errors of the SDK. Every failure a caller can see is one of these:
// a `NoxError` from the client, or a `ProviderRpcError` (EIP-1193) from the
// provider, which carries the `NoxError` that caused it as `cause`.

/** What went wrong, as a stable string a program can switch on. */
export type NoxErrorCode =
  /** No complete reply arrived before the request's deadline (packets lost or the exit slow). */
  | "timeout"
  /** The exit answered with a refusal (method not allowed, bound exceeded, upstream down, ...). */
  | "refused"
  /** The topology could not be fetched or did not verify against the authority key. */
  | "topology"
  /** A link to an entry or the gateway failed (WebSocket closed, handshake refused). */
  | "transport"
  /** The client was closed. */
  | "closed"
  /** The caller passed something the SDK cannot send (too large, malformed). */
  | "bad-input"
  /** A sealed wallet key or state does not open: wrong passphrase, or a byte of it was altered. */
  | "wrong-passphrase"
  /** A sealed wallet key or state is not in a format this SDK reads (not a `wallet.key`). */
  | "bad-key-file";

/** An error of the NOX client. */
export class NoxError extends Error {
  readonly code: NoxErrorCode;

  constructor(code: NoxErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NoxError";
    this.code = code;
  }
}

/** The exit refused the request; `status` is the exit's status name (docs/spec/messages.md). */
export class NoxRefusedError extends NoxError {
  readonly status: string;

  constructor(status: string, message: string) {
    super("refused", `refused by the exit (${status}): ${message}`);
    this.name = "NoxRefusedError";
    this.status = status;
  }
}

/** EIP-1193 provider error codes used by this SDK (EIP-1193 and EIP-1474). */
export const RpcCode = {
  /** EIP-1193: the requested method and/or account has not been authorized. */
  Unauthorized: 4100,
  /** EIP-1193: the provider does not support the requested method. */
  UnsupportedMethod: 4200,
  /** EIP-1193: the provider is disconnected from all chains. */
  Disconnected: 4900,
  /** EIP-1474: invalid method parameters. */
  InvalidParams: -32602,
  /** EIP-1474: internal JSON-RPC error (viem retries these). */
  Internal: -32603,
  /** EIP-1474: resource unavailable. */
  ResourceUnavailable: -32002,
} as const;

/** The error shape EIP-1193 prescribes: `code`, `message`, optional `data`. */
export class ProviderRpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ProviderRpcError";
    this.code = code;
    this.data = data;
  }
}

/** How a client failure surfaces through the EIP-1193 provider. */
export function toProviderError(error: unknown): ProviderRpcError {
  if (error instanceof ProviderRpcError) {
    return error;
  }
  if (error instanceof NoxError) {
    const data = { nox: error.code, ...(error instanceof NoxRefusedError ? { status: error.status } : {}) };
    switch (error.code) {
      // Lost packets are not the request's fault: a retryable internal error (viem retries -32603).
      case "timeout":
        return new ProviderRpcError(RpcCode.Internal, error.message, data, { cause: error });
      case "refused":
        return new ProviderRpcError(RpcCode.ResourceUnavailable, error.message, data, { cause: error });
      case "bad-input":
        return new ProviderRpcError(RpcCode.InvalidParams, error.message, data, { cause: error });
      case "topology":
      case "transport":
      case "closed":
        return new ProviderRpcError(RpcCode.Disconnected, error.message, data, { cause: error });
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ProviderRpcError(RpcCode.Internal, message, undefined, { cause: error });
}
