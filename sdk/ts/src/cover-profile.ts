// Client cover profiles, as `nox client --profile NAME`: which of the λ_P cover slots carry a
// cover packet. The decision itself is the Rust client core's (`nox_cover::CoverGate`, run
// inside the WebAssembly module at every slot); this file only checks the caller's choice and
// turns it into the module's configuration fields (`profile`, `mobile_budget_bytes_per_day`).

import { NoxError } from "./errors.js";

/** The profile names, as the native client spells them (`nox_cover::PROFILE_NAMES`). */
export const COVER_PROFILES = ["always-on", "wallet", "mobile"] as const;

/**
 * A client cover profile:
 * - `always-on` (default): every free slot carries cover while the client runs.
 * - `wallet`: cover only during a session, which starts with a request and lasts until
 *   max(last request + 30 s, start + 120 s); silent otherwise.
 * - `mobile`: cover thinned to a daily byte budget (default 125 MB/day, `mobileBudgetBytesPerDay`);
 *   real packets count against it and are never refused.
 */
export type CoverProfileName = (typeof COVER_PROFILES)[number];

/** The mobile profile's default budget, bytes a day (`nox_cover::MOBILE_DEFAULT_BUDGET`). */
export const MOBILE_DEFAULT_BUDGET = 125_000_000;

/** A profile name the SDK does not know; `valid` lists the ones it does. */
export class UnknownCoverProfileError extends NoxError {
  readonly profile: string;
  readonly valid: readonly string[] = COVER_PROFILES;

  constructor(profile: string) {
    super("bad-input", `unknown cover profile ${JSON.stringify(profile)}: expected one of ${COVER_PROFILES.join(", ")}`);
    this.name = "UnknownCoverProfileError";
    this.profile = profile;
  }
}

/** The module's configuration fields for a profile choice (nothing for the default). */
export function coverProfileConfig(
  profile: unknown,
  mobileBudgetBytesPerDay: unknown,
  coverRate: number,
): { profile?: CoverProfileName; mobile_budget_bytes_per_day?: number } {
  if (profile === undefined) {
    if (mobileBudgetBytesPerDay !== undefined) {
      throw new NoxError("bad-input", 'mobileBudgetBytesPerDay needs coverProfile: "mobile"');
    }
    return {};
  }
  if (typeof profile !== "string" || !(COVER_PROFILES as readonly string[]).includes(profile)) {
    throw new UnknownCoverProfileError(String(profile));
  }
  const name = profile as CoverProfileName;
  if (name !== "always-on" && !(coverRate > 0)) {
    throw new NoxError("bad-input", `coverProfile ${name} chooses which cover slots are used: it needs coverRate > 0`);
  }
  if (mobileBudgetBytesPerDay === undefined) {
    return { profile: name };
  }
  if (name !== "mobile") {
    throw new NoxError("bad-input", `mobileBudgetBytesPerDay needs coverProfile: "mobile", not ${JSON.stringify(name)}`);
  }
  if (
    typeof mobileBudgetBytesPerDay !== "number" ||
    !Number.isSafeInteger(mobileBudgetBytesPerDay) ||
    mobileBudgetBytesPerDay <= 0
  ) {
    throw new NoxError("bad-input", `mobileBudgetBytesPerDay must be a positive whole number of bytes, got ${String(mobileBudgetBytesPerDay)}`);
  }
  return { profile: name, mobile_budget_bytes_per_day: mobileBudgetBytesPerDay };
}
