// NOX behind the Kohaku wallet's provider interface (ethereum/kohaku,
// packages/provider: `EthereumProvider` and `TxSigner`).
//
// Kohaku's privacy plugins (Railgun, Privacy Pools) read the chain through an
// `EthereumProvider` (typed reads: chain id, logs, balances, receipts, calls)
// and send through a `TxSigner` (`sendTransaction({ to, data, value })`,
// `signMessage`, `getAddress`). The shapes are declared here structurally, so
// the objects below are accepted wherever Kohaku asks for its types; this
// module does not depend on Kohaku's packages.
//
// - `kohakuProvider(p)`: every read is one anonymous JSON-RPC request through
//   the mixnet (`p` is a `NoxProvider`, or `client.provider()`).
// - `kohakuSigner(p, account)`: the transaction is filled (nonce, gas, fees)
//   and signed where the key is (a viem local account), and broadcast with
//   `eth_sendRawTransaction` through the mixnet.
// - `kohakuPrivateSigner(sender)`: `sendTransaction` is a private paid send
//   (`PrivateSender`, private.ts): the relayer is the on-chain sender and gas
//   is paid from the shielded balance; it has no address and signs no message.
//
// docs/design/wallet-standards.md says where the interface and NOX do not fit.

import { ProviderRpcError, RpcCode } from "./errors.js";
import type { PrivateSent, PrivateTransaction } from "./private.js";
import type { RequestArguments } from "./provider.js";

type Hex = `0x${string}`;

/** Kohaku's log shape. */
export interface KohakuLog {
  blockNumber: bigint;
  topics: string[];
  data: string;
  address: string;
}

/** Kohaku's receipt shape. */
export interface KohakuReceipt {
  blockNumber: bigint;
  status: bigint;
  logs: KohakuLog[];
  gasUsed: bigint;
}

/** Kohaku's call shape (hex quantities, as `eth_call` takes them). */
export interface KohakuCall {
  to: Hex;
  from?: Hex;
  gas?: Hex;
  gasPrice?: Hex;
  value?: Hex;
  input?: Hex;
  block?: Hex | "latest" | "pending" | "earliest";
}

/** A log filter (as ox's `Filter`: block numbers as bigint or tags). */
export interface KohakuFilter {
  address?: string | readonly string[];
  topics?: readonly (string | readonly string[] | null)[];
  fromBlock?: bigint | number | string;
  toBlock?: bigint | number | string;
  blockHash?: string;
}

/** Kohaku's transaction shape for a signer. */
export interface KohakuTx {
  to: string;
  data: string;
  value: bigint;
}

/** Kohaku's `EthereumProvider`, with NOX's EIP-1193 provider as `_internal`. */
export interface KohakuProvider<T> {
  _internal: T;
  getChainId(): Promise<bigint>;
  getLogs(filter: KohakuFilter): Promise<KohakuLog[]>;
  getBlockNumber(): Promise<bigint>;
  waitForTransaction(txHash: string): Promise<void>;
  getBalance(address: string): Promise<bigint>;
  getCode(address: string): Promise<string>;
  getTransactionReceipt(txHash: string): Promise<KohakuReceipt | null>;
  request(request: { method: string; params?: unknown }): Promise<unknown>;
  call(call: KohakuCall): Promise<Hex | undefined>;
  estimateGas(call: KohakuCall): Promise<bigint>;
  getGasPrice(): Promise<bigint>;
  getTransactionCount(address: Hex, block?: number): Promise<number>;
}

/** Kohaku's `TxSigner`. */
export interface KohakuSigner {
  signMessage(message: string | Uint8Array): Promise<string>;
  sendTransaction(tx: KohakuTx): Promise<string>;
  getAddress(): Promise<string>;
}

/** An EIP-1193 provider. */
export interface Eip1193Like {
  request(args: RequestArguments): Promise<unknown>;
}

/** What a signer needs of an account: viem's `LocalAccount` has this shape. */
export interface SigningAccount {
  address: Hex;
  signTransaction(tx: {
    type: "eip1559";
    chainId: number;
    nonce: number;
    to: Hex;
    data: Hex;
    value: bigint;
    gas: bigint;
    maxFeePerGas: bigint;
    maxPriorityFeePerGas: bigint;
  }): Promise<Hex>;
  signMessage(args: { message: string | { raw: Uint8Array } }): Promise<Hex>;
}

