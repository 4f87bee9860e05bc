// The import map that lets a test page import viem from this package's node_modules (issue 31,
// examples/import-map.mjs; private-wss.test.mjs's pages use it): the browser's builds are chosen
// (never Node's), every file of the graph is served and nothing else, and a package that is not
// installed, not exported to browsers or installed in two versions is refused by name.
//   node --test test/import-map.test.mjs

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { importMap } from "../examples/import-map.mjs";
import { servePage } from "../examples/page-server.mjs";

const root = join(import.meta.dirname, "..");

test("viem's graph: the browser builds, every file present, every bare import mapped", () => {
  const { map, files } = importMap(root, ["viem"]);
  assert.equal(map.imports.viem, "/node_modules/viem/_esm/index.js");
  // Conditions: "browser" before "import" (isows), "import" never "node" (@noble/hashes/crypto).
  assert.equal(map.imports.isows, "/node_modules/isows/_esm/native.js");
  assert.equal(map.imports["@noble/hashes/crypto"], "/node_modules/@noble/hashes/esm/crypto.js");
  assert.ok(files.size > 100, `${files.size} files`);
  for (const url of [...files, ...Object.values(map.imports)]) {
    assert.ok(url.startsWith("/node_modules/") && existsSync(join(root, url)), url);
    assert.ok(files.has(url), `${url} is served`);
  }
  assert.ok(![...files].some((f) => f.includes("/_cjs/") || f.includes("/ws/")), "no CommonJS build, no Node WebSocket");
});

/** A node_modules tree under a fresh directory: `{ "<path>": "<text>" }`. */
function tree(files) {
  const dir = mkdtempSync(join(tmpdir(), "nox-import-map-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

test("exports patterns resolve; a comment's import is not followed; bad packages are refused by name", (t) => {
  const dir = tree({
    "node_modules/a/package.json": JSON.stringify({ exports: { ".": { node: "./node.js", import: "./index.js" }, "./sub/*": "./dist/*.js" } }),
    "node_modules/a/index.js": `/** import { x } from "not-installed" */\n// import "not-installed";\nimport { y } from "a/sub/y";\nexport { y };\n`,
    "node_modules/a/dist/y.js": "export const y = 1;\n",
    "node_modules/b/package.json": JSON.stringify({ exports: { ".": "./index.js" } }),
    "node_modules/b/index.js": `import "b/hidden";\n`,
    "node_modules/c/package.json": JSON.stringify({ exports: { ".": { require: "./index.cjs" } } }),
    "node_modules/d/package.json": JSON.stringify({}),
    "node_modules/d/index.js": `import "missing-pkg";\n`,
    "node_modules/e/package.json": JSON.stringify({ module: "./e.js" }),
    "node_modules/e/e.js": `import "a";\nimport "f";\n`,
    "node_modules/f/package.json": JSON.stringify({ main: "f.js" }),
    "node_modules/f/f.js": `import "a";\n`,
    "node_modules/f/node_modules/a/package.json": JSON.stringify({ exports: "./other.js" }),
    "node_modules/f/node_modules/a/other.js": "export {};\n",
  });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { map, files } = importMap(dir, ["a"]);
  assert.deepEqual(map.imports, { a: "/node_modules/a/index.js", "a/sub/y": "/node_modules/a/dist/y.js" });
  assert.deepEqual([...files].sort(), ["/node_modules/a/dist/y.js", "/node_modules/a/index.js"]);
  assert.throws(() => importMap(dir, ["b"]), /b\/hidden .*not exported to browsers/);
  assert.throws(() => importMap(dir, ["c"]), /^Error: c .*not exported to browsers/);
  assert.throws(() => importMap(dir, ["d"]), /missing-pkg .*not installed/);
  assert.throws(() => importMap(dir, ["e"]), /a resolves to \/node_modules\/a\/index.js and .* to \/node_modules\/f\/node_modules\/a\/other.js/);
});

test("the page server: /dapp carries the map, the graph's files are served, other node_modules files are not", async (t) => {
  const server = await servePage(join(root, "package.json"), { packages: ["viem"] });
  t.after(() => server.close());
  const base = `http://127.0.0.1:${server.address().port}`;
  const page = await (await fetch(`${base}/dapp`)).text();
  const map = JSON.parse(page.match(/<script type="importmap">(.*)<\/script>/s)[1]);
  assert.equal(map.imports.viem, "/node_modules/viem/_esm/index.js");
  const viem = await fetch(`${base}/node_modules/viem/_esm/index.js`);
  assert.equal(viem.status, 200);
  assert.equal(viem.headers.get("content-type"), "text/javascript");
  for (const path of ["/node_modules/viem/package.json", "/node_modules/playwright-core/index.mjs", "/node_modules/viem/_cjs/index.js", "/node_modules/../package.json"]) {
    assert.equal((await fetch(`${base}${path}`)).status, 404, path);
  }
  // Without `packages` there is no /dapp and no node_modules.
  const plain = await servePage(join(root, "package.json"));
  t.after(() => plain.close());
  const plainBase = `http://127.0.0.1:${plain.address().port}`;
  assert.equal((await fetch(`${plainBase}/dapp`)).status, 404);
  assert.equal((await fetch(`${plainBase}/node_modules/viem/_esm/index.js`)).status, 404);
});
