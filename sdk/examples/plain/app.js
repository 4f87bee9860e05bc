// The example dapp: reads the chain's block number through the NOX mixnet and shows it. Plain ES
// modules, no bundler: the page's import map points the bare specifier "@nox-mixnet/sdk" at the
// installed package, and the SDK finds its own WebAssembly module beside itself
// (`new URL("./nox_wasm.wasm", import.meta.url)` in dist/wasm.js).
//
// Query: ?directory=<URL of GET /topology>&authority=<the directory authority's Ed25519 key, hex>
//        [&cover=<λ_P per second; the SDK's default (2) if absent>]

import { NoxClient, loadModule } from "@nox-mixnet/sdk";

const query = new URLSearchParams(location.search);
const show = (id, text) => {
  document.getElementById(id).textContent = text;
};

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
  show("status", "ok");
  document.getElementById("result").textContent = JSON.stringify({
    block,
    chainId,
    connectMs: t1 - t0,
    roundTripMs: t2 - t1,
    protocol: location.protocol,
    stats: nox.stats(),
  });
  document.body.dataset.done = "ok";
  nox.close();
}

main().catch((error) => {
  show("status", `error: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.done = "error";
});
