// NOX SDK: the mixnet client for browsers and Node.
export { NoxError, NoxRefusedError, ProviderRpcError, RpcCode, toProviderError } from "./errors.js";
export type { NoxErrorCode } from "./errors.js";
export { NoxProvider, parseResponse } from "./provider.js";
export type {
  MixnetRequester,
  ProviderEvent,
  ProviderOptions,
  RequestArguments,
  RequestKind,
  RequestOptions,
} from "./provider.js";
export { NoxClient } from "./client.js";
export { COVER_PROFILES, MOBILE_DEFAULT_BUDGET, UnknownCoverProfileError } from "./cover-profile.js";
export type { CoverProfileName } from "./cover-profile.js";
export type { ClientCoreModule, Completed, NoxClientOptions, Outgoing, TopologyNode } from "./client.js";
export { WorkerNoxClient } from "./client-worker-proxy.js";
export type { ClientWorkerLike, WorkerClientOptions } from "./client-worker-proxy.js";
export { MAX_QUEUED, NodeLink } from "./link.js";
export type { LinkMachine, WebSocketLike } from "./link.js";
export { loadModule } from "./wasm.js";
export { ProverError, TransferProver } from "./prover.js";
export { memoryWorkerCap } from "./prover-split.js";
export type { WorkerCapSource } from "./prover-split.js";
export type {
  KeySource,
  PreparedDescription,
  ProveInput,
  ProvedTransfer,
  ProverProgress,
  ProverStart,
  WasmSource,
  WorkerLike,
} from "./prover.js";
export { LOG_PAGE, NoxWallet } from "./wallet.js";
export { WalletSyncWorker } from "./wallet-sync.js";
export type { AssetBalance, SealedWalletOptions, SyncReport, WalletBalances, WalletOptions } from "./wallet.js";
export { SEED_LEN, openSeed, openState, sealSeed, sealState, wipe } from "./seal.js";
export { IndexedDbWalletStore, MemoryWalletStore } from "./store.js";
export type { SyncCursor, WalletRecord, WalletStore } from "./store.js";
export {
  DEFAULT_ACTION_GAS,
  DEFAULT_FEE_PERCENT,
  MAX_QUOTE_AGE_BLOCKS,
  PrivateSender,
  readQuoteFees,
} from "./private.js";
export type { PrivateSenderOptions, PrivateSent, PrivateTransaction, Relay } from "./private.js";
export { MAX_CALLDATA, QUOTE_BODY, parseRelayAnswer, submitBody } from "./relay.js";
export type { RelayOutcome, RelayQuote, RelaySubmission } from "./relay.js";
export {
  BASE_FEE_RISE_BPS,
  DEFAULT_CEILING_FACTOR,
  MAX_FEE_HEADROOM_BPS,
  MAX_GAS_EXTRA_BPS,
  MAX_MARGIN_BPS,
  MAX_INSERTION_GAS,
  MAX_PAYMENT_GAS,
  MIN_TIP_WEI,
  QUOTE_TOLERANCE,
  QuoteRefusedError,
  TOKEN_PRICE_TOLERANCE_BPS,
  checkCeiling,
  checkQuote,
  defaultCeilingWei,
  ethPriceBound,
  feeBounds,
  feeFromQuote,
  gasLimit,
  nextBaseFee,
  ownMaxFeePerGas,
  readChainFees,
  tip,
} from "./bounds.js";
export type { ChainReading, Eip1193, FeeBounds } from "./bounds.js";
export { ARB_GAS_INFO, GAS_PRICE_ORACLE, feeModel, ownDataFeeWei } from "./rollup-fee.js";
export type { FeeModel } from "./rollup-fee.js";
export {
  ETHEREUM_RPC_PATH,
  MAX_ANON_RPC_BATCH,
  MAX_ANON_RPC_BODY,
  answerFetchCall,
  runAnonRpcWorker,
  serveAnonRpc,
} from "./anon-rpc.js";
export type {
  AnonFetchCall,
  AnonFetchResponse,
  AnonRequestInit,
  AnonRpcBackend,
  AnonRpcServeOptions,
  AnonRpcWorkerApiLike,
} from "./anon-rpc.js";
export { kohakuPrivateSigner, kohakuProvider, kohakuSigner } from "./kohaku.js";
export type { KohakuProvider, KohakuSigner, KohakuTx, SigningAccount } from "./kohaku.js";
