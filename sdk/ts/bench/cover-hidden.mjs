// Cover traffic of the browser client in a foreground and a hidden (or frozen) page, for the
// main-thread NoxClient and the Worker one (WorkerNoxClient), in Chromium (playwright-core,
// the system Chromium). Shared by test/client-worker-browser.test.mjs (connect + one read) and
// the measurement (docs/benchmarks/browser.md, "Cover traffic in a hidden tab"):
//
//   flock /tmp/nox-e2e.lock node sdk/ts/bench/cover-hidden.mjs [--seconds 30] [--hide freeze|tab] \
//        [--headful] [--out bench/data/browser-cover-hidden.json]
//   DISPLAY=:77 flock /tmp/nox-e2e.lock node sdk/ts/bench/cover-hidden.mjs --hide minimize [...]
//
// `--hide minimize` is the one that really hides the page (session 24): an X display with a window
// manager (`Xvfb :77 & openbox &`, apt `xvfb openbox xdotool`), Chromium started here (not by
// Playwright) with a DevTools port, and Playwright DISCONNECTED while the window is minimized
// (`xdotool windowminimize`): an attached Playwright keeps every page `visible` (its focus
// emulation counts as a capturer), so the hidden window's sends are read after reconnecting,
// cut at the page's own `visibilitychange` times.
//
// Each packet the client sends is timed where it leaves: the page (or the Worker) wraps the
// WebSocket class and records (performance.now(), byteLength) of every `send`; records of at
// least 1 KiB are packets (handshake messages are smaller). From one window of sends: the rate
// (packets/s, against λ_P), the wake-ups (sends more than 4 ms apart from the previous one: a
// burst of slots a late timer caught up on counts once), and the longest gap.

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { servePage } from "../examples/page-server.mjs";

/** Playwright's launch flags that switch background throttling off (removed here: we want it). */
export const THROTTLING_OFF = [
  "--disable-background-timer-throttling",
  "--disable-renderer-backgrounding",
  "--disable-backgrounding-occluded-windows",
];

/**
 * In the page: connects a client (`worker`: a WorkerNoxClient in a module Worker, else a
 * NoxClient on the main thread) with every WebSocket send timed, and installs
 * `window.__nox = { client, provider, sends(), pageSockets }`.
 */
async function setUpInPage({ directory, authority, worker, coverRate }) {
  const sdk = await import("/sdk/index.js");
  const origin = location.origin;
  // A WebSocket class whose sends are timed into `sends`.
  const timed = (Base, sends) =>
    class extends Base {
      send(data) {
        sends.push([performance.now(), data.byteLength ?? data.length ?? 0]);
        super.send(data);
      }
    };
  // The page's own sockets are counted: with the Worker client there must be none.
  let pageSockets = 0;
  const PageSocket = window.WebSocket;
  window.WebSocket = class extends PageSocket {
    constructor(...args) {
      super(...args);
      pageSockets += 1;
    }
  };
  let client;
  let sends;
  if (worker) {
    const code = `
      const sends = [];
      globalThis.WebSocket = (${timed})(globalThis.WebSocket, sends);
      self.addEventListener("message", (e) => {
        if (e.data && e.data.probe === "sends") self.postMessage({ probe: "sends", sends: sends.splice(0) });
      });
      await import(${JSON.stringify(`${origin}/sdk/client-worker.js`)});`;
    const w = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })), { type: "module" });
    client = await sdk.WorkerNoxClient.connect({ directory, authorityKey: authority, wasm: `${origin}/nox_wasm.wasm`, coverRate, worker: w });
    sends = () =>
      new Promise((resolve) => {
        const on = (e) => {
          if (e.data && e.data.probe === "sends") {
            w.removeEventListener("message", on);
            resolve(e.data.sends);
          }
        };
        w.addEventListener("message", on);
        w.postMessage({ probe: "sends" });
      });
  } else {
    const log = [];
    const Timed = timed(window.WebSocket, log);
    const module = await sdk.loadModule(await (await fetch("/nox_wasm.wasm")).arrayBuffer());
    client = await sdk.NoxClient.connect({ directory, authorityKey: authority, module, coverRate, WebSocket: Timed });
    sends = async () => log.splice(0);
  }
  const visibility = [];
  document.addEventListener("visibilitychange", () => visibility.push([document.visibilityState, performance.now()]));
  window.__nox = { client, provider: client.provider(), sends, pageSockets: () => pageSockets, visibility };
  return true;
}

