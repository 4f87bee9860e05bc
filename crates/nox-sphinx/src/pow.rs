//! Proof of work (paper §4.7, eq. 17, adapted so the replay tag never covers
//! the nonce).
//!
//! `work = BLAKE3-derive_key(CTX_POW, replay_tag ‖ nonce)`; a nonce meets
//! difficulty `d` when `work` starts with at least `d` zero bits. The tag
//! already commits to the whole header except the nonce, so verification is
//! one single-block hash. Solving takes 2^d hashes on average.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::{
    crypto::{CTX_POW, kdf},
    error::SphinxError,
    header::ReplayTag,
};

/// Highest difficulty accepted: a 64-bit nonce cannot reliably do better.
pub const MAX_DIFFICULTY: u8 = 48;

/// Leading zero bits of the work hash for `nonce` (the shared [`kdf`]).
pub fn work_bits(tag: &ReplayTag, nonce: &[u8; 8]) -> u8 {
    let mut work = [0u8; 32];
    kdf(CTX_POW, &[&tag.0, nonce], &mut work);
    leading_zero_bits(&work)
}

/// `work_bits` from a clone of the keyed state (`base` = `derive_key(CTX_POW)` with nothing
/// hashed yet): the same bytes as [`kdf`], without deriving the context key again for every
/// nonce the search tries.
fn work_bits_from(base: &blake3::Hasher, tag: &ReplayTag, nonce: &[u8; 8]) -> u8 {
    let mut hasher = base.clone();
    hasher.update(&tag.0);
    hasher.update(nonce);
    leading_zero_bits(hasher.finalize().as_bytes())
}

fn leading_zero_bits(work: &[u8; 32]) -> u8 {
    let mut bits = 0u32;
    for byte in work {
        bits += byte.leading_zeros();
        if *byte != 0 {
            break;
        }
    }
    bits.min(u32::from(u8::MAX)) as u8
}

/// Finds a nonce meeting `difficulty`. With `threads <= 1` it searches
/// 0, 1, 2, ... and is deterministic; with more threads each thread searches
/// its own residue class and the first solution found wins. Where threads
/// cannot be spawned (wasm32-unknown-unknown) it searches like one thread
/// instead of panicking.
pub fn solve(tag: &ReplayTag, difficulty: u8, threads: usize) -> Result<[u8; 8], SphinxError> {
    if difficulty > MAX_DIFFICULTY {
        return Err(SphinxError::DifficultyOutOfRange(difficulty));
    }
    if difficulty == 0 {
        return Ok([0u8; 8]);
    }
    let base = blake3::Hasher::new_derive_key(CTX_POW);
    let threads = threads.max(1) as u64;
    if threads == 1 {
        return Ok(search(&base, tag, difficulty, 0, 1, &AtomicBool::new(false)).unwrap_or([0; 8]));
    }
    let done = AtomicBool::new(false);
    let found = std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for start in 0..threads {
            let (base, done) = (&base, &done);
            let worker = move || search(base, tag, difficulty, start, threads, done);
            match std::thread::Builder::new().spawn_scoped(scope, worker) {
                Ok(w) => workers.push(w),
                // No threads on this target (wasm32-unknown-unknown) or none
                // left: a residue class would go unsearched, so stop the
                // workers started and search on this thread alone.
                Err(_) => {
                    done.store(true, Ordering::Relaxed);
                    return None;
                }
            }
        }
        Some(workers.into_iter().filter_map(|w| w.join().ok().flatten()).next())
    });
    // The search space (2^64) cannot be exhausted at MAX_DIFFICULTY.
    let found = match found {
        Some(found) => found,
        None => search(&base, tag, difficulty, 0, 1, &AtomicBool::new(false)),
    };
    Ok(found.unwrap_or([0; 8]))
}

fn search(
    base: &blake3::Hasher,
    tag: &ReplayTag,
    difficulty: u8,
    start: u64,
    step: u64,
    done: &AtomicBool,
) -> Option<[u8; 8]> {
    let mut counter = start;
    loop {
        let nonce = counter.to_be_bytes();
        if work_bits_from(base, tag, &nonce) >= difficulty {
            done.store(true, Ordering::Relaxed);
            return Some(nonce);
        }
        if counter % 4096 == start % 4096 && done.load(Ordering::Relaxed) {
            return None;
        }
        counter = counter.checked_add(step)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_and_verifies() {
        let tag = ReplayTag([42; 32]);
        for difficulty in [0u8, 1, 8, 12] {
            let nonce = solve(&tag, difficulty, 1).unwrap();
            assert!(work_bits(&tag, &nonce) >= difficulty);
            let nonce = solve(&tag, difficulty, 2).unwrap();
            assert!(work_bits(&tag, &nonce) >= difficulty);
        }
        assert!(solve(&tag, MAX_DIFFICULTY + 1, 1).is_err());
    }

    #[test]
    fn nonce_is_bound_to_tag() {
        let nonce = solve(&ReplayTag([1; 32]), 16, 1).unwrap();
        // Another tag with this nonce fails with probability 1 - 2^-16.
        assert!(work_bits(&ReplayTag([2; 32]), &nonce) < 16);
    }
}
