// The client core module: crates/nox-wasm's glue behind the SDK's ClientCoreModule.

import type { ClientCoreModule, TopologyNode } from "./client.js";
import { NoxWasm } from "./nox_wasm.mjs";

/**
 * The module's bytes shipped beside this file in the package (`dist/nox_wasm.wasm`): fetched in
 * browsers, read from disk in Node. The literal `new URL("./nox_wasm.wasm", import.meta.url)` is the
 * pattern bundlers (Vite, webpack 5, esbuild with a loader) recognise and copy into the build.
 */
async function packagedModule(): Promise<ArrayBuffer | Uint8Array> {
  const url = new URL("./nox_wasm.wasm", import.meta.url);
  if (url.protocol === "file:") {
    const { readFile } = await import("node:fs/promises");
    return await readFile(url);
  }
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`nox_wasm.wasm: HTTP ${response.status} from ${url.href}`);
  }
  return await response.arrayBuffer();
}

/**
 * Instantiates the module (`nox_wasm.wasm`: its bytes or a compiled
 * WebAssembly.Module; by default the copy shipped in the package) and seeds it
 * with 32 bytes of `crypto.getRandomValues`.
 */
export async function loadModule(source?: BufferSource | WebAssembly.Module): Promise<ClientCoreModule> {
  const m = await NoxWasm.instantiate(source ?? (await packagedModule()));
  const node = (n: {
    id: string;
    layer: number;
    link_key: string;
    websocket: string | null;
    websocket_tls?: boolean;
  }): TopologyNode => {
    const out: TopologyNode = { id: n.id, layer: n.layer, linkKey: n.link_key };
    if (n.websocket !== null) {
      out.websocket = n.websocket;
      out.websocketTls = n.websocket_tls === true;
    }
    return out;
  };
  return {
    verifyTopology: (json, authority, nowUnix) => m.verifyTopology(json, authority, nowUnix),
    topologyNodes: (topology, nowUnix) => m.topologyInfo(topology, nowUnix).nodes.map(node),
    clientNew: (topology, config, nowMs, nowUnix) =>
      m.clientNew(topology, JSON.parse(new TextDecoder().decode(config)) as object, nowMs, nowUnix),
    request: (client, kind, body, expectedReplyLen, nowMs, nowUnix, exit) =>
      m.clientRequest(client, kind, body, expectedReplyLen, nowMs, nowUnix, exit ?? undefined),
    pollTransmit: (client, nowMs, nowUnix) => m.clientPollTransmit(client, nowMs, nowUnix),
    onDownstream: (client, from, record, nowMs, nowUnix) => m.clientOnDownstream(client, from, record, nowMs, nowUnix),
    pollTimeouts: (client, nowMs, nowUnix) => m.clientPollTimeouts(client, nowMs, nowUnix),
    nextDeadline: (client) => m.clientNextDeadline(client),
    stats: (client) => m.clientStats(client),
    setTopology: (client, topology, nowMs, nowUnix) => m.clientSetTopology(client, topology, nowMs, nowUnix),
    gateways: (client) => m.clientGateways(client),
    linkStart: (topology, nodeId, mailbox) => {
      const { handle, first } = m.linkStart(topology, nodeId, mailbox);
      return {
        first,
        link: {
          feed: (bytes) => m.linkFeed(handle, bytes),
          seal: (packet) => m.linkSeal(handle, packet),
          drop: () => m.drop(handle),
        },
      };
    },
    drop: (handle) => m.drop(handle),
  };
}
