//! The byte-buffer ABI: `extern "C"` exports over [`crate::Module`].
//!
//! The host never hands the module a pointer to read. It asks for an
//! argument slot of a given length (`nox_arg`), writes its bytes at the
//! returned offset of the module's memory, then calls an export with scalar
//! arguments only. The export reads its slots, clears them (zeroized) and
//! leaves its result, or the error text, in the output buffer
//! (`nox_out_ptr`, `nox_out_len`), returning a status code: 0 for success,
//! [`crate::WasmError::code`] otherwise. No Rust code here dereferences a
//! raw pointer: the only boundary is the module's linear memory, which the
//! host writes between calls. The layout of every export's arguments and
//! output is in the crate README.

use std::cell::RefCell;

use zeroize::Zeroize;

use crate::{Module, NewSurb, WasmError, completed_bytes, now};

/// Version of this ABI; bumped on any incompatible change.
pub const ABI_VERSION: u32 = 1;
/// Number of argument slots.
pub const ARG_SLOTS: usize = 4;
/// Largest argument: a topology document is at most 16 MiB.
pub const MAX_ARG_LEN: usize = 17 << 20;
/// Status of a call made while another is running (cannot happen from one JS thread).
pub const STATUS_BUSY: i32 = 100;

#[derive(Default)]
struct Abi {
    module: Module,
    args: [Vec<u8>; ARG_SLOTS],
    out: Vec<u8>,
}

thread_local! {
    static ABI: RefCell<Abi> = RefCell::new(Abi::default());
}

/// Runs `f` on the module and the arguments, stores its output or error
/// text, clears the arguments and returns the status.
fn call(f: impl FnOnce(&mut Module, &[Vec<u8>; ARG_SLOTS]) -> Result<Vec<u8>, WasmError>) -> i32 {
    ABI.with(|cell| {
        let Ok(mut abi) = cell.try_borrow_mut() else {
            return STATUS_BUSY;
        };
        let Abi { module, args, out } = &mut *abi;
        let result = f(module, args);
        for arg in args.iter_mut() {
            arg.zeroize();
        }
        out.zeroize();
        match result {
            Ok(bytes) => {
                *out = bytes;
                0
            }
            Err(error) => {
                *out = error.to_string().into_bytes();
                error.code()
            }
        }
    })
}

fn surb_output(surb: NewSurb) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 16 + surb.surb.len());
    out.extend_from_slice(&surb.handle.to_le_bytes());
    out.extend_from_slice(&surb.id.0);
    out.extend_from_slice(&surb.surb);
    out
}

/// The ABI version ([`ABI_VERSION`]).
#[unsafe(no_mangle)]
pub extern "C" fn nox_abi_version() -> u32 {
    ABI_VERSION
}

/// Makes argument slot `slot` `len` zero bytes long and returns its offset
/// in linear memory for the host to write into; 0 if `slot` or `len` is out
/// of range. The slot is cleared by the next call.
#[unsafe(no_mangle)]
pub extern "C" fn nox_arg(slot: u32, len: usize) -> usize {
    if len > MAX_ARG_LEN {
        return 0;
    }
    ABI.with(|cell| {
        let Ok(mut abi) = cell.try_borrow_mut() else {
            return 0;
        };
        let Some(arg) = abi.args.get_mut(slot as usize) else {
            return 0;
        };
        arg.zeroize();
        arg.resize(len, 0);
        arg.as_mut_ptr() as usize
    })
}

/// Offset of the last call's output (or error text).
#[unsafe(no_mangle)]
pub extern "C" fn nox_out_ptr() -> usize {
    ABI.with(|cell| cell.try_borrow().map(|abi| abi.out.as_ptr() as usize).unwrap_or(0))
}

/// Length of the last call's output (or error text).
#[unsafe(no_mangle)]
pub extern "C" fn nox_out_len() -> usize {
    ABI.with(|cell| cell.try_borrow().map(|abi| abi.out.len()).unwrap_or(0))
}

