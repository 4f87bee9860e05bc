// Wallet sync through the real mixnet into IndexedDB, in headless Chromium (issue 31): the first
// `--count` notes of crates/nox-wallet/benches/scan.rs (written by `sync_notes`, as bench/sync.mjs
// reads them; 1 % the wallet's) put on Anvil as the pool's `Deposited` logs, one per block, by a
// log-emitting contract installed at a fresh pool address (`anvil_setCode`); a page of a 3-node
// testnet's client (NoxClient, main thread) reads them with `eth_getLogs` through the exit's
// JSON-RPC — never a direct RPC — into a sealed wallet kept in IndexedDB whose pages go to a
// WalletSyncWorker. Then a second page (same profile: a reload) restores the wallet from IndexedDB,
// three more blocks are mined, and it syncs again: it must read only the new blocks and see the
// same balance. Each run must find exactly the notes an in-memory sync of the same logs finds.
//
//   node sdk/ts/bench/sync-mixnet.mjs --notes /tmp/notes.json [--count 1000] [--reply-len 16384]
//     [--cover 0] [--out bench/data/browser-sync-mixnet.json]
// --reply-len: the provider's expectedReplyLen (SURB budget per request); --cover: the client's
// λ_P (0: off; "default": the shipped rate). Needs NOX_BIN, NOX_WASM (as the tests).

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { keccak256, toHex } from "viem";
import { servePage } from "../examples/page-server.mjs";
import { NoxWallet } from "../dist/index.js";
import { WASM, startTestnet } from "../test/testnet-helper.mjs";

const { values: args } = parseArgs({
  options: {
    notes: { type: "string" },
    count: { type: "string" },
    "reply-len": { type: "string", default: "16384" },
    cover: { type: "string", default: "0" },
    out: { type: "string" },
  },
});
if (args.notes === undefined) throw new Error("--notes is required (sync_notes' output)");
const all = JSON.parse(readFileSync(args.notes, "utf8"));
const count = args.count === undefined ? all.notes.length : Number(args.count);
if (!Number.isInteger(count) || count < 1 || count > all.notes.length) throw new Error(`--count: 1..${all.notes.length}`);
const replyLen = Number(args["reply-len"]);
const coverRate = args.cover === "default" ? undefined : Number(args.cover);
const POOL = "0x00000000000000000000000000000000000000aa";
const DEPOSITED = keccak256(toHex("Deposited(uint256,uint256,address,uint256,bytes)"));
const word = (n) => BigInt(n).toString(16).padStart(64, "0");
// Anvil's account #9 (a public test key's address; Anvil's accounts are unlocked).
const SENDER = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";
// Emits LOG3(topics = calldata[0..96], data = calldata[96..]):
//   size = CALLDATASIZE − 0x60; CALLDATACOPY(0, 0x60, size); LOG3(0, size, cd[0], cd[32], cd[64]).
const EMITTER = "0x606036038060606000376040356020356000358360" + "00a300";

const notes = all.notes.slice(0, count);
/** The calldata of note i: its topics and the event's data. */
const calldata = (n) => {
  const memo = n.memo.padEnd(Math.ceil(n.memo.length / 64) * 64, "0");
  return `0x${DEPOSITED.slice(2)}${word(n.queue_index)}${word(0)}${n.commitment}${word(n.amount)}${word(0x60)}${word(n.memo.length / 2)}${memo}`;
};

/** What an in-memory sync of the same logs finds (the expected balance of the first `count` notes). */
async function expected() {
  const logs = notes.map((n, i) => {
    const data = calldata(n).slice(2 + 3 * 64);
    return { address: POOL, topics: [DEPOSITED, `0x${word(n.queue_index)}`, `0x${word(0)}`], data: `0x${data}`, blockNumber: `0x${(i + 1).toString(16)}`, logIndex: "0x0", removed: false };
  });
  const provider = {
    request: async ({ method, params }) =>
      method === "eth_blockNumber" ? `0x${logs.length.toString(16)}` : logs.slice(Number(params[0].fromBlock) - 1, Number(params[0].toBlock)),
  };
  const wallet = await NoxWallet.open({ seed: Buffer.from(all.seed, "hex"), module: readFileSync(WASM), provider, pool: POOL });
  await wallet.sync();
  const b = wallet.balance();
  wallet.close();
  return String(b.spendable + b.pending);
}

async function rpc(url, calls) {
  const body = calls.map(([method, params], id) => ({ jsonrpc: "2.0", id, method, params }));
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const answers = await response.json();
  for (const a of answers) if (a.error) throw new Error(`${url}: ${JSON.stringify(a.error)}`);
  return answers.sort((a, b) => a.id - b.id).map((a) => a.result);
}