/** Rate, wake-ups and longest gap of one window of sends ([ms, bytes] pairs) over `seconds`. */
export function summarise(sends, seconds) {
  const times = sends.filter(([, bytes]) => bytes >= 1024).map(([t]) => t);
  let wakes = times.length > 0 ? 1 : 0;
  let maxGap = 0;
  for (let i = 1; i < times.length; i++) {
    const gap = times[i] - times[i - 1];
    if (gap > 4) wakes += 1;
    maxGap = Math.max(maxGap, gap);
  }
  return {
    packets: times.length,
    rate: times.length / seconds,
    wakeRate: wakes / seconds,
    maxGapMs: Math.round(maxGap),
  };
}

/** Sends (`[ms, bytes]`) inside `[from, to]` ms, and the window's length in seconds. */
export function cut(sends, from, to) {
  return [sends.filter(([t]) => t >= from && t <= to), (to - from) / 1000];
}

/** Opens the page of `server` in `context` and connects a client in it. */
export async function openClientPage(context, server, { directory, authority, worker, coverRate }) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("worker", (worker) => worker.on("console", (message) => message.type() === "error" && errors.push(`worker: ${message.text()}`)));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  try {
    await Promise.race([
      page.evaluate(`(${setUpInPage})(${JSON.stringify({ directory, authority, worker, coverRate })})`),
      new Promise((_, reject) => setTimeout(() => reject(new Error("the client did not connect in 90 s")), 90_000).unref()),
    ]);
  } catch (error) {
    throw new Error(`${error.message} ${errors.join("; ")}`);
  }
  return page;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Hides (`tab`: another tab brought to the front) or freezes (`freeze`: CDP lifecycle) the page. */
async function hide(context, page, how) {
  if (how === "freeze") {
    const cdp = await context.newCDPSession(page);
    await cdp.send("Page.setWebLifecycleState", { state: "frozen" });
    return async () => {
      await cdp.send("Page.setWebLifecycleState", { state: "active" });
    };
  }
  const front = await context.newPage();
  await front.goto("about:blank");
  await front.bringToFront();
  return async () => {
    await page.bringToFront();
    await front.close();
  };
}

const xdotool = (...args) => execFileSync("xdotool", args, { encoding: "utf8" }).trim();

/**
 * `--hide minimize`: Chromium launched here, Playwright attached over CDP only while it reads or
 * drives the page; the hidden window is the time between the page's own `hidden` and `visible`.
 */
async function measureMinimized({ seconds, executablePath, wasm, directory, authority, coverRate }) {
  const server = await servePage(wasm);
  const userDir = mkdtempSync(join(tmpdir(), "nox-cover-hidden-"));
  const port = 25_390;
  const chrome = spawn(executablePath, ["--no-sandbox", "--no-first-run", `--user-data-dir=${userDir}`, `--remote-debugging-port=${port}`, "about:blank"], { stdio: "ignore" });
  const attach = async () => {
    for (let i = 0; ; i++) {
      try {
        return await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
      } catch (error) {
        if (i > 40) throw error;
        await sleep(500);
      }
    }
  };
  const rows = [];
  try {
    for (const worker of [false, true]) {
      let browser = await attach();
      let page = await openClientPage(browser.contexts()[0], server, { directory, authority, worker, coverRate });
      const url = page.url();
      const step = (what) => console.error(`${worker ? "worker" : "main-thread"}: ${what}`);
      step("connected");
      await sleep(2_000);
      await page.evaluate(() => window.__nox.sends());
      await sleep(seconds * 1000);
      const fgSends = await page.evaluate(() => window.__nox.sends());
      const fg = summarise(fgSends, seconds);
      const visibleBefore = await page.evaluate(() => document.visibilityState);
      step(`foreground ${JSON.stringify(fg)}`);
      await browser.close(); // disconnects only: the browser is ours
      for (const w of xdotool("search", "--onlyvisible", "--class", "chromium").split("\n")) xdotool("windowminimize", w);
      step("minimized, Playwright detached");
      await sleep(seconds * 1000 + 1000);
      const titles = xdotool("search", "--class", "chromium").split("\n");
      for (const w of titles) xdotool("windowactivate", "--sync", w);
      browser = await attach();
      page = browser.contexts()[0].pages().find((p) => p.url() === url);
      const all = await page.evaluate(() => window.__nox.sends());
      const visibility = await page.evaluate(() => window.__nox.visibility);
      const from = visibility.find(([state]) => state === "hidden")?.[1];
      const to = visibility.find(([state, t]) => state === "visible" && from !== undefined && t > from)?.[1];
      if (from === undefined || to === undefined) throw new Error(`the page never reported hidden: ${JSON.stringify(visibility)}`);
      const [hiddenSends, hiddenSeconds] = cut(all, from, to);
      const hidden = { ...summarise(hiddenSends, hiddenSeconds), seconds: Number(hiddenSeconds.toFixed(2)) };
      step(`hidden ${JSON.stringify(hidden)}`);
      const stats = await page.evaluate(async () => await window.__nox.client.stats());
      rows.push({ client: worker ? "worker" : "main-thread", foreground: fg, hidden, visibleBefore, visibilityHidden: "hidden", visibility, stats });
      await page.evaluate(() => window.__nox.client.close());
      await page.close();
      await browser.close();
    }
  } finally {
    chrome.kill();
    server.close();
    rmSync(userDir, { recursive: true, force: true });
  }
  return rows;
}