/// Seeds the module's ChaCha20 RNG. arg 0: 32 bytes from the host's CSPRNG.
#[unsafe(no_mangle)]
pub extern "C" fn nox_seed() -> i32 {
    call(|m, a| m.seed(&a[0]).map(|()| Vec::new()))
}

/// Forward packet along raw hops. arg 0: `n × (node id 32 ‖ public key 32)`;
/// arg 1: payload. Output: the packet.
#[unsafe(no_mangle)]
pub extern "C" fn nox_build_forward(key_epoch: u32) -> i32 {
    call(|m, a| m.build_forward_raw(&a[0], &a[1], key_epoch))
}

/// SURB along raw hops. arg 0: hops as for `nox_build_forward`; arg 1:
/// recipient id (32). Output: handle (u32 LE) ‖ SURB id (16) ‖ SURB.
#[unsafe(no_mangle)]
pub extern "C" fn nox_build_surb(key_epoch: u32) -> i32 {
    call(|m, a| m.build_surb_raw(&a[0], &a[1], key_epoch).map(surb_output))
}

/// Opens a reply. arg 0: SURB id (16); arg 1: reply body. Output: the reply.
#[unsafe(no_mangle)]
pub extern "C" fn nox_surb_open(handle: u32) -> i32 {
    call(|m, a| m.surb_open(handle, &a[0], &a[1]))
}

/// Verifies a topology document. arg 0: the directory's JSON; arg 1: the
/// authority's Ed25519 key (32). Output: handle (u32 LE).
#[unsafe(no_mangle)]
pub extern "C" fn nox_topology_verify(now_unix: u64) -> i32 {
    call(|m, a| m.verify_topology(&a[0], &a[1], now_unix).map(|h| h.to_le_bytes().to_vec()))
}

/// JSON summary of a verified topology at `now_unix`. Output: UTF-8 JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_topology_info(handle: u32, now_unix: u64) -> i32 {
    call(|m, _| m.topology_info(handle, now_unix).map(String::into_bytes))
}

/// Forward packet through a topology. arg 0: payload; arg 1: `L × 32` node
/// ids, or empty for a random path. Output: first hop (32) ‖ packet.
#[unsafe(no_mangle)]
pub extern "C" fn nox_topology_forward(handle: u32, now_unix: u64) -> i32 {
    call(|m, a| {
        m.topology_forward(handle, &a[0], &a[1], now_unix).map(|(first, packet)| {
            let mut out = Vec::with_capacity(32 + packet.len());
            out.extend_from_slice(&first.0);
            out.extend_from_slice(&packet);
            out
        })
    })
}

/// SURB through a topology. arg 0: recipient id (32); arg 1: `L × 32` node
/// ids, or empty for a random path. Output: as `nox_build_surb`.
#[unsafe(no_mangle)]
pub extern "C" fn nox_topology_surb(handle: u32, now_unix: u64) -> i32 {
    call(|m, a| m.topology_surb(handle, &a[0], &a[1], now_unix).map(surb_output))
}

/// Frees an object (topology or SURB recovery keys, zeroized).
#[unsafe(no_mangle)]
pub extern "C" fn nox_drop(handle: u32) -> i32 {
    call(|m, _| m.drop_handle(handle).map(|()| Vec::new()))
}

/// A client core over the topology `topology`. arg 0: configuration JSON
/// (empty: defaults; fields in the README). Output: handle (u32 LE) ‖
/// gateway id (32) ‖ mailbox (32).
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_new(topology: u32, now_ms: u64, now_unix: u64) -> i32 {
    call(|m, a| {
        m.client_new(topology, &a[0], now(now_ms, now_unix)).map(|c| {
            let mut out = c.handle.to_le_bytes().to_vec();
            out.extend_from_slice(&c.gateway.0);
            out.extend_from_slice(&c.mailbox);
            out
        })
    })
}