const want = await expected();
const net = startTestnet({ prefix: "nox-sdk-syncmix-", portBase: 23_000, stride: 40 });
const report = { what: "wallet sync through the mixnet into IndexedDB in headless Chromium", notes: count, reply_len: replyLen, cover_rate: coverRate ?? "default", expected_wei: want };
try {
  const chainUrl = JSON.parse(readFileSync(join(net.dir, "chain.json"), "utf8")).rpc_url;
  await rpc(chainUrl, [["anvil_setCode", [POOL, EMITTER]]]);
  const [before] = await rpc(chainUrl, [["eth_blockNumber", []]]);
  const fromBlock = Number(BigInt(before)) + 1;
  let t = performance.now();
  // One transaction, then one block, per note (Anvil's automine stalled after ~1,000 transactions
  // sent back to back: it is switched off for the fill and on again after).
  const nonce = Number(BigInt((await rpc(chainUrl, [["eth_getTransactionCount", [SENDER, "pending"]]]))[0]));
  await rpc(chainUrl, [["evm_setAutomine", [false]]]);
  for (const [i, n] of notes.entries()) {
    await rpc(chainUrl, [["eth_sendTransaction", [{ from: SENDER, to: POOL, data: calldata(n), gas: "0x30000", nonce: `0x${(nonce + i).toString(16)}` }]]]);
    await rpc(chainUrl, [["evm_mine", []]]);
  }
  await rpc(chainUrl, [["evm_setAutomine", [true]]]);
  for (let tries = 0; ; tries++) {
    const [mined] = await rpc(chainUrl, [["eth_getTransactionCount", [SENDER, "latest"]]]);
    if (Number(BigInt(mined)) === nonce + count) break;
    if (tries > 600) throw new Error(`only ${Number(BigInt(mined)) - nonce} of ${count} transactions mined`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const [head] = await rpc(chainUrl, [["eth_blockNumber", []]]);
  report.chain = { from_block: fromBlock, head: Number(BigInt(head)), fill_ms: Math.round(performance.now() - t) };
  // One log per block, all present (read directly: the setup's check, not the measurement).
  let onChain = 0;
  let jsonBytes = 0;
  const blocks = new Set();
  for (let b = fromBlock; b <= report.chain.head; b += 1000) {
    const [page] = await rpc(chainUrl, [["eth_getLogs", [{ address: POOL, fromBlock: `0x${b.toString(16)}`, toBlock: `0x${Math.min(b + 999, report.chain.head).toString(16)}` }]]]);
    onChain += page.length;
    for (const l of page) blocks.add(l.blockNumber);
    jsonBytes += JSON.stringify(page).length;
  }
  if (onChain !== count) throw new Error(`${onChain} logs on chain, expected ${count}`);
  report.chain.log_json_bytes_mean = Math.round(jsonBytes / count);
  report.chain.blocks_with_logs = blocks.size;
  console.error(`chain: ${count} logs in ${blocks.size} of the blocks ${fromBlock}..${report.chain.head} (${report.chain.fill_ms} ms), ${report.chain.log_json_bytes_mean} B of JSON per log`);

  const server = await servePage(WASM);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  report.load_before = loadavg();
  report.uptime_before = execFileSync("uptime", { encoding: "utf8" }).trim();
  try {
    const context = await browser.newContext();
    const url = `http://127.0.0.1:${server.address().port}/`;
    const pageArgs = { directory: net.directoryUrl(), authority: net.authority(), pool: POOL, seed: all.seed, fromBlock, replyLen, coverRate, walletId: "bench" };
    // In the page: connect, then a sealed wallet (restore from the notes' seed) in IndexedDB with a
    // sync Worker; every eth_getLogs through the provider is timed.
    const run = async (page, second) =>
      page.evaluate(
        async ({ directory, authority, pool, seed, fromBlock, replyLen, coverRate, walletId, second }) => {
          const sdk = await import("/sdk/index.js");
          const bytes = await (await fetch("/nox_wasm.wasm")).arrayBuffer();
          const module = await WebAssembly.compile(bytes);
          let t = performance.now();
          const options = { directory, authorityKey: authority, module: await sdk.loadModule(module), requestTimeoutMs: 120_000 };
          if (coverRate !== undefined) options.coverRate = coverRate;
          const client = await sdk.NoxClient.connect(options);
          const connectMs = performance.now() - t;
          const reads = client.provider({ expectedReplyLen: replyLen });
          const calls = [];
          const timed = {
            request: async (a) => {
              const t0 = performance.now();
              const entry = { method: a.method };
              if (a.method === "eth_getLogs") entry.range = [Number(BigInt(a.params[0].fromBlock)), Number(BigInt(a.params[0].toBlock))];
              try {
                const out = await reads.request(a);
                if (Array.isArray(out)) entry.logs = out.length;
                return out;
              } catch (e) {
                entry.error = e.data?.status ?? e.message;
                throw e;
              } finally {
                entry.ms = performance.now() - t0;
                calls.push(entry);
              }
            },
          };
          const syncWorker = await sdk.WalletSyncWorker.start({ wasm: module });
          const store = new sdk.IndexedDbWalletStore();
          const passphrase = "bench";
          const { NoxWasm } = await import("/sdk/nox_wasm.mjs");
          const common = { module, provider: timed, pool, passphrase, store, walletId, fromBlock, syncWorker };
          let wallet;
          if (second) {
            wallet = await sdk.NoxWallet.unlock(common);
          } else {
            const seedBytes = Uint8Array.from(seed.match(/../g).map((h) => parseInt(h, 16)));
            const sealed = sdk.sealSeed(await NoxWasm.instantiate(module), seedBytes, passphrase);
            wallet = await sdk.NoxWallet.restore({ ...common, sealed });
          }
          const storedBlock = wallet.lastBlock;
          const storedBalance = wallet.balance();
          t = performance.now();
          let report;
          let error;
          try {
            report = await wallet.sync();
          } catch (e) {
            error = `${e.code ?? ""} ${e.data?.status ?? ""} ${e.message}`;
          }
          const syncMs = performance.now() - t;
          const b = wallet.balance();
          const stats = client.stats?.();
          const lastBlock = wallet.lastBlock;
          wallet.close();
          syncWorker.terminate();
          client.close();
          return {
            connectMs, syncMs, error, report, storedBlock, storedTotal: String(storedBalance.spendable + storedBalance.pending),
            total: String(b.spendable + b.pending), lastBlock, calls, stats, userAgent: navigator.userAgent,
          };
        },
        { ...pageArgs, second },
      );
    const page1 = await context.newPage();
    page1.setDefaultTimeout(1_800_000);
    await page1.goto(url);
    const first = await run(page1, false);
    await page1.close();
    console.error(`page 1: sync ${Math.round(first.syncMs)} ms, ${first.report?.pages} pages (${first.report?.halved} halved), total ${first.total} wei, error ${first.error}`);
    await rpc(chainUrl, [["evm_mine", []], ["evm_mine", []], ["evm_mine", []]]);
    const page2 = await context.newPage();
    page2.setDefaultTimeout(600_000);
    await page2.goto(url);
    const second = await run(page2, true);
    console.error(`page 2: stored at ${second.storedBlock}, sync ${Math.round(second.syncMs)} ms, read ${JSON.stringify(second.calls.filter((c) => c.range).map((c) => c.range))}, total ${second.total}`);
    const getLogs = (r) => r.calls.filter((c) => c.method === "eth_getLogs");
    const answered = (r) => getLogs(r).filter((c) => c.error === undefined);
    report.first = {
      connect_ms: Math.round(first.connectMs), sync_ms: Math.round(first.syncMs), error: first.error ?? null, total_wei: first.total, matches: first.total === want,
      pages: first.report?.pages ?? null, halved: first.report?.halved ?? null, refused_requests: getLogs(first).length - answered(first).length,
      get_logs_ms: answered(first).map((c) => Math.round(c.ms)), blocks_per_page: answered(first).map((c) => c.range[1] - c.range[0] + 1),
      logs_per_page: answered(first).map((c) => c.logs), calls: first.calls.map((c) => ({ ...c, ms: Math.round(c.ms) })),
    };
    report.second = {
      stored_block: second.storedBlock, stored_total_wei: second.storedTotal, sync_ms: Math.round(second.syncMs), total_wei: second.total, matches: second.total === want,
      ranges_read: getLogs(second).map((c) => c.range), only_new_blocks: getLogs(second).every((c) => c.range[0] > first.lastBlock), error: second.error ?? null,
    };
    report.user_agent = first.userAgent;
  } finally {
    report.load_after = loadavg();
    report.uptime_after = execFileSync("uptime", { encoding: "utf8" }).trim();
    await browser.close();
    server.close();
  }
} finally {
  net.down();
}
report.cpu = cpus()[0]?.model;
report.cores = cpus().length;
report.date = new Date().toISOString();
report.commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim();
console.log(JSON.stringify(report, null, 2));
if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
