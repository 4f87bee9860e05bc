// Types of crates/nox-wasm/js/nox_wasm.mjs (the module's JS glue, copied next to
// this file at build time): the part the SDK uses.

export declare const Status: Readonly<Record<string, number>>;

export declare class NoxWasmError extends Error {
  readonly code: number;
  readonly status: string;
}

export declare class NoxWasm {
  static instantiate(
    source: BufferSource | WebAssembly.Module,
    options?: { randomBytes?: (n: number) => Uint8Array },
  ): Promise<NoxWasm>;
  verifyTopology(json: Uint8Array | string, authority: Uint8Array, nowUnix?: number): number;
  topologyInfo(
    handle: number,
    nowUnix?: number,
  ): {
    fingerprint: string;
    layers: number;
    client_epoch: number;
    nodes: { id: string; layer: number; link_key: string; websocket: string | null; websocket_tls: boolean; pow_difficulty: number }[];
  };
  clientNew(
    topology: number,
    config: object,
    nowMs?: number,
    nowUnix?: number,
  ): { handle: number; gateway: Uint8Array; mailbox: Uint8Array };
  clientRequest(
    client: number,
    kind: number,
    body: Uint8Array,
    expectedReplyLen: number,
    nowMs?: number,
    nowUnix?: number,
    exit?: Uint8Array,
  ): { id: bigint; packets: { entry: Uint8Array; packet: Uint8Array }[] };
  clientPollTransmit(client: number, nowMs?: number, nowUnix?: number): { entry: Uint8Array; packet: Uint8Array } | null;
  clientOnDownstream(
    client: number,
    from: Uint8Array | null,
    record: Uint8Array,
    nowMs?: number,
    nowUnix?: number,
  ): { id: bigint; response?: { status: number; body: Uint8Array }; error?: string } | null;
  clientPollTimeouts(
    client: number,
    nowMs?: number,
    nowUnix?: number,
  ): { id: bigint; response?: { status: number; body: Uint8Array }; error?: string }[];
  clientNextDeadline(client: number): number | null;
  clientStats(client: number): Record<string, number>;
  clientSetTopology(client: number, topology: number, nowMs?: number, nowUnix?: number): Uint8Array | null;
  clientGateways(client: number): Uint8Array[];
  linkStart(topology: number, node: Uint8Array, mailbox: Uint8Array | null): { handle: number; first: Uint8Array };
  linkFeed(handle: number, bytes: Uint8Array): { established: boolean; send: Uint8Array; records: Uint8Array[] };
  linkSeal(handle: number, packet: Uint8Array): Uint8Array;
  drop(handle: number): void;
  walletAddress(seed: Uint8Array): string;
  walletOpenNote(
    seed: Uint8Array,
    ciphertext: Uint8Array,
    asset: Uint8Array,
    commitment: Uint8Array,
  ): { result: "mine" | "not_mine" | "corrupt"; value?: string; blinding?: string };
  walletBalances(viewJson: string | Uint8Array): {
    root: string;
    next_leaf: number;
    assets: { asset: string; spendable: string; pending: string; largest: string; largest_pair: string; notes: number }[];
  };
  walletPrepare(
    seed: Uint8Array,
    viewJson: string | Uint8Array | null,
    request: object | string,
  ): { handle: number; description: import("./prover.js").PreparedDescription };
  loadProvingKey(bytes: Uint8Array, options?: { uncompressed?: boolean }): number;
  provingKeyBytes(key: number): Uint8Array;
  proveTransfer(key: number, prepared: number): { proof: Uint8Array; publicInputs: Uint8Array[]; bytes: Uint8Array };
  splitPrepare(prepared: number): Uint8Array;
  splitPart(key: number, prepared: Uint8Array, k: number, n: number): Uint8Array;
  splitFinish(key: number, prepared: Uint8Array, parts: Uint8Array[]): { proof: Uint8Array; publicInputs: Uint8Array[]; bytes: Uint8Array };
  payExecutionHash(action: { target: string; data: string; gas: number; fee: string }): Uint8Array;
  payDataFeeSample(pool: string, actionLen: number): Uint8Array;
  payBundle(
    description: object | string,
    proof: Uint8Array,
    action: { pool: string; target: string; data: string; gas: number },
  ): Uint8Array;
  walletSealKey(seed: Uint8Array, passphrase: string | Uint8Array): Uint8Array;
  walletOpenKey(sealed: Uint8Array, passphrase: string | Uint8Array): Uint8Array;
  walletSealState(seed: Uint8Array, viewJson: string): Uint8Array;
  walletOpenState(seed: Uint8Array, sealed: Uint8Array): string;
  walletSync(seed: Uint8Array, viewJson: string | null, logs: unknown[], pool: Uint8Array, lastBlock: number | bigint): string;
}