/// Sends a request of `kind` (1 echo, 2 HTTP, 3 JSON-RPC, 4 relay). arg 0:
/// the body; arg 1: the exit's node id (32), or empty for a random exit.
/// Output: request id (u64 LE) ‖ count (u32 LE) ‖ count ×
/// (entry id (32) ‖ packet length (u32 LE) ‖ packet).
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_request(
    handle: u32,
    kind: u32,
    expected_reply_len: u32,
    now_ms: u64,
    now_unix: u64,
) -> i32 {
    call(|m, a| {
        let kind = u8::try_from(kind).map_err(|_| WasmError::BadArgument(format!("request kind {kind}")))?;
        m.client_request(handle, kind, &a[0], &a[1], expected_reply_len, now(now_ms, now_unix)).map(|(id, packets)| {
            let mut out = id.to_le_bytes().to_vec();
            out.extend_from_slice(&(packets.len() as u32).to_le_bytes());
            for packet in &packets {
                out.extend_from_slice(&packet.entry.0);
                out.extend_from_slice(&(packet.packet.len() as u32).to_le_bytes());
                out.extend_from_slice(&packet.packet);
            }
            out
        })
    })
}

/// The packet of the next due Poisson slot. Output: empty (none due) or
/// entry id (32) ‖ packet.
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_poll_transmit(handle: u32, now_ms: u64, now_unix: u64) -> i32 {
    call(|m, _| {
        m.client_poll_transmit(handle, now(now_ms, now_unix)).map(|p| {
            let mut out = Vec::new();
            if let Some(packet) = p {
                crate::client::outgoing_bytes(&mut out, &packet);
            }
            out
        })
    })
}

/// One downstream record from the gateway link. arg 0: sender id (32) or
/// empty; arg 1: the record. Output: empty, or the completed request:
/// id (u64 LE) ‖ 0 ‖ status (u8) ‖ body, or id ‖ 1 ‖ error text.
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_on_downstream(handle: u32, now_ms: u64, now_unix: u64) -> i32 {
    call(|m, a| {
        m.client_on_downstream(handle, &a[0], &a[1], now(now_ms, now_unix))
            .map(|done| done.as_ref().map(completed_bytes).unwrap_or_default())
    })
}

/// Requests timed out by now. Output: count (u32 LE) ‖ count × (length (u32
/// LE) ‖ completed request as in `nox_client_on_downstream`).
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_poll_timeouts(handle: u32, now_ms: u64, now_unix: u64) -> i32 {
    call(|m, _| {
        m.client_poll_timeouts(handle, now(now_ms, now_unix)).map(|done| {
            let mut out = (done.len() as u32).to_le_bytes().to_vec();
            for d in &done {
                let bytes = completed_bytes(d);
                out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                out.extend_from_slice(&bytes);
            }
            out
        })
    })
}

/// Gives the client core the verified topology behind `topology` (a copy).
/// Output: empty (the reply gateway is unchanged) or the new reply gateway's
/// id (32): link to it with the same mailbox, and see `nox_client_gateways`.
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_set_topology(handle: u32, topology: u32, now_ms: u64, now_unix: u64) -> i32 {
    call(|m, _| {
        m.client_set_topology(handle, topology, now(now_ms, now_unix))
            .map(|gateway| gateway.map(|g| g.0.to_vec()).unwrap_or_default())
    })
}

/// The gateways the host keeps reply links to (current first, then former
/// ones that replies in flight still name). Output: count (u32 LE) ‖ count ×
/// node id (32).
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_gateways(handle: u32) -> i32 {
    call(|m, _| {
        m.client_gateways(handle).map(|gateways| {
            let mut out = (gateways.len() as u32).to_le_bytes().to_vec();
            for gateway in &gateways {
                out.extend_from_slice(&gateway.0);
            }
            out
        })
    })
}

