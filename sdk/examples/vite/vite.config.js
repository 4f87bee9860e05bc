// Nothing NOX-specific is needed to build: Vite copies dist/nox_wasm.wasm because dist/wasm.js names it
// with `new URL("./nox_wasm.wasm", import.meta.url)`. Only the dev server's dependency pre-bundling
// would move dist/wasm.js away from the module, hence the exclusion.
export default {
  optimizeDeps: { exclude: ["@nox-mixnet/sdk"] },
  build: { target: "es2022" },
};
