// NOX through the wallet standards against a real multi-process testnet (`nox testnet up`, Anvil,
// exits forwarding JSON-RPC): as an anon-rpc worker (a host's fetch to /ethereum-rpc, viem's http
// transport on the worker's fetch: a read, and a locally signed transaction broadcast and mined),
// and behind Kohaku's EthereumProvider/TxSigner (reads, a send filled, signed and broadcast
// through the mixnet, its receipt). The private send of Kohaku's TxSigner (kohakuPrivateSigner)
// is covered at the unit level in test/kohaku.test.mjs; a paid private send needs a shielded
// deposit and a proof (test/private.test.mjs covers that path).
//
// Needs the `nox` binary and the module as test/testnet.test.mjs.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { createPublicClient, createWalletClient, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import WebSocket from "ws";
import { ETHEREUM_RPC_PATH, NoxClient, kohakuProvider, kohakuSigner, loadModule, runAnonRpcWorker } from "../dist/index.js";
import { inProcessHarness } from "./anon-rpc-harness.mjs";
import { WASM, startTestnet } from "./testnet-helper.mjs";

// Anvil's second and third default accounts (public test keys; testnet.test.mjs uses the first).
const HOST_KEY = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const KOHAKU_KEY = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const URL_RPC = `http://nox.anon${ETHEREUM_RPC_PATH}`;

let net;
let harness;
let worker;
let stop;
let client;

before(async () => {
  net = startTestnet({ prefix: "nox-sdk-anon-", portBase: 7_000, stride: 20 });
  // The worker's config is plain data (structured-cloneable, opaque to the harness); the module
  // and WebSocket are the worker bundle's own.
  harness = inProcessHarness({ directory: net.directoryUrl(), authorityKey: net.authority(), coverRate: 0 });
  const module = await loadModule(readFileSync(WASM));
  stop = new AbortController();
  worker = runAnonRpcWorker(
    harness.api,
    async (config) => NoxClient.connect({ ...config, module, requestTimeoutMs: 20_000, WebSocket }),
    { signal: stop.signal },
  );
  await harness.ready;
  client = await NoxClient.connect({
    directory: net.directoryUrl(),
    authorityKey: net.authority(),
    module,
    coverRate: 0,
    requestTimeoutMs: 20_000,
    WebSocket,
  });
});

after(async () => {
  stop?.abort();
  await worker;
  client?.close();
  net?.down();
});

test("anon-rpc: a host's fetch to /ethereum-rpc is answered through the mixnet", async () => {
  const response = await harness.fetch(URL_RPC, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify([
      { jsonrpc: "2.0", id: 1, method: "eth_chainId" },
      { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [HOST_KEY.address, "latest"] },
    ]),
  });
  assert.equal(response.status, 200);
  const [chainId, balance] = await response.json();
  assert.equal(chainId.result, "0x7a69");
  assert.ok(BigInt(balance.result) > parseEther("1"), JSON.stringify(balance));
});

test("anon-rpc: viem on the worker's fetch sends a locally signed transaction, mined", async () => {
  // worker.fetch used as a free function (§5: it must be this-bound).
  const transport = http(URL_RPC, { fetchFn: harness.fetch, timeout: 60_000 });
  const chain = createPublicClient({ transport });
  const wallet = createWalletClient({ account: HOST_KEY, transport });
  const to = "0x000000000000000000000000000000000000bEEF";
  const before = await chain.getBalance({ address: to });
  const hash = await wallet.sendTransaction({ to, value: parseEther("0.25"), chain: null });
  const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 250, timeout: 60_000 });
  assert.equal(receipt.status, "success");
  assert.equal(await chain.getBalance({ address: to }), before + parseEther("0.25"));
});

test("Kohaku: EthereumProvider reads and a TxSigner send through the mixnet", async () => {
  const provider = kohakuProvider(client.provider(), { pollMs: 250 });
  assert.equal(await provider.getChainId(), 31337n);
  assert.equal(typeof (await provider.getBlockNumber()), "bigint");
  assert.ok((await provider.getGasPrice()) > 0n);
  assert.equal(await provider.getCode("0x000000000000000000000000000000000000c0DE"), "0x");
  const signer = kohakuSigner(client.provider(), KOHAKU_KEY);
  assert.equal(await signer.getAddress(), KOHAKU_KEY.address);
  const to = "0x000000000000000000000000000000000000c0DE";
  const nonce = await provider.getTransactionCount(KOHAKU_KEY.address);
  const hash = await signer.sendTransaction({ to, data: "0x", value: parseEther("0.125") });
  await provider.waitForTransaction(hash);
  const receipt = await provider.getTransactionReceipt(hash);
  assert.equal(receipt.status, 1n);
  assert.ok(receipt.gasUsed >= 21_000n);
  assert.equal(await provider.getBalance(to), parseEther("0.125"));
  assert.equal(await provider.getTransactionCount(KOHAKU_KEY.address), nonce + 1);
  const logs = await provider.getLogs({ fromBlock: receipt.blockNumber, toBlock: receipt.blockNumber, address: to });
  assert.deepEqual(logs, []);
});
