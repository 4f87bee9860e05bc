// "Builds" the plain example: copies the page, the app and the installed SDK package (only what the
// page loads: its dist/, resolved through node_modules as any consumer would) into build/, a folder
// any static file server can serve.

import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = import.meta.dirname;
const out = join(here, "build");
const pkg = dirname(fileURLToPath(import.meta.resolve("@nox-mixnet/sdk/package.json")));
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "node_modules/@nox-mixnet/sdk"), { recursive: true });
for (const file of ["index.html", "app.js"]) cpSync(join(here, file), join(out, file));
cpSync(join(pkg, "dist"), join(out, "node_modules/@nox-mixnet/sdk/dist"), { recursive: true });
cpSync(join(pkg, "package.json"), join(out, "node_modules/@nox-mixnet/sdk/package.json"));
console.log(`built ${out} (SDK from ${pkg})`);
