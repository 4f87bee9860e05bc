// A static file server for the example dapps' test: serves a built app's folder over https:// (with a
// certificate from the testnet's throwaway CA) and answers `/topology` with the directory's document,
// so the page fetches it from its own origin. Not part of the examples themselves: any static server
// (and any route to a directory that sends CORS headers) will do.

import { existsSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:https";
import { extname, join, normalize } from "node:path";
import { answerTopology } from "../ts/examples/page-server.mjs";

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };

/**
 * Serves `root` over https with `tls` ({cert, key}, PEM), `/topology` proxied to `directory`, and
 * each path of `extra` ({"/path": bytes}) with those bytes; resolves to the server.
 */
export async function serveStatic(root, { tls, directory, extra = {} }) {
  const server = createServer(tls, async (request, response) => {
    const path = decodeURIComponent(new URL(request.url, "https://x").pathname);
    if (path === "/topology") {
      await answerTopology(directory, response);
      return;
    }
    if (Object.hasOwn(extra, path)) {
      response.writeHead(200, { "content-type": "application/octet-stream" }).end(extra[path]);
      return;
    }
    const file = normalize(join(root, path.endsWith("/") ? `${path}index.html` : path));
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
