// The wallet's seed sealed under a passphrase (issue 31), in `nox wallet`'s own `wallet.key`
// format (docs/spec/notes.md §6: Argon2id, ChaCha20-Poly1305, the KDF parameters in the
// authenticated header), and the pool view sealed under the seed's state key (`nox wallet`'s
// `state` file). WebCrypto has no Argon2id, so both run in nox-wasm: the same Rust
// (`nox_wallet::file`) the native wallet runs. A key file exported from the browser opens with
// `nox wallet restore --from`, and a `wallet.key` written by `nox wallet new` opens here.

import { NoxError } from "./errors.js";
import { NoxWasm, NoxWasmError, Status } from "./nox_wasm.mjs";

/** The seed's length. */
export const SEED_LEN = 32;

/** Overwrites `bytes` with zeros (a seed, a passphrase's UTF-8) once it is no longer needed. */
export function wipe(bytes: Uint8Array | undefined): void {
  bytes?.fill(0);
}

/**
 * The passphrase as UTF-8 bytes the caller wipes after use. A JavaScript string cannot be wiped:
 * pass a `Uint8Array` to keep the passphrase out of the garbage-collected heap.
 */
function passphraseBytes(passphrase: string | Uint8Array): Uint8Array {
  return typeof passphrase === "string" ? new TextEncoder().encode(passphrase) : passphrase;
}

/** A module refusal of a sealed file as the SDK's typed error. */
function sealError(e: unknown, what: string): NoxError {
  if (e instanceof NoxWasmError) {
    if (e.code === Status.WRONG_PASSPHRASE) {
      return new NoxError("wrong-passphrase", `${what}: wrong passphrase, or the file was altered`, { cause: e });
    }
    if (e.code === Status.BAD_KEY_FILE) {
      return new NoxError("bad-key-file", `${what}: not a NOX sealed wallet file (${e.message})`, { cause: e });
    }
  }
  return new NoxError("bad-input", `${what}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
}

/** Seals `seed` under `passphrase` as `wallet.key` (Argon2id at `nox wallet`'s default cost). */
export function sealSeed(m: NoxWasm, seed: Uint8Array, passphrase: string | Uint8Array): Uint8Array {
  const p = passphraseBytes(passphrase);
  try {
    return m.walletSealKey(seed, p);
  } catch (e) {
    throw sealError(e, "sealing the wallet key");
  } finally {
    if (p !== passphrase) wipe(p);
  }
}

/**
 * Opens a `wallet.key` with `passphrase`: the seed (the caller wipes it). A wrong passphrase or an
 * altered byte throws `NoxError` "wrong-passphrase"; another format "bad-key-file".
 */
export function openSeed(m: NoxWasm, sealed: Uint8Array, passphrase: string | Uint8Array): Uint8Array {
  if (!(sealed instanceof Uint8Array)) throw new NoxError("bad-key-file", "the sealed wallet key must be bytes");
  const p = passphraseBytes(passphrase);
  try {
    const seed = m.walletOpenKey(sealed, p);
    if (seed.length !== SEED_LEN) {
      wipe(seed);
      throw new NoxError("bad-key-file", "the sealed wallet key did not hold a 32-byte seed");
    }
    return seed;
  } catch (e) {
    throw e instanceof NoxError ? e : sealError(e, "opening the wallet key");
  } finally {
    if (p !== passphrase) wipe(p);
  }
}

/** The pool view's JSON sealed under the seed's state key (`nox wallet`'s `state` file). */
export function sealState(m: NoxWasm, seed: Uint8Array, viewJson: string): Uint8Array {
  try {
    return m.walletSealState(seed, viewJson);
  } catch (e) {
    throw sealError(e, "sealing the wallet state");
  }
}

/** Opens a sealed state with the seed: the view's JSON ("wrong-passphrase" if of another seed or altered). */
export function openState(m: NoxWasm, seed: Uint8Array, sealed: Uint8Array): string {
  try {
    return m.walletOpenState(seed, sealed);
  } catch (e) {
    throw sealError(e, "opening the wallet state");
  }
}
