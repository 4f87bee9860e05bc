// The SDK against a real multi-process testnet (`nox testnet up`: a directory,
// one node per layer, Anvil with the registry, exits forwarding JSON-RPC to
// Anvil): the WebAssembly client core talks to the entry and the gateway over
// WebSocket. An echo round trip; viem's getBlockNumber and getBalance through
// the EIP-1193 provider; a transaction signed by a local account, broadcast
// with eth_sendRawTransaction through the mixnet, and mined.
//
// Needs the `nox` binary (NOX_BIN, default <target>/debug/nox) and the module
// (NOX_WASM, default <target>/wasm32-unknown-unknown/release/nox_wasm.wasm),
// which scripts/test.sh builds first.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createPublicClient, createWalletClient, custom, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import WebSocket from "ws";
import { NoxClient, loadModule } from "../dist/index.js";

const target = process.env.CARGO_TARGET_DIR ?? join(import.meta.dirname, "../../../target");
const NOX = process.env.NOX_BIN ?? join(target, "debug/nox");
const WASM = process.env.NOX_WASM ?? join(target, "wasm32-unknown-unknown/release/nox_wasm.wasm");
// Anvil's first default account (a public test key).
const FUNDED = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");

let dir;
let client;

before(() => {
  assert.ok(existsSync(NOX), `the nox binary is missing at ${NOX} (cargo build -p nox, or set NOX_BIN)`);
  assert.ok(existsSync(WASM), `the module is missing at ${WASM} (see crates/nox-wasm/README.md, or set NOX_WASM)`);
  dir = mkdtempSync(join(tmpdir(), "nox-sdk-"));
  const base = String(31_000 + (process.pid % 100) * 40);
  execFileSync(
    NOX,
    ["testnet", "up", "--dir", dir, "--base-port", base, "--nodes-per-layer", "1", "--mean-delay-ms", "1",
      "--loop-rate", "0", "--drop-rate", "0"],
    { stdio: ["ignore", "inherit", "inherit"], timeout: 240_000 },
  );
});

after(() => {
  client?.close();
  if (dir !== undefined) {
    try {
      execFileSync(NOX, ["testnet", "down", "--dir", dir], { stdio: "ignore", timeout: 60_000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

async function connect(coverRate) {
  const module = await loadModule(readFileSync(WASM));
  return NoxClient.connect({
    directory: `http://${readFileSync(join(dir, "directory.addr"), "utf8").trim()}/topology`,
    authorityKey: readFileSync(join(dir, "authority.pub"), "utf8").trim(),
    module,
    coverRate,
    requestTimeoutMs: 20_000,
    WebSocket,
  });
}

test("an echo crosses the mixnet from the WebAssembly client over WebSocket", async () => {
  client = await connect(0);
  const text = "hello from the browser client core";
  const reply = await client.request("echo", new TextEncoder().encode(text));
  assert.equal(new TextDecoder().decode(reply), text);
  const stats = client.stats();
  assert.equal(stats.completed, 1, JSON.stringify(stats));
  assert.equal(stats.cover_packets, 0, "cover off: no cover packet");
});

test("viem reads chain state through the EIP-1193 provider", async () => {
  const chain = createPublicClient({ transport: custom(client.provider()) });
  const height = await chain.getBlockNumber();
  assert.equal(typeof height, "bigint");
  const balance = await chain.getBalance({ address: FUNDED.address });
  assert.ok(balance > parseEther("1"), `balance ${balance}`);
  assert.equal(await chain.getChainId(), 31337);
});

test("a transaction signed locally is broadcast through the mixnet and mined", async () => {
  const transport = custom(client.provider());
  const chain = createPublicClient({ transport });
  const wallet = createWalletClient({ account: FUNDED, transport });
  const to = "0x000000000000000000000000000000000000dEaD";
  const before = await chain.getBalance({ address: to });
  const hash = await wallet.sendTransaction({ to, value: parseEther("0.5"), chain: null });
  const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 250, timeout: 60_000 });
  assert.equal(receipt.status, "success");
  assert.equal(await chain.getBalance({ address: to }), before + parseEther("0.5"));
});

test("with cover traffic on (the default rate), a request still completes", async () => {
  const covered = await connect(undefined);
  try {
    const reply = await covered.request("echo", new TextEncoder().encode("covered"));
    assert.equal(new TextDecoder().decode(reply), "covered");
    // Idle, the client keeps sending: empty slots carry cover (λ_P = 2/s by default).
    const deadline = Date.now() + 10_000;
    let stats = covered.stats();
    while (stats.cover_packets < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      stats = covered.stats();
    }
    assert.ok(stats.cover_packets >= 3, JSON.stringify(stats));
    assert.equal(stats.real_packets, 1, JSON.stringify(stats));
  } finally {
    covered.close();
  }
});