/** Settings of `kohakuProvider`. */
export interface KohakuProviderOptions {
  /** `waitForTransaction` gives up after this many milliseconds (default 60,000). */
  waitTimeoutMs?: number;
  /** `waitForTransaction` polls this often (default 1,000 ms: each poll is a mixnet round trip). */
  pollMs?: number;
}

function toQuantity(value: bigint | number): Hex {
  return `0x${BigInt(value).toString(16)}`;
}

function blockTag(value: bigint | number | string | undefined): string | undefined {
  if (value === undefined || typeof value === "string") {
    return value;
  }
  return toQuantity(value);
}

/** A hex quantity from the node; anything else is an internal error, not a silent 0. */
function quantity(value: unknown, what: string): bigint {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]+$/.test(value)) {
    throw new ProviderRpcError(RpcCode.Internal, `${what}: not a hex quantity`, value);
  }
  return BigInt(value);
}

function toLog(raw: unknown): KohakuLog {
  const log = raw as { blockNumber?: unknown; topics?: unknown; data?: unknown; address?: unknown };
  if (!Array.isArray(log?.topics) || typeof log.data !== "string" || typeof log.address !== "string") {
    throw new ProviderRpcError(RpcCode.Internal, "malformed log", raw);
  }
  return {
    blockNumber: quantity(log.blockNumber, "log blockNumber"),
    topics: log.topics as string[],
    data: log.data,
    address: log.address,
  };
}

function toReceipt(raw: unknown): KohakuReceipt {
  const receipt = raw as { blockNumber?: unknown; status?: unknown; logs?: unknown; gasUsed?: unknown };
  if (!Array.isArray(receipt?.logs)) {
    throw new ProviderRpcError(RpcCode.Internal, "malformed receipt", raw);
  }
  return {
    blockNumber: quantity(receipt.blockNumber, "receipt blockNumber"),
    status: quantity(receipt.status, "receipt status"),
    logs: receipt.logs.map(toLog),
    gasUsed: quantity(receipt.gasUsed, "receipt gasUsed"),
  };
}

function callObject(call: KohakuCall): object {
  const { block: _block, input, ...rest } = call;
  return input === undefined ? rest : { ...rest, input, data: input };
}

/** Kohaku's `EthereumProvider` over NOX: each method is one anonymous JSON-RPC request. */
export function kohakuProvider<T extends Eip1193Like>(
  provider: T,
  options: KohakuProviderOptions = {},
): KohakuProvider<T> {
  const rpc = (method: string, params?: unknown[]) => provider.request(params ? { method, params } : { method });
  const receipt = async (txHash: string) => {
    const raw = await rpc("eth_getTransactionReceipt", [txHash]);
    return raw === null || raw === undefined ? null : toReceipt(raw);
  };
  return {
    _internal: provider,
    request: (request) =>
      provider.request(
        request.params === undefined ? { method: request.method } : { method: request.method, params: request.params as object },
      ),
    getChainId: async () => quantity(await rpc("eth_chainId"), "eth_chainId"),
    getBlockNumber: async () => quantity(await rpc("eth_blockNumber"), "eth_blockNumber"),
    getGasPrice: async () => quantity(await rpc("eth_gasPrice"), "eth_gasPrice"),
    getBalance: async (address) => quantity(await rpc("eth_getBalance", [address, "latest"]), "eth_getBalance"),
    async getCode(address) {
      const code = await rpc("eth_getCode", [address, "latest"]);
      return typeof code === "string" ? code : "0x";
    },
    async getTransactionCount(address, block) {
      const tag = block === undefined ? "latest" : toQuantity(block);
      return Number(quantity(await rpc("eth_getTransactionCount", [address, tag]), "eth_getTransactionCount"));
    },
    async getLogs(filter) {
      const { fromBlock, toBlock, ...rest } = filter;
      const query: Record<string, unknown> = { ...rest };
      if (fromBlock !== undefined) query.fromBlock = blockTag(fromBlock);
      if (toBlock !== undefined) query.toBlock = blockTag(toBlock);
      const logs = await rpc("eth_getLogs", [query]);
      if (!Array.isArray(logs)) {
        throw new ProviderRpcError(RpcCode.Internal, "eth_getLogs: not an array", logs);
      }
      return logs.map(toLog);
    },
    getTransactionReceipt: receipt,
    async waitForTransaction(txHash) {
      const deadline = Date.now() + (options.waitTimeoutMs ?? 60_000);
      for (;;) {
        if ((await receipt(txHash)) !== null) {
          return;
        }
        if (Date.now() > deadline) {
          throw new ProviderRpcError(RpcCode.ResourceUnavailable, `transaction ${txHash} not mined in time`);
        }
        await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1_000));
      }
    },
    async call(call) {
      const result = await rpc("eth_call", [callObject(call), call.block ?? "latest"]);
      return typeof result === "string" ? (result as Hex) : undefined;
    },
    estimateGas: async (call) => quantity(await rpc("eth_estimateGas", [callObject(call)]), "eth_estimateGas"),
  };
}

