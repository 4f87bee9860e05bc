// Serves this folder's browser.html, the compiled SDK and the module on 127.0.0.1 (a page's own origin),
// for the headless-Chromium test and the round-trip benchmark.

import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";

/** Starts the server; `wasm` is the module's path. Resolves to the listening `http.Server`. */
export async function servePage(wasm) {
  const root = join(import.meta.dirname, "..");
  const server = createServer((request, response) => {
    const path = new URL(request.url, "http://x").pathname;
    const file =
      path === "/" ? [join(root, "examples/browser.html"), "text/html"]
      : path === "/nox_wasm.wasm" ? [wasm, "application/wasm"]
      : /^\/sdk\/[a-z_]+\.(js|mjs)$/.test(path) ? [join(root, "dist", path.slice(5)), "text/javascript"]
      : null;
    if (file === null || !existsSync(file[0])) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": file[1] }).end(readFileSync(file[0]));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
