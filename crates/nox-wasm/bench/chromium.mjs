// Runs bench/page.html in headless Chromium: serves the page, the glue, the module and the
// fixture on 127.0.0.1 (an ephemeral port), and waits for the page to POST its figures.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Runs the page in `chromium` (a binary path); resolves with the page's report. */
export async function benchmarkChromium({ chromium, wasmBytes, fixture, seconds, timeoutMs = 600_000 }) {
  const files = {
    '/': ['text/html', readFileSync(join(here, 'page.html'))],
    '/nox_wasm.mjs': ['text/javascript', readFileSync(join(here, '../js/nox_wasm.mjs'))],
    '/ops.mjs': ['text/javascript', readFileSync(join(here, 'ops.mjs'))],
    '/nox_wasm.wasm': ['application/wasm', wasmBytes],
    '/fixture.json': ['application/json', Buffer.from(JSON.stringify(fixture))],
  };
  let deliver;
  const result = new Promise((resolve) => { deliver = resolve; });
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://localhost').pathname;
    if (req.method === 'POST' && path === '/result') {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        res.end('ok');
        deliver(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      });
      return;
    }
    const file = files[path];
    if (!file) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'content-type': file[0] }).end(file[1]);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const profile = mkdtempSync(join(tmpdir(), 'nox-wasm-chromium-'));
  const url = `http://127.0.0.1:${server.address().port}/?seconds=${seconds}`;
  const child = spawn(chromium, [
    '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions',
    `--user-data-dir=${profile}`, url,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve({ exited: code })));
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve({ timeout: true }), timeoutMs); });
  try {
    const report = await Promise.race([result, exited, timeout]);
    if (report.exited !== undefined) throw new Error(`chromium exited (${report.exited}) before reporting:\n${stderr}`);
    if (report.timeout) throw new Error(`no report from chromium within ${timeoutMs} ms:\n${stderr}`);
    if (report.error) throw new Error(`the page failed: ${report.error}`);
    return report;
  } finally {
    clearTimeout(timer);
    child.kill('SIGTERM');
    // Let Chromium finish writing its profile before removing it.
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    server.close();
    // Chromium's helper processes (crash handler, renderer) can outlive the
    // browser and still write into the profile; a leftover temporary
    // directory must not fail a finished benchmark.
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    } catch (e) {
      console.error(`warning: left the Chromium profile ${profile} behind (${e.code})`);
    }
  }
}
