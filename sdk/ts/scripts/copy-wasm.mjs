// Copies the nox-wasm module into dist/ for `npm pack` (the package ships it beside dist/wasm.js,
// which loads it with `new URL("./nox_wasm.wasm", import.meta.url)`). The module comes from
// NOX_WASM or $CARGO_TARGET_DIR/wasm32-unknown-unknown/release/nox_wasm.wasm (crates/nox-wasm/README.md).

import { copyFileSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";

const target = process.env.CARGO_TARGET_DIR ?? join(import.meta.dirname, "../../../target");
const wasm = process.env.NOX_WASM ?? join(target, "wasm32-unknown-unknown/release/nox_wasm.wasm");
if (!existsSync(wasm)) {
  console.error(`copy-wasm: the module is missing at ${wasm}: cargo build --release --target wasm32-unknown-unknown -p nox-wasm --lib (or set NOX_WASM)`);
  process.exit(1);
}
const out = join(import.meta.dirname, "../dist/nox_wasm.wasm");
copyFileSync(wasm, out);
console.error(`copy-wasm: ${wasm} → dist/nox_wasm.wasm (${statSync(out).size} bytes)`);
