// Starting and stopping a `nox testnet` for the SDK's tests (testnet, wss, private). Not a test
// itself: node --test runs it and finds none.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const target = process.env.CARGO_TARGET_DIR ?? join(import.meta.dirname, "../../../target");
export const NOX = process.env.NOX_BIN ?? join(target, "debug/nox");
export const WASM = process.env.NOX_WASM ?? join(target, "wasm32-unknown-unknown/release/nox_wasm.wasm");

/** The ports a testnet takes above its base (Anvil sits at base + 200), with a margin. */
export const TESTNET_PORT_SPAN = 300;

/** The lowest port the kernel hands out to outgoing connections (Linux; 32,768 elsewhere). */
export function ephemeralPortLow() {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * `nox testnet up` in a fresh temporary directory: one node per layer, 1 ms mean delay, no loop
 * or drop cover at the nodes, plus `extra` flags; ports from `portBase + (pid % 100) × stride`.
 * Returns the directory and `down()` (stops the network, removes the directory).
 */
export function startTestnet({ prefix, portBase, stride, extra = [], timeoutMs = 240_000 }) {
  assert.ok(existsSync(NOX), `the nox binary is missing at ${NOX} (cargo build -p nox, or set NOX_BIN)`);
  assert.ok(existsSync(WASM), `the module is missing at ${WASM} (see crates/nox-wasm/README.md, or set NOX_WASM)`);
  const base = String(portBase + (process.pid % 100) * stride);
  // A testnet's ports (nodes, directory, Anvil at base + 200) stay below the kernel's ephemeral
  // range: a fixed port there can be held by any outgoing connection of the moment (CI saw Anvil
  // refused "Address already in use" at 37,520), so the test would fail by chance.
  const ephemeralLow = ephemeralPortLow();
  assert.ok(
    Number(base) + TESTNET_PORT_SPAN <= ephemeralLow,
    `testnet ports ${base}–${Number(base) + TESTNET_PORT_SPAN} reach the ephemeral range (from ${ephemeralLow}): choose a lower portBase`,
  );
  const dir = mkdtempSync(join(tmpdir(), prefix));
  execFileSync(
    NOX,
    ["testnet", "up", ...extra, "--dir", dir, "--base-port", base, "--nodes-per-layer", "1", "--mean-delay-ms", "1",
      "--loop-rate", "0", "--drop-rate", "0"],
    { stdio: ["ignore", "inherit", "inherit"], timeout: timeoutMs },
  );
  return {
    dir,
    directoryUrl: () => `http://${readFileSync(join(dir, "directory.addr"), "utf8").trim()}/topology`,
    authority: () => readFileSync(join(dir, "authority.pub"), "utf8").trim(),
    down() {
      try {
        execFileSync(NOX, ["testnet", "down", "--dir", dir], { stdio: "ignore", timeout: 60_000 });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