function hexData(data: string): Hex {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) {
    throw new ProviderRpcError(RpcCode.InvalidParams, "data must be 0x-prefixed hex bytes");
  }
  return data as Hex;
}

function hexAddress(to: string): Hex {
  if (!/^0x[0-9a-fA-F]{40}$/.test(to)) {
    throw new ProviderRpcError(RpcCode.InvalidParams, "to must be a 20-byte hex address");
  }
  return to as Hex;
}

/**
 * Kohaku's `TxSigner` for a key held by the wallet: fills nonce, gas and EIP-1559 fees
 * through `provider` (mixnet reads), signs with `account`, broadcasts the raw transaction
 * through the mixnet and returns its hash. The exit sees a signed transaction, which names
 * its sender: this hides the wallet's network address, not the account.
 */
export function kohakuSigner(provider: Eip1193Like, account: SigningAccount): KohakuSigner {
  const reads = kohakuProvider(provider);
  return {
    getAddress: async () => account.address,
    signMessage: (message) => account.signMessage({ message: typeof message === "string" ? message : { raw: message } }),
    async sendTransaction(tx) {
      const to = hexAddress(tx.to);
      const data = hexData(tx.data);
      const [chainId, nonce, block, tipRaw] = await Promise.all([
        reads.getChainId(),
        reads.getTransactionCount(account.address, undefined),
        provider.request({ method: "eth_getBlockByNumber", params: ["latest", false] }),
        provider.request({ method: "eth_maxPriorityFeePerGas" }),
      ]);
      const baseFee = quantity((block as { baseFeePerGas?: unknown })?.baseFeePerGas, "baseFeePerGas");
      const maxPriorityFeePerGas = quantity(tipRaw, "eth_maxPriorityFeePerGas");
      const gas = await reads.estimateGas({ to, from: account.address, value: toQuantity(tx.value), input: data });
      const signed = await account.signTransaction({
        type: "eip1559",
        chainId: Number(chainId),
        nonce,
        to,
        data,
        value: tx.value,
        gas,
        // Twice the latest base fee plus the tip: room for several base-fee rises (viem's default).
        maxFeePerGas: baseFee * 2n + maxPriorityFeePerGas,
        maxPriorityFeePerGas,
      });
      const hash = await provider.request({ method: "eth_sendRawTransaction", params: [signed] });
      if (typeof hash !== "string") {
        throw new ProviderRpcError(RpcCode.Internal, "eth_sendRawTransaction: no hash", hash);
      }
      return hash;
    },
  };
}

/** A shielded wallet's sender (`PrivateSender`). */
export interface PrivateSenderLike {
  send(tx: PrivateTransaction): Promise<PrivateSent>;
}

/**
 * Kohaku's `TxSigner` for private paid sends: `sendTransaction` goes through `sender`
 * (a relayer sends it, gas paid from the shielded balance). There is no account to name:
 * `getAddress` and `signMessage` are refused with EIP-1193's 4200 (unsupported).
 */
export function kohakuPrivateSigner(sender: PrivateSenderLike): KohakuSigner {
  const unsupported = (what: string) =>
    Promise.reject(new ProviderRpcError(RpcCode.UnsupportedMethod, `${what}: a private sender has no account`));
  return {
    getAddress: () => unsupported("getAddress"),
    signMessage: () => unsupported("signMessage"),
    async sendTransaction(tx) {
      const data = hexData(tx.data);
      const sent = await sender.send({
        to: hexAddress(tx.to),
        ...(data === "0x" ? {} : { data }),
        ...(tx.value === 0n ? {} : { value: tx.value }),
      });
      return sent.txHash;
    },
  };
}