async function measure({ seconds, how, headful, executablePath, wasm, directory, authority, coverRate }) {
  if (how === "minimize") return measureMinimized({ seconds, executablePath, wasm, directory, authority, coverRate });
  const server = await servePage(wasm);
  const userDir = mkdtempSync(join(tmpdir(), "nox-cover-hidden-"));
  const context = await chromium.launchPersistentContext(userDir, {
    executablePath,
    headless: !headful,
    args: ["--no-sandbox"],
    ignoreDefaultArgs: THROTTLING_OFF,
  });
  const rows = [];
  try {
    for (const worker of [false, true]) {
      const page = await openClientPage(context, server, { directory, authority, worker, coverRate });
      const step = (what) => console.error(`${worker ? "worker" : "main-thread"}: ${what}`);
      step("connected");
      await sleep(2_000);
      await page.evaluate(() => window.__nox.sends());
      await sleep(seconds * 1000);
      const fg = summarise(await page.evaluate(() => window.__nox.sends()), seconds);
      const visibleBefore = await page.evaluate(() => document.visibilityState);
      step(`foreground ${JSON.stringify(fg)}`);
      const restore = await hide(context, page, how);
      step("hidden");
      await sleep(seconds * 1000);
      // While frozen the page cannot answer: read after it is active again, the window's sends kept.
      const visibilityHidden = how === "tab" ? await page.evaluate(() => document.visibilityState) : "frozen";
      await restore();
      step("restored");
      const hidden = summarise(await page.evaluate(() => window.__nox.sends()), seconds);
      const stats = await page.evaluate(async () => await window.__nox.client.stats());
      rows.push({ client: worker ? "worker" : "main-thread", foreground: fg, hidden, visibleBefore, visibilityHidden, stats });
      await page.evaluate(() => window.__nox.client.close());
      await page.close();
    }
  } finally {
    await context.close();
    server.close();
    rmSync(userDir, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] === import.meta.filename) {
  const { values: args } = parseArgs({
    options: {
      seconds: { type: "string", default: "30" },
      hide: { type: "string", default: "tab" },
      headful: { type: "boolean", default: false },
      out: { type: "string" },
      "cover-rate": { type: "string", default: "2" },
    },
  });
  const { startTestnet, WASM } = await import("../test/testnet-helper.mjs");
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  if (!existsSync(executablePath)) throw new Error(`Chromium is missing at ${executablePath}`);
  const net = startTestnet({ prefix: "nox-cover-hidden-", portBase: 25_000, stride: 40, extra: ["--no-chain"] });
  try {
    const coverRate = Number(args["cover-rate"]);
    const rows = await measure({
      seconds: Number(args.seconds),
      how: args.hide,
      headful: args.headful,
      executablePath,
      wasm: WASM,
      directory: net.directoryUrl(),
      authority: net.authority(),
      coverRate,
    });
    const result = {
      lambdaP: coverRate,
      seconds: Number(args.seconds),
      hide: args.hide,
      headful: args.headful || args.hide === "minimize",
      chromium: executablePath,
      chromiumVersion: execFileSync(executablePath, ["--version"], { encoding: "utf8" }).trim(),
      cpus: cpus().length,
      loadavg: loadavg(),
      rows,
    };
    console.log(JSON.stringify(result, null, 2));
    if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    net.down();
  }
}
