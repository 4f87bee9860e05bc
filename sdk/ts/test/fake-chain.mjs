// The fake chain of the SDK's wallet tests (issue 34: one copy instead of one per test file): an
// EIP-1193 provider over a list of the pool's `Deposited` logs, answering `eth_blockNumber` with
// its head and `eth_getLogs` with the logs inside the asked block range; any other method is an
// error. It records every range asked (`ranges`) and every range answered (`answered`), can fail
// the `failAt`-th page (a page closed in the middle of a sync), refuse a page (`refuse`), and
// yield to the event loop before each page as a network provider does.

import { randomBytes } from "node:crypto";
import { keccak256, toHex } from "viem";

/** The pool's `Deposited` event topic. */
export const DEPOSITED = keccak256(toHex("Deposited(uint256,uint256,address,uint256,bytes)"));

const word = (n) => BigInt(n).toString(16).padStart(64, "0");
/** nox_wallet::memo::NOTE_LEN */
const NOTE_LEN = 104;

/**
 * `Deposited(queueIndex i, commitment, asset, amount, memo)` of `pool` at block `block` (default
 * i + 1): a random commitment (< 2^248) and a random memo, so none is any wallet's (every memo is
 * trial-decrypted and refused, every commitment queued).
 */
export function depositedLog(pool, i, block = i + 1) {
  const commitment = `00${randomBytes(31).toString("hex")}`;
  const memo = randomBytes(NOTE_LEN).toString("hex");
  return {
    address: pool,
    topics: [DEPOSITED, `0x${word(i)}`, `0x${word(0)}`],
    data: `0x${commitment}${word(1000 + i)}${word(0x60)}${word(NOTE_LEN)}${memo}${"0".repeat(48)}`,
    blockNumber: `0x${block.toString(16)}`,
    logIndex: "0x0",
    removed: false,
  };
}

/** `count` such logs, one per block from block 1. */
export function depositedLogs(pool, count) {
  return Array.from({ length: count }, (_, i) => depositedLog(pool, i));
}

/**
 * The chain: `logs` (default none) up to block `head` (default the number of logs). `failAt`: the
 * page (0-based, counted in `ranges`) that fails with "the page went away"; `refuse(page, [from,
 * to])` may return an error to throw instead of answering `page`; `yieldPages`: wait one timer
 * turn before each answer. `head`, `failAt` and `ranges` may be changed between syncs.
 *
 * Self-contained (no name from this module's scope) so that a browser test can pass
 * `fakeChain.toString()` into its page and evaluate it there.
 */
export function fakeChain({ logs = [], head = logs.length, failAt, refuse, yieldPages = false } = {}) {
  const c = {
    head,
    failAt,
    ranges: [],
    answered: [],
    async request({ method, params }) {
      if (method === "eth_blockNumber") return `0x${c.head.toString(16)}`;
      if (method !== "eth_getLogs") throw new Error(`unexpected ${method}`);
      if (c.failAt !== undefined && c.ranges.length === c.failAt) throw new Error("the page went away");
      const from = Number(BigInt(params[0].fromBlock));
      const to = Number(BigInt(params[0].toBlock));
      c.ranges.push([from, to]);
      if (yieldPages) await new Promise((resolve) => setTimeout(resolve, 0));
      const page = logs.filter((l) => Number(BigInt(l.blockNumber)) >= from && Number(BigInt(l.blockNumber)) <= to);
      const refused = refuse?.(page, [from, to]);
      if (refused !== undefined) throw refused;
      c.answered.push([from, to]);
      return page;
    },
  };
  return c;
}
