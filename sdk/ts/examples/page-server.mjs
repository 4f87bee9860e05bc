// Serves this folder's browser.html, the compiled SDK and the module on 127.0.0.1 (a page's own origin),
// for the headless-Chromium test and the round-trip benchmark. With `tls` ({cert, key}, PEM) it serves
// https:// instead, and with `directory` it also answers `/topology` with that directory's document (so an
// https page fetches it from its own origin). With `packages` (e.g. ["viem"]) it also serves those
// installed packages' ES modules from this package's node_modules and, at `/dapp`, a blank page whose
// import map names them (import-map.mjs): a page imports "viem" as a dapp does, nothing from the web.

import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { join } from "node:path";
import { importMap } from "./import-map.mjs";

/**
 * Answers a page's `/topology` with `directory`'s document (502 if the directory does not answer),
 * so an https:// page reads it from its own origin. Shared with sdk/examples/serve.mjs.
 */
export async function answerTopology(directory, response) {
  try {
    const upstream = await fetch(directory);
    response.writeHead(upstream.status, { "content-type": "application/json" }).end(Buffer.from(await upstream.arrayBuffer()));
  } catch {
    response.writeHead(502).end();
  }
}

/**
 * Starts the server; `wasm` is the module's path, `tls` an optional {cert, key} (PEM) to serve
 * https with, `directory` an optional directory URL proxied at `/topology`, `packages` optional
 * bare specifiers served with an import map at `/dapp`. Resolves to the listening server.
 */
export async function servePage(wasm, { tls, directory, packages } = {}) {
  const root = join(import.meta.dirname, "..");
  const modules = packages === undefined ? undefined : importMap(root, packages);
  const handler = async (request, response) => {
    const path = new URL(request.url, "http://x").pathname;
    if (path === "/topology" && directory !== undefined) {
      await answerTopology(directory, response);
      return;
    }
    if (modules !== undefined && path === "/dapp") {
      const map = JSON.stringify(modules.map).replaceAll("<", "\\u003c");
      response
        .writeHead(200, { "content-type": "text/html" })
        .end(`<!doctype html><meta charset="utf-8"><title>NOX dapp</title><script type="importmap">${map}</script>\n`);
      return;
    }
    if (modules?.files.has(path)) {
      response.writeHead(200, { "content-type": "text/javascript" }).end(readFileSync(join(root, path)));
      return;
    }
    const file =
      path === "/" ? [join(root, "examples/browser.html"), "text/html"]
      : path === "/nox_wasm.wasm" ? [wasm, "application/wasm"]
      : /^\/sdk\/[a-z_-]+\.(js|mjs)$/.test(path) ? [join(root, "dist", path.slice(5)), "text/javascript"]
      : null;
    if (file === null || !existsSync(file[0])) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": file[1] }).end(readFileSync(file[0]));
  };
  const server = tls === undefined ? createServer(handler) : createTlsServer(tls, handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
