// The Kohaku adapters (src/kohaku.ts) against in-memory providers: typed reads from hex answers,
// malformed answers refused (not read as 0), the signer's filled transaction, and the private
// signer's mapping onto a PrivateSender. test/anon-rpc-testnet.test.mjs drives the real mixnet.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseTransaction } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ProviderRpcError, RpcCode, kohakuPrivateSigner, kohakuProvider, kohakuSigner } from "../dist/index.js";

const ACCOUNT = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const TO = "0x000000000000000000000000000000000000c0DE";

function fakeProvider(answers) {
  const sent = [];
  return {
    sent,
    async request({ method, params }) {
      sent.push({ method, params });
      const answer = answers[method];
      if (answer === undefined) throw new ProviderRpcError(-32601, `no ${method}`);
      return typeof answer === "function" ? answer(params) : answer;
    },
  };
}

test("reads convert hex quantities, logs and receipts", async () => {
  const log = { blockNumber: "0x10", topics: ["0xaa"], data: "0x01", address: TO, logIndex: "0x0" };
  const p = fakeProvider({
    eth_chainId: "0x7a69",
    eth_blockNumber: "0x2a",
    eth_getBalance: "0xde0b6b3a7640000",
    eth_getTransactionCount: "0x3",
    eth_getLogs: [log],
    eth_getTransactionReceipt: { blockNumber: "0x10", status: "0x1", gasUsed: "0x5208", logs: [log] },
    eth_call: "0xbeef",
    eth_estimateGas: "0x5208",
  });
  const k = kohakuProvider(p);
  assert.equal(k._internal, p);
  assert.equal(await k.getChainId(), 31337n);
  assert.equal(await k.getBlockNumber(), 42n);
  assert.equal(await k.getBalance(TO), 10n ** 18n);
  assert.equal(await k.getTransactionCount(TO, 16), 3);
  assert.deepEqual(await k.getLogs({ address: TO, fromBlock: 16n, toBlock: "latest" }), [
    { blockNumber: 16n, topics: ["0xaa"], data: "0x01", address: TO },
  ]);
  assert.deepEqual(await k.getTransactionReceipt("0x01"), {
    blockNumber: 16n, status: 1n, gasUsed: 21000n, logs: [{ blockNumber: 16n, topics: ["0xaa"], data: "0x01", address: TO }],
  });
  assert.equal(await k.call({ to: TO, input: "0x1234", block: "0x5" }), "0xbeef");
  assert.equal(await k.estimateGas({ to: TO }), 21000n);
  const byMethod = Object.fromEntries(p.sent.map((s) => [s.method, s.params]));
  assert.deepEqual(byMethod.eth_getTransactionCount, [TO, "0x10"]);
  assert.deepEqual(byMethod.eth_getLogs, [{ address: TO, fromBlock: "0x10", toBlock: "latest" }]);
  assert.deepEqual(byMethod.eth_call, [{ to: TO, input: "0x1234", data: "0x1234" }, "0x5"]);
});

test("a malformed answer is an error, never a silent zero", async () => {
  for (const bad of [null, "", "0x", "12", 5, { hex: "0x1" }]) {
    const k = kohakuProvider(fakeProvider({ eth_getBalance: bad }));
    await assert.rejects(k.getBalance(TO), (e) => e instanceof ProviderRpcError && e.code === RpcCode.Internal, String(bad));
  }
  const k = kohakuProvider(fakeProvider({ eth_getTransactionReceipt: null, eth_getLogs: { logs: [] } }));
  assert.equal(await k.getTransactionReceipt("0x01"), null);
  await assert.rejects(k.getLogs({}), (e) => e.code === RpcCode.Internal);
});

test("the signer fills, signs and broadcasts a raw EIP-1559 transaction", async () => {
  const p = fakeProvider({
    eth_chainId: "0x7a69",
    eth_getTransactionCount: "0x7",
    eth_getBlockByNumber: { baseFeePerGas: "0x3b9aca00" },
    eth_maxPriorityFeePerGas: "0x5",
    eth_estimateGas: "0x5300",
    eth_sendRawTransaction: (params) => `0x${"ab".repeat(32)}`,
  });
  const hash = await kohakuSigner(p, ACCOUNT).sendTransaction({ to: TO, data: "0x12", value: 3n });
  assert.equal(hash, `0x${"ab".repeat(32)}`);
  const raw = p.sent.find((s) => s.method === "eth_sendRawTransaction").params[0];
  const tx = parseTransaction(raw);
  assert.deepEqual([tx.chainId, tx.nonce, tx.to.toLowerCase(), tx.data, tx.value, tx.gas], [31337, 7, TO.toLowerCase(), "0x12", 3n, 0x5300n]);
  assert.deepEqual([tx.maxFeePerGas, tx.maxPriorityFeePerGas], [2_000_000_005n, 5n]);
  await assert.rejects(kohakuSigner(p, ACCOUNT).sendTransaction({ to: "0x12", data: "0x", value: 0n }), (e) => e.code === RpcCode.InvalidParams);
  await assert.rejects(kohakuSigner(p, ACCOUNT).sendTransaction({ to: TO, data: "0x1", value: 0n }), (e) => e.code === RpcCode.InvalidParams);
});

test("the private signer sends through a PrivateSender and has no account", async () => {
  const sent = [];
  const signer = kohakuPrivateSigner({
    async send(tx) {
      sent.push(tx);
      return { txHash: "0xfeed" };
    },
  });
  assert.equal(await signer.sendTransaction({ to: TO, data: "0x", value: 5n }), "0xfeed");
  assert.equal(await signer.sendTransaction({ to: TO, data: "0xabcd", value: 0n }), "0xfeed");
  assert.deepEqual(sent, [{ to: TO, value: 5n }, { to: TO, data: "0xabcd" }]);
  await assert.rejects(signer.getAddress(), (e) => e.code === RpcCode.UnsupportedMethod);
  await assert.rejects(signer.signMessage("hi"), (e) => e.code === RpcCode.UnsupportedMethod);
});
