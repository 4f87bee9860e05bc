// The EIP-1193 provider against an in-memory requester that plays the exit and
// its upstream (the multi-process testnet tests cover the real path).
import assert from "node:assert/strict";
import { test } from "node:test";
import { createPublicClient, custom } from "viem";
import { NoxError, NoxProvider, NoxRefusedError, ProviderRpcError, RpcCode, submitBody } from "../dist/index.js";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** A requester answering JSON-RPC like an upstream node; records what it was sent. */
function fakeExit(answer) {
  const sent = [];
  return {
    sent,
    async request(kind, body, options) {
      const request = JSON.parse(decoder.decode(body));
      sent.push({ kind, request, options });
      const reply = await answer(request);
      return encoder.encode(JSON.stringify({ jsonrpc: "2.0", id: request.id, ...reply }));
    },
  };
}

test("viem reads the block number and a balance through the provider", async () => {
  const exit = fakeExit(async (request) => {
    switch (request.method) {
      case "eth_blockNumber":
        return { result: "0x2a" };
      case "eth_getBalance":
        return { result: "0xde0b6b3a7640000" };
      case "eth_chainId":
        return { result: "0x7a69" };
      default:
        return { error: { code: -32601, message: `no ${request.method}` } };
    }
  });
  const client = createPublicClient({ transport: custom(new NoxProvider(exit)) });
  assert.equal(await client.getBlockNumber(), 42n);
  const balance = await client.getBalance({ address: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" });
  assert.equal(balance, 10n ** 18n);
  assert.deepEqual(
    exit.sent.map((s) => s.request.method),
    ["eth_blockNumber", "eth_getBalance"],
  );
  // Every call goes out as an anonymous json-rpc request with the same id: ids link nothing.
  for (const s of exit.sent) {
    assert.equal(s.kind, "json-rpc");
    assert.equal(s.request.id, 1);
    assert.equal(s.options.expectedReplyLen, 16 * 1024);
  }
});

test("upstream JSON-RPC errors keep their code, message and data", async () => {
  const exit = fakeExit(async () => ({ error: { code: 3, message: "execution reverted", data: "0x08c379a0" } }));
  const provider = new NoxProvider(exit);
  await assert.rejects(provider.request({ method: "eth_call", params: [{}, "latest"] }), (error) => {
    assert.ok(error instanceof ProviderRpcError);
    assert.equal(error.code, 3);
    assert.equal(error.message, "execution reverted");
    assert.equal(error.data, "0x08c379a0");
    return true;
  });
});

test("key-holding and push methods are refused locally and never sent", async () => {
  const exit = fakeExit(async () => ({ result: null }));
  const provider = new NoxProvider(exit);
  assert.deepEqual(await provider.request({ method: "eth_accounts" }), []);
  for (const [method, code] of [
    ["eth_requestAccounts", RpcCode.Unauthorized],
    ["eth_sendTransaction", RpcCode.UnsupportedMethod],
    ["personal_sign", RpcCode.UnsupportedMethod],
    ["eth_signTypedData_v4", RpcCode.UnsupportedMethod],
    ["eth_subscribe", RpcCode.UnsupportedMethod],
    ["wallet_switchEthereumChain", RpcCode.UnsupportedMethod],
  ]) {
    await assert.rejects(provider.request({ method, params: [] }), (error) => error.code === code, method);
  }
  assert.equal(exit.sent.length, 0);
});

test("client failures map to EIP-1193 codes with the cause kept", async () => {
  const cases = [
    [new NoxError("timeout", "no reply within 30000 ms"), RpcCode.Internal],
    [new NoxRefusedError("forbidden", "method not allowed"), RpcCode.ResourceUnavailable],
    [new NoxError("transport", "gateway link closed"), RpcCode.Disconnected],
    [new NoxError("topology", "signature does not verify"), RpcCode.Disconnected],
  ];
  for (const [failure, code] of cases) {
    const provider = new NoxProvider({
      async request() {
        throw failure;
      },
    });
    await assert.rejects(provider.request({ method: "eth_blockNumber" }), (error) => {
      assert.ok(error instanceof ProviderRpcError);
      assert.equal(error.code, code);
      assert.equal(error.cause, failure);
      assert.equal(error.data.nox, failure.code);
      return true;
    });
  }
});

test("bad input is refused before anything is sent", async () => {
  const exit = fakeExit(async () => ({ result: "0x1" }));
  const provider = new NoxProvider(exit, { maxRequestBytes: 1024 });
  await assert.rejects(provider.request({ method: "eth_call", params: ["x".repeat(2000)] }), (error) => {
    return error.code === RpcCode.InvalidParams && /exceeds/.test(error.message);
  });
  await assert.rejects(provider.request({}), (error) => error.code === RpcCode.InvalidParams);
  await assert.rejects(provider.request({ method: "eth_call", params: 5 }), (error) => error.code === RpcCode.InvalidParams);
  const cyclic = [];
  cyclic.push(cyclic);
  await assert.rejects(provider.request({ method: "eth_call", params: cyclic }), (error) => error.code === RpcCode.InvalidParams);
  assert.equal(exit.sent.length, 0);
});

test("malformed exit replies are errors, not results", async () => {
  for (const raw of ["not json", "[1,2]", "{}", "null"]) {
    const provider = new NoxProvider({
      async request() {
        return encoder.encode(raw);
      },
    });
    await assert.rejects(provider.request({ method: "eth_blockNumber" }), (error) => {
      return error instanceof ProviderRpcError && error.code === RpcCode.Internal;
    }, raw);
  }
});

test("connect, chainChanged and disconnect events", async () => {
  let chain = "0x1";
  const provider = new NoxProvider(fakeExit(async () => ({ result: chain })));
  const events = [];
  provider.on("connect", (info) => events.push(["connect", info.chainId]));
  provider.on("chainChanged", (id) => events.push(["chainChanged", id]));
  provider.on("disconnect", (error) => events.push(["disconnect", error.code]));
  await provider.request({ method: "eth_chainId" });
  await provider.request({ method: "eth_chainId" });
  chain = "0x7a69";
  await provider.request({ method: "eth_chainId" });
  provider.disconnect(new NoxError("closed", "client closed"));
  provider.disconnect(new NoxError("closed", "again"));
  assert.deepEqual(events, [
    ["connect", "0x1"],
    ["chainChanged", "0x7a69"],
    ["disconnect", RpcCode.Disconnected],
  ]);
  await assert.rejects(provider.request({ method: "eth_chainId" }), (error) => error.code === RpcCode.Disconnected);
});

test("relay submit bodies follow relay.md §2 byte for byte, and bad input is refused", () => {
  const executor = "0x" + "11".repeat(20);
  const relayer = "0x" + "2A".repeat(20);
  const body = submitBody({ chainId: 31337n, executor, relayer, calldata: Uint8Array.of(9, 8, 7), payOnRevert: true, simulateOnly: true });
  assert.equal(body.length, 1 + 1 + 8 + 20 + 20 + 3);
  assert.deepEqual([...body.subarray(0, 10)], [0x02, 0x03, 0, 0, 0, 0, 0, 0, 0x7a, 0x69]);
  assert.deepEqual([...body.subarray(10, 30)], Array(20).fill(0x11));
  assert.deepEqual([...body.subarray(30, 50)], Array(20).fill(0x2a));
  assert.deepEqual([...body.subarray(50)], [9, 8, 7]);
  assert.equal(submitBody({ chainId: 1, executor, relayer, calldata: new Uint8Array(0) })[1], 0, "no flags");
  for (const bad of [
    { chainId: 1, executor: "0x1234", relayer, calldata: new Uint8Array(1) },
    { chainId: 1, executor, relayer: relayer.slice(2), calldata: new Uint8Array(1) },
    { chainId: -1, executor, relayer, calldata: new Uint8Array(1) },
    { chainId: 2n ** 64n, executor, relayer, calldata: new Uint8Array(1) },
    { chainId: 1, executor, relayer, calldata: new Uint8Array(32_769) },
  ]) {
    assert.throws(() => submitBody(bad), (error) => error instanceof NoxError && error.code === "bad-input");
  }
});

test("with a shielded wallet's sender, eth_sendTransaction and sendPrivate send privately; without, 4200", async () => {
  const exit = fakeExit(async () => ({ error: { code: -32601, message: "nothing goes to the exit" } }));
  const sent = [];
  const hash = `0x${"ab".repeat(32)}`;
  const sender = {
    async send(tx) {
      sent.push(tx);
      if (tx.to === "0x0000000000000000000000000000000000000bad") {
        throw new NoxError("refused", "the exit's quote is refused");
      }
      return { txHash: hash, fee: 7n };
    },
  };
  const to = "0x00000000000000000000000000000000000000aa";
  // viem's sendTransaction with no account (the action's sender is the relayer's executor).
  const { createWalletClient } = await import("viem");
  const wallet = createWalletClient({ transport: custom(new NoxProvider(exit, { private: sender })) });
  assert.equal(await wallet.sendTransaction({ account: null, chain: null, to, value: 5n }), hash);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].to, to);
  assert.equal(BigInt(sent[0].value), 5n);
  assert.equal(exit.sent.length, 0, "a private transaction sends no eth_sendTransaction to the exit");
  // The typed call, and a refusal mapped like any client failure.
  const provider = new NoxProvider(exit, { private: sender });
  assert.deepEqual(await provider.sendPrivate({ to, data: "0x" }), { txHash: hash, fee: 7n });
  await assert.rejects(provider.request({ method: "eth_sendTransaction", params: [{ to: "0x0000000000000000000000000000000000000bad" }] }), (error) => {
    assert.ok(error instanceof ProviderRpcError);
    assert.equal(error.code, RpcCode.ResourceUnavailable);
    return true;
  });
  await assert.rejects(provider.request({ method: "eth_sendTransaction", params: [] }), (error) => error.code === RpcCode.InvalidParams);
  // Without a wallet both are refused, as before.
  const plain = new NoxProvider(exit);
  await assert.rejects(plain.request({ method: "eth_sendTransaction", params: [{ to }] }), (error) => error.code === RpcCode.UnsupportedMethod);
  await assert.rejects(plain.sendPrivate({ to }), (error) => error.code === RpcCode.UnsupportedMethod);
  assert.equal(sent.length, 3);
});
