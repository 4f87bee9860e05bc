// Where the client's topology comes from and how its nodes are dialled: the directory
// fetch (the first document that verifies), the node's WebSocket URL (refusing plain ws://
// from an https page), and the Unix clock the core's checks use. Moved out of client.ts
// (issue 34); client.ts re-exports `endpointUrl`.

import type { ClientCoreModule, TopologyNode } from "./client-types.js";
import { NoxError } from "./errors.js";

/** The protocol of the page this runs in (`https:`, `http:`), or undefined outside a page. */
function pageProtocol(): string | undefined {
  const location = (globalThis as { location?: { protocol?: unknown } }).location;
  return typeof location?.protocol === "string" ? location.protocol : undefined;
}

/**
 * The URL to dial `info` at: its descriptor's scheme (or the forced one), refused if the page
 * is `https:` and the node serves only plain `ws://`.
 */
export function endpointUrl(id: string, info: TopologyNode, forced?: "ws" | "wss"): string {
  const scheme = forced ?? (info.websocketTls === true ? "wss" : "ws");
  if (scheme === "ws" && pageProtocol() === "https:") {
    throw new NoxError(
      "transport",
      `node ${id.slice(0, 8)} serves only ws://${info.websocket ?? ""}: a page served over https cannot open ` +
        "plain WebSocket connections (mixed content); the network's entries and gateways need wss:// " +
        "(websocket_tls_cert in their node.toml, `nox testnet up --tls`)",
    );
  }
  return `${scheme}://${info.websocket ?? ""}/`;
}

export const nowUnix = (): number => Math.floor(Date.now() / 1000);

/** Where the document comes from, kept for refreshes. */
export interface Directory {
  urls: string[];
  authority: Uint8Array;
  fetch: typeof fetch;
}

/** Fetches the document from the first directory that serves one that verifies; returns its handle. */
export async function fetchTopology(m: ClientCoreModule, directory: Directory): Promise<number> {
  const failures: string[] = [];
  for (const url of directory.urls) {
    try {
      // Called as a plain function: a browser's fetch refuses any `this` but the window.
      const get = directory.fetch;
      const answer = await get(url);
      if (!answer.ok) {
        throw new Error(`HTTP ${answer.status}`);
      }
      const body = new Uint8Array(await answer.arrayBuffer());
      return m.verifyTopology(body, directory.authority, nowUnix());
    } catch (error) {
      failures.push(`${url}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new NoxError("topology", `no directory served a topology that verifies: ${failures.join("; ")}`);
}
