// Copies the nox-wasm module into dist/ for `npm pack` (the package ships it beside dist/wasm.js,
// which loads it with `new URL("./nox_wasm.wasm", import.meta.url)`), without its custom sections:
// the release profile keeps DWARF (`debug = 1`), ~80 % of the file, which no browser needs. Code,
// data and every other section are copied byte for byte. The module comes from NOX_WASM or
// $CARGO_TARGET_DIR/wasm32-unknown-unknown/release/nox_wasm.wasm (crates/nox-wasm/README.md).

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const target = process.env.CARGO_TARGET_DIR ?? join(import.meta.dirname, "../../../target");
const wasm = process.env.NOX_WASM ?? join(target, "wasm32-unknown-unknown/release/nox_wasm.wasm");
if (!existsSync(wasm)) {
  console.error(`copy-wasm: the module is missing at ${wasm}: cargo build --release --target wasm32-unknown-unknown -p nox-wasm --lib (or set NOX_WASM)`);
  process.exit(1);
}

/** The module without custom sections (id 0); throws on anything that is not a wasm module. */
export function stripCustomSections(bytes) {
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || magic.some((b, i) => bytes[i] !== b)) throw new Error("not a WebAssembly 1.0 module");
  const keep = [bytes.subarray(0, 8)];
  let at = 8;
  while (at < bytes.length) {
    const start = at;
    const id = bytes[at++];
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= bytes.length || shift > 28) throw new Error("truncated section size");
      const b = bytes[at++];
      size += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) break;
    }
    if (at + size > bytes.length) throw new Error("truncated section");
    if (id !== 0) keep.push(bytes.subarray(start, at + size));
    at += size;
  }
  return Buffer.concat(keep);
}

const input = readFileSync(wasm);
const output = stripCustomSections(input);
await WebAssembly.compile(output); // still a valid module
writeFileSync(join(import.meta.dirname, "../dist/nox_wasm.wasm"), output);
console.error(`copy-wasm: ${wasm} (${input.length} bytes) → dist/nox_wasm.wasm (${output.length} bytes, custom sections dropped)`);