/// When to call again at the latest. Output: monotonic ms (u64 LE), or empty
/// if nothing is scheduled.
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_next_deadline(handle: u32) -> i32 {
    call(|m, _| m.client_next_deadline_ms(handle).map(|t| t.map(|ms| ms.to_le_bytes().to_vec()).unwrap_or_default()))
}

/// The core's counters. Output: UTF-8 JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_client_stats(handle: u32) -> i32 {
    call(|m, _| m.client_stats(handle).map(String::into_bytes))
}

/// Starts a client link to a node of the topology behind `topology`. arg 0:
/// node id (32); arg 1: the client's mailbox (32) on its reply gateway's
/// link, empty elsewhere. Output: link handle (u32 LE) ‖ first flight (to
/// send first).
#[unsafe(no_mangle)]
pub extern "C" fn nox_link_start(topology: u32) -> i32 {
    call(|m, a| {
        m.link_start(topology, &a[0], &a[1]).map(|(handle, first)| {
            let mut out = handle.to_le_bytes().to_vec();
            out.extend_from_slice(&first);
            out
        })
    })
}

/// Bytes received on a link, in order, any chunking. arg 0: the bytes.
/// Output: [`crate::fed_bytes`]: flags ‖ bytes to send now ‖ opened records.
/// A failure leaves the link failed (the host closes its socket).
#[unsafe(no_mangle)]
pub extern "C" fn nox_link_feed(handle: u32) -> i32 {
    call(|m, a| m.link_feed(handle, &a[0]).map(|fed| crate::fed_bytes(&fed)))
}

/// Seals one packet for an established link. arg 0: the packet (the
/// geometry's packet length). Output: the record to send.
#[unsafe(no_mangle)]
pub extern "C" fn nox_link_seal(handle: u32) -> i32 {
    call(|m, a| m.link_seal(handle, &a[0]))
}

/// The shielded payment address of a wallet seed. arg 0: the 32-byte seed.
/// Output: the address (`nox1…`, UTF-8).
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_address() -> i32 {
    call(|m, a| m.wallet_address(&a[0]).map(String::into_bytes))
}

/// Opens a published note ciphertext with a seed's viewing key. arg 0: seed (32);
/// arg 1: ciphertext; arg 2: asset word (32); arg 3: commitment (32). Output: JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_open_note() -> i32 {
    call(|m, a| m.wallet_open_note(&a[0], &a[1], &a[2], &a[3]))
}

/// Balances of a pool view. arg 0: the view's JSON (`PoolView::to_json`). Output: JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_balances() -> i32 {
    call(|m, a| m.wallet_balances(&a[0]))
}

/// Prepares a private transaction. arg 0: seed (32); arg 1: pool view JSON (empty: an empty
/// view); arg 2: the request JSON. Output: handle (u32 LE) ‖ description JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_prepare() -> i32 {
    call(|m, a| {
        let (handle, description) = m.wallet_prepare(&a[0], &a[1], &a[2])?;
        let mut out = handle.to_le_bytes().to_vec();
        out.extend_from_slice(&description);
        Ok(out)
    })
}

/// Loads a transfer proving key. arg 0: the key; `format` 0 arkworks compressed (published),
/// 1 uncompressed (a cache's copy). Output: handle (u32 LE).
#[unsafe(no_mangle)]
pub extern "C" fn nox_prover_load(format: u32) -> i32 {
    call(|m, a| m.prover_load(&a[0], format).map(|h| h.to_le_bytes().to_vec()))
}

/// The loaded key behind `key`, uncompressed (for a cache; `nox_prover_load(1)` reads it).
#[unsafe(no_mangle)]
pub extern "C" fn nox_prover_key_bytes(key: u32) -> i32 {
    call(|m, _| m.prover_key_bytes(key))
}

/// Proves the prepared transaction `prepared` (consumed) with the key `key`.
/// Output: proof (256) ‖ 8 public inputs (8 × 32).
#[unsafe(no_mangle)]
pub extern "C" fn nox_transfer_prove(key: u32, prepared: u32) -> i32 {
    call(|m, _| m.transfer_prove(key, prepared))
}

