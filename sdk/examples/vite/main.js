// The example dapp, bundled by Vite: reads the chain's block number through the NOX mixnet and shows it.
// Vite resolves "@nox-mixnet/sdk" from node_modules and copies the module that dist/wasm.js names with
// `new URL("./nox_wasm.wasm", import.meta.url)` into the build (hashed), rewriting the URL.
//
// Query: ?directory=<URL of GET /topology>&authority=<the directory authority's Ed25519 key, hex>
//        [&cover=<λ_P per second; the SDK's default (2) if absent>]
//        [&fixture=<URL of a wallet's {seed, view, request}>&key=<URL of the uncompressed proving key>
//         &workers=<Workers for the proof>]: also proves that transfer with the split prover

import { NoxClient, ProverError, TransferProver, loadModule } from "@nox-mixnet/sdk";
// The module's URL for the prover Worker (Vite emits the same hashed asset loadModule() fetches).
import wasmUrl from "@nox-mixnet/sdk/nox_wasm.wasm?url";

const query = new URLSearchParams(location.search);
const show = (id, text) => {
  document.getElementById(id).textContent = text;
};

/**
 * Starts the transfer prover's Worker (bundled by Vite from the SDK's `new Worker(new URL(...))`)
 * with a key that is not a proving key: the Worker must load, compile the module off the main
 * thread and refuse the key with the module's own error code. A Worker that never started (its
 * script or imports missing from the build) answers nothing: reported after 30 s.
 */
async function proverWorkerAnswers() {
  const t0 = performance.now();
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error("the prover Worker did not answer in 30 s")), 30_000),
  );
  try {
    const prover = await Promise.race([TransferProver.start({ wasm: wasmUrl, key: { bytes: new Uint8Array(64) } }), timeout]);
    prover.terminate();
    return { answered: "started", ms: performance.now() - t0 };
  } catch (error) {
    if (!(error instanceof ProverError)) throw error;
    return { answered: error.code ?? "no-code", message: error.message, ms: performance.now() - t0 };
  }
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const unhex = (text) => new Uint8Array(text.match(/../g).map((b) => parseInt(b, 16)));

/**
 * Proves a private transfer with the split prover: the prover Worker (bundled by Vite) starts
 * `workers − 1` helper Workers itself, from its own script (`location` inside the Worker: the
 * bundled asset), and spreads the proof's multi-scalar multiplications over them; nothing in
 * vite.config.js is about it. `workers` is capped by the cores and, by default, the device's
 * memory (`maxWorkers`; sdk/ts/README.md). A real dapp passes its NoxWallet's seed and view and
 * the published key (`key: { url }`, cached in IndexedDB); the test serves a native wallet's
 * fixture and the key's uncompressed copy.
 */
async function proveSplit(fixtureUrl, keyUrl, workers) {
  const fixture = await (await fetch(fixtureUrl)).json();
  const key = new Uint8Array(await (await fetch(keyUrl)).arrayBuffer());
  const prover = await TransferProver.start({ wasm: wasmUrl, key: { bytes: key, uncompressed: true }, workers });
  try {
    const parts = [];
    const t0 = performance.now();
    const proved = await prover.prove({ seed: unhex(fixture.seed), view: fixture.view, request: fixture.request }, (p) => {
      if (p.stage === "parts") parts.push(`${p.done}/${p.of}`);
    });
    return {
      workers: prover.started.workers,
      helpersMs: prover.started.helpersMs,
      parts,
      proveMs: proved.proveMs,
      wallMs: performance.now() - t0,
      proof: hex(proved.proof) + proved.publicInputs.map(hex).join(""),
    };
  } finally {
    prover.terminate();
  }
}

async function main() {
  const t0 = performance.now();
  const options = {
    directory: query.get("directory") ?? new URL("/topology", location.href).href,
    authorityKey: query.get("authority"),
    module: await loadModule(),
  };
  if (query.has("cover")) options.coverRate = Number(query.get("cover"));
  show("status", "connecting");
  const nox = await NoxClient.connect(options);
  show("gateway", nox.gateway);
  const provider = nox.provider();
  const t1 = performance.now();
  const block = await provider.request({ method: "eth_blockNumber" });
  const t2 = performance.now();
  const chainId = await provider.request({ method: "eth_chainId" });
  show("block", `${Number(block)}`);
  show("chain", `${Number(chainId)}`);
  const prover = await proverWorkerAnswers();
  let split;
  if (query.has("fixture") && query.has("key")) {
    show("status", "proving");
    split = await proveSplit(query.get("fixture"), query.get("key"), Number(query.get("workers") ?? "2"));
    show("proof", `${split.workers} Workers, ${split.proveMs.toFixed(0)} ms`);
  }
  show("status", "ok");
  document.getElementById("result").textContent = JSON.stringify({
    block,
    chainId,
    connectMs: t1 - t0,
    roundTripMs: t2 - t1,
    protocol: location.protocol,
    stats: nox.stats(),
    prover,
    split,
  });
  document.body.dataset.done = "ok";
  nox.close();
}

main().catch((error) => {
  show("status", `error: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.done = "error";
});
