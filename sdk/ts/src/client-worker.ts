// The dedicated Worker that runs a NoxClient (issue 31): the client core, its WebSockets, its
// cover schedule and its timers live here, off the page's main thread, whose timers a browser
// throttles when the tab is hidden. The page talks to it through `WorkerNoxClient`
// (./client-worker-proxy.ts, which also defines the messages). Runs as a browser module Worker
// (`self`) and as a Node `worker_threads` Worker (`parentPort`).

import { NoxClient, type NoxClientOptions } from "./client.js";
import { NoxError } from "./errors.js";
import type { WebSocketLike } from "./link.js";
import { loadModule } from "./wasm.js";
import { type ClientWorkerReply, type ClientWorkerRequest, READY, toWire } from "./client-worker-proxy.js";
import { workerChannel } from "./worker-port.js";

let client: NoxClient | undefined;

async function moduleSource(wasm: unknown): Promise<BufferSource | WebAssembly.Module | undefined> {
  if (wasm === undefined) return undefined;
  if (typeof wasm === "string") {
    const response = await fetch(wasm);
    if (!response.ok) throw new NoxError("bad-input", `the module: HTTP ${response.status} from ${wasm}`);
    return await response.arrayBuffer();
  }
  return wasm as BufferSource | WebAssembly.Module;
}

async function connect(options: Extract<ClientWorkerRequest, { op: "connect" }>["options"]): Promise<{ gateway: string }> {
  if (client !== undefined) throw new NoxError("bad-input", "this Worker's client is already connected");
  const { wasm, webSocketModule, ...rest } = options;
  let module;
  try {
    module = await loadModule(await moduleSource(wasm));
  } catch (error) {
    if (error instanceof NoxError) throw error;
    throw new NoxError("bad-input", `the module does not load: ${String(error)}`, { cause: error });
  }
  const settings: NoxClientOptions = { ...rest, module };
  if (webSocketModule !== undefined) {
    const imported = (await import(webSocketModule)) as { default?: WebSocketLike; WebSocket?: WebSocketLike };
    const WebSocketImpl = imported.WebSocket ?? imported.default;
    if (WebSocketImpl === undefined) throw new NoxError("bad-input", `${webSocketModule} exports no WebSocket`);
    settings.WebSocket = WebSocketImpl;
  }
  client = await NoxClient.connect(settings);
  return { gateway: client.gateway };
}

function connected(): NoxClient {
  if (client === undefined) throw new NoxError("closed", "the Worker's client is not connected");
  return client;
}

async function handle(msg: ClientWorkerRequest): Promise<unknown> {
  switch (msg.op) {
    case "connect":
      return await connect(msg.options);
    case "request":
      return await connected().request(msg.kind, msg.body, msg.options);
    case "stats":
      return connected().stats();
    case "exits":
      return connected().exits();
    case "refresh":
      return await connected().refreshTopology();
    case "relayQuote":
      return await connected().relayQuote(msg.exit);
    case "relaySubmit": {
      const options = msg.timeoutMs === undefined ? {} : { timeoutMs: msg.timeoutMs };
      return await connected().relaySubmit(msg.exit, msg.submission, options);
    }
    case "close":
      client?.close();
      return null;
    default:
      throw new NoxError("bad-input", `unknown operation ${String((msg as { op?: unknown }).op)}`);
  }
}

// No top-level await: bundlers build Workers as classic scripts by default (Vite: iife), which
// cannot hold one.
void workerChannel<ClientWorkerRequest, ClientWorkerReply | typeof READY>("client-worker.js").then(({ port: out, listen }) => {
  // Calls run concurrently (requests wait on the mixnet, not on each other), answered by id.
  // A message without a numeric id is not ours and is ignored.
  listen((msg) => {
    if (typeof msg !== "object" || msg === null || typeof msg.id !== "number") return;
    handle(msg).then(
      (result) => out.postMessage({ id: msg.id, ok: true, result }),
      (error: unknown) => out.postMessage({ id: msg.id, ok: false, error: toWire(error) }),
    );
  });
  // Only now may the page post: a browser drops messages that reach a module Worker before it
  // has a listener (see READY in ./client-worker-proxy.ts).
  out.postMessage(READY);
});