/// Split prover, phase 1: consumes the prepared transaction `prepared`. Output: the prepared
/// assignment (`NXP1…`, secret) every part takes.
#[unsafe(no_mangle)]
pub extern "C" fn nox_split_prepare(prepared: u32) -> i32 {
    call(|m, _| m.split_prepare(prepared))
}

/// Split prover, phase 2: MSM part `k` of `n` (k < n ≤ 64) with the key `key`. arg 0: the
/// prepared assignment. Output: the part (396 bytes).
#[unsafe(no_mangle)]
pub extern "C" fn nox_split_part(key: u32, k: u32, n: u32) -> i32 {
    call(|m, a| m.split_part(key, &a[0], k, n))
}

/// Split prover, phase 3: arg 0: the prepared assignment; arg 1: every part, concatenated in
/// any order. Output: proof (256) ‖ 8 public inputs (8 × 32), as `nox_transfer_prove`.
#[unsafe(no_mangle)]
pub extern "C" fn nox_split_finish(key: u32) -> i32 {
    call(|m, a| m.split_finish(key, &a[0], &a[1]))
}

/// The raw execution hash a payment binds. arg 0: action JSON `{"target", "data", "gas",
/// "fee"}`. Output: 32 bytes.
#[unsafe(no_mangle)]
pub extern "C" fn nox_pay_execution_hash() -> i32 {
    call(|m, a| m.pay_execution_hash(&a[0]))
}

/// The bytes the caller's own L1 data-fee figure is computed on. arg 0: JSON `{"pool",
/// "action_len"}`. Output: the sample's bytes.
#[unsafe(no_mangle)]
pub extern "C" fn nox_pay_data_fee_sample() -> i32 {
    call(|m, a| m.pay_data_fee_sample(&a[0]))
}

/// `BatchExecutor.execute(Bundle)` calldata. arg 0: the prepared transaction's description
/// JSON; arg 1: its proof (256); arg 2: action JSON `{"pool", "target", "data", "gas"}`.
#[unsafe(no_mangle)]
pub extern "C" fn nox_pay_bundle() -> i32 {
    call(|m, a| m.pay_bundle(&a[0], &a[1], &a[2]))
}

/// Applies pool logs to a wallet view. arg 0: seed (32); arg 1: view JSON (empty: new);
/// arg 2: `eth_getLogs` entries (JSON array); arg 3: the pool's address (20); `last_block`:
/// the last block the logs cover. Output: the new view JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_sync(last_block: u64) -> i32 {
    call(|m, a| m.wallet_sync(&a[0], &a[1], &a[2], &a[3], last_block))
}

/// The seed sealed as `nox wallet`'s `wallet.key`. arg 0: seed (32); arg 1: passphrase.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_seal_key() -> i32 {
    call(|m, a| m.wallet_seal_key(&a[0], &a[1]))
}

/// Opens a `wallet.key`. arg 0: the sealed file; arg 1: passphrase. Output: the seed (32).
/// Status 12: wrong passphrase or an altered byte; 13: not a wallet key file.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_open_key() -> i32 {
    call(|m, a| m.wallet_open_key(&a[0], &a[1]))
}

/// Seals a pool view as `nox wallet`'s `state` file. arg 0: seed (32); arg 1: view JSON.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_seal_state() -> i32 {
    call(|m, a| m.wallet_seal_state(&a[0], &a[1]))
}

/// Opens a sealed state. arg 0: seed (32); arg 1: the sealed state. Output: the view JSON.
/// Status 12: another seed or an altered byte; 13: not a state file.
#[unsafe(no_mangle)]
pub extern "C" fn nox_wallet_open_state() -> i32 {
    call(|m, a| m.wallet_open_state(&a[0], &a[1]))
}
