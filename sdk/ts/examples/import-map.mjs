// An import map for installed ES-module packages (viem and what it imports), so a page served by
// page-server.mjs can `import { createWalletClient, custom } from "viem"` from this package's own
// node_modules — no bundler, no CDN, nothing fetched from the web. The module graph is read from
// the files (static `import`/`export … from` and literal `import("…")`), each bare specifier
// resolved as a browser resolves a package: package.json `exports` under the conditions
// "browser", "import", "default" (never "node" or "require"), else `module`/`main`.

import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";

const CONDITIONS = ["browser", "import", "module", "default"];

/** Code without comments (JSDoc examples name packages that are never imported). */
function code(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** Every literal module specifier a module's code names. */
function specifiers(text) {
  const out = new Set();
  const patterns = [
    /\b(?:import|export)\s+[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const p of patterns) for (const m of code(text).matchAll(p)) out.add(m[1]);
  return out;
}

/** An `exports` target under the browser's conditions (undefined: none applies). */
function target(value) {
  if (typeof value === "string") return value;
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  for (const c of CONDITIONS) {
    if (c in value) {
      const t = target(value[c]);
      if (t !== undefined) return t;
    }
  }
  return undefined;
}

/** `subpath` ("." or "./x") through a package's `exports` (with "*" patterns). */
function throughExports(exports, subpath) {
  if (typeof exports === "string" || (exports !== null && typeof exports === "object" && !Object.keys(exports)[0]?.startsWith("."))) {
    return subpath === "." ? target(exports) : undefined;
  }
  if (subpath in exports) return target(exports[subpath]);
  for (const [key, value] of Object.entries(exports)) {
    const star = key.indexOf("*");
    if (star < 0) continue;
    const [head, tail] = [key.slice(0, star), key.slice(star + 1)];
    if (subpath.startsWith(head) && subpath.endsWith(tail) && subpath.length >= key.length - 1) {
      return target(value)?.replaceAll("*", subpath.slice(head.length, subpath.length - tail.length));
    }
  }
  return undefined;
}

/** The file a bare specifier names from `importer`: the nearest node_modules holding the package. */
function resolveBare(specifier, importer, root) {
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const subpath = specifier === name ? "." : `.${specifier.slice(name.length)}`;
  for (let dir = dirname(importer); ; dir = dirname(dir)) {
    const pkg = join(dir, "node_modules", name);
    if (existsSync(join(pkg, "package.json"))) {
      const json = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
      const file =
        json.exports !== undefined ? throughExports(json.exports, subpath)
        : subpath === "." ? (json.module ?? json.main ?? "index.js")
        : subpath;
      if (file === undefined) throw new Error(`${specifier} (from ${importer}): not exported to browsers`);
      return join(pkg, file);
    }
    if (dir === root || dirname(dir) === dir) throw new Error(`${specifier} (from ${importer}): not installed under ${root}`);
  }
}

/**
 * The import map and the files of the graph reached from `packages` (bare specifiers such as
 * "viem") installed under `root`/node_modules. URLs are `/node_modules/<path>`. Throws if a
 * specifier is not installed, not exported to browsers, or resolves to two files (two versions).
 */
export function importMap(root, packages) {
  const url = (file) => `/${relative(root, file).split(sep).join("/")}`;
  const imports = {};
  const files = new Set();
  const queue = [];
  const map = (specifier, file, importer) => {
    if (imports[specifier] !== undefined && imports[specifier] !== url(file)) {
      // Two versions of one package in the graph would need the map's `scopes`: not needed yet.
      throw new Error(`${specifier} resolves to ${imports[specifier]} and (from ${importer}) to ${url(file)}`);
    }
    imports[specifier] = url(file);
  };
  const visit = (file) => {
    if (!files.has(file)) {
      files.add(file);
      queue.push(file);
    }
  };
  for (const p of packages) {
    const file = resolveBare(p, join(root, "index.js"), root);
    imports[p] = url(file);
    visit(file);
  }
  while (queue.length > 0) {
    const file = queue.pop();
    for (const s of specifiers(readFileSync(file, "utf8"))) {
      if (s.startsWith("node:")) continue; // Node-only code paths (never reached in a page)
      if (s.startsWith(".") || s.startsWith("/")) {
        const next = s.startsWith("/") ? join(root, s) : join(dirname(file), s);
        if (!existsSync(next) || !statSync(next).isFile()) throw new Error(`${s} (from ${file}): no such file`);
        visit(next);
      } else {
        const next = resolveBare(s, file, root);
        map(s, next, file);
        visit(next);
      }
    }
  }
  return { map: { imports }, files: new Set([...files].map(url)) };
}
