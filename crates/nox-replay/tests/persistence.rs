//! Snapshot and journal: round trips, corruption, torn tails, restart semantics.

use nox_replay::{BloomParameters, InsertOutcome, JournalError, ParsedJournal, ReplayCache, SnapshotError, journal};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn random_tag(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut tag = [0u8; 32];
    rng.fill_bytes(&mut tag);
    tag
}

fn params() -> BloomParameters {
    // 10^5 tags at 0.1 %: 1,437,760 bits = 22,465 words = 44 pages of 4 KiB (6-byte page map).
    BloomParameters::for_capacity(100_000, 0.001).expect("valid")
}

fn filled_cache(epoch: u32, tags: usize, seed: u64) -> (ReplayCache, Vec<[u8; 32]>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut cache = ReplayCache::new(epoch, params());
    let tags: Vec<[u8; 32]> = (0..tags).map(|_| random_tag(&mut rng)).collect();
    for tag in &tags {
        assert_eq!(cache.insert(tag), InsertOutcome::Inserted);
    }
    (cache, tags)
}

#[test]
fn snapshot_round_trip_is_exact() {
    let (cache, tags) = filled_cache(3, 5_000, 1);
    let bytes = cache.to_bytes();
    let restored = ReplayCache::from_bytes(&bytes).expect("valid snapshot");
    assert_eq!(restored, cache);
    assert_eq!(restored.epoch(), 3);
    assert_eq!(restored.inserted(), 5_000);
    assert!(tags.iter().all(|tag| restored.check(tag)));
    // Streaming and buffered encodings are identical.
    let mut streamed = Vec::new();
    cache.write_snapshot(&mut streamed).unwrap();
    assert_eq!(streamed, bytes);
}

#[test]
fn empty_pages_are_not_stored() {
    let empty = ReplayCache::new(1, params());
    let empty_len = empty.to_bytes().len();
    // Header, page map (44 pages → 6 bytes), trailer: no page bodies.
    assert_eq!(empty_len, 64 + 6 + 32);
    assert_eq!(ReplayCache::from_bytes(&empty.to_bytes()).unwrap(), empty);
    let (one, _) = filled_cache(1, 1, 2);
    // At most k = 10 pages touched, each 4 KiB.
    assert!(one.to_bytes().len() <= empty_len + 10 * 4096);
}

#[test]
fn snapshot_plus_journal_survives_a_restart() {
    let epoch = 5;
    let (mut cache, before_snapshot) = filled_cache(epoch, 2_000, 3);
    let snapshot = cache.to_bytes();

    // After the snapshot the node journals every new tag before releasing the packet.
    let mut journal_file = cache.journal_header().to_vec();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let after_snapshot: Vec<[u8; 32]> = (0..300).map(|_| random_tag(&mut rng)).collect();
    for tag in &after_snapshot {
        assert_eq!(cache.insert(tag), InsertOutcome::Inserted);
        journal_file.extend_from_slice(&cache.journal_record(tag));
    }

    // Crash. Restart: snapshot, then journal.
    let mut restored = ReplayCache::from_bytes(&snapshot).unwrap();
    assert!(after_snapshot.iter().any(|tag| !restored.check(tag)), "snapshot alone is stale");
    let recovery = restored.apply_journal(&journal_file).unwrap();
    assert_eq!(recovery.records, 300);
    assert_eq!(recovery.newly_inserted, 300);
    assert_eq!(recovery.valid_len, journal_file.len());
    assert_eq!(recovery.discarded_bytes, 0);
    for tag in before_snapshot.iter().chain(&after_snapshot) {
        assert_eq!(restored.insert(tag), InsertOutcome::AlreadyPresent, "replay accepted after restart");
    }
    assert_eq!(restored.set_bits(), cache.set_bits());

    // Replaying the journal again (crash after a new snapshot, before truncation) is harmless.
    let again = restored.apply_journal(&journal_file).unwrap();
    assert_eq!(again.newly_inserted, 0);
    assert_eq!(restored.set_bits(), cache.set_bits());
}

#[test]
fn torn_last_record_recovers_the_valid_prefix() {
    let epoch = 6;
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let tags: Vec<[u8; 32]> = (0..10).map(|_| random_tag(&mut rng)).collect();
    let mut file = journal::encode_header(epoch).to_vec();
    for tag in &tags {
        file.extend_from_slice(&journal::encode_record(epoch, tag));
    }
    let full_len = file.len();

    // Torn: the last record only partly written.
    let torn = &file[..full_len - 13];
    let parsed = ParsedJournal::parse(torn).unwrap();
    assert_eq!(parsed.record_count(), 9);
    assert_eq!(parsed.valid_len(), journal::HEADER_LEN + 9 * journal::RECORD_LEN);
    assert_eq!(parsed.discarded_bytes(), journal::RECORD_LEN - 13);
    assert_eq!(parsed.tags().collect::<Vec<_>>(), tags[..9].to_vec());

    // Torn differently: full length but the last record's bytes are garbage (unwritten sector).
    let mut garbage = file.clone();
    garbage[full_len - 20..].fill(0);
    let parsed = ParsedJournal::parse(&garbage).unwrap();
    assert_eq!(parsed.record_count(), 9);
    assert_eq!(parsed.discarded_bytes(), journal::RECORD_LEN);

    // Without a commit slot nothing was acknowledged as durable, so even a bad slot followed by
    // intact records (pages of an unfinished batch written out of order) is a torn tail.
    let mut middle = file.clone();
    middle[journal::HEADER_LEN + 3 * journal::RECORD_LEN + 5] ^= 1;
    let parsed = ParsedJournal::parse(&middle).unwrap();
    assert_eq!(parsed.record_count(), 3);
    assert_eq!(parsed.discarded_bytes(), 7 * journal::RECORD_LEN);

    // A header alone is an empty journal; less than a header is reported as such.
    assert_eq!(ParsedJournal::parse(&file[..journal::HEADER_LEN]).unwrap().record_count(), 0);
    assert_eq!(ParsedJournal::parse(&file[..10]), Err(JournalError::TruncatedHeader));
}

/// Writes `batches` the way the node does: each batch after the first starts with a commit slot
/// naming the file length the previous batch's sync made durable.
fn committed_journal(epoch: u32, batches: &[&[[u8; 32]]]) -> (Vec<u8>, Vec<usize>) {
    let mut file = journal::encode_header(epoch).to_vec();
    let mut batch_ends = Vec::new();
    for (index, batch) in batches.iter().enumerate() {
        if index > 0 {
            file.extend_from_slice(&journal::encode_commit(epoch, file.len() as u64));
        }
        for tag in *batch {
            file.extend_from_slice(&journal::encode_record(epoch, tag));
        }
        batch_ends.push(file.len()); // "fdatasync" here
    }
    (file, batch_ends)
}

#[test]
fn damage_before_a_commit_slot_is_an_error_not_a_torn_tail() {
    let epoch = 8;
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let tags: Vec<[u8; 32]> = (0..12).map(|_| random_tag(&mut rng)).collect();
    let (file, ends) = committed_journal(epoch, &[&tags[..4], &tags[4..8], &tags[8..]]);
    let parsed = ParsedJournal::parse(&file).unwrap();
    assert_eq!(parsed.version(), journal::VERSION);
    assert_eq!(parsed.record_count(), 12);
    assert_eq!(parsed.tags().collect::<Vec<_>>(), tags);
    assert_eq!(parsed.durable_len(), ends[1] as u64);

    // A bit flipped in the first (synced, committed) batch: the commit slots after it prove
    // those bytes were durable, so this is damage and the tags after it are known lost.
    let mut damaged = file.clone();
    damaged[journal::HEADER_LEN + journal::RECORD_LEN + 3] ^= 0x40;
    let offset = (journal::HEADER_LEN + journal::RECORD_LEN) as u64;
    assert_eq!(ParsedJournal::parse(&damaged), Err(JournalError::Damaged { offset, durable_len: ends[1] as u64 }));
    let mut cache = ReplayCache::new(epoch, params());
    assert!(matches!(cache.apply_journal(&damaged), Err(JournalError::Damaged { .. })));

    // Zeros over a committed region (a lost write-back of durable pages) likewise.
    let mut zeroed = file.clone();
    zeroed[ends[0] - 10..ends[0] + 30].fill(0);
    assert!(matches!(ParsedJournal::parse(&zeroed), Err(JournalError::Damaged { .. })));

    // The last batch was never covered by a commit slot (no batch followed its sync): its slots
    // garbled, even out of order (a bad slot then an intact one), are a torn tail.
    let mut torn = file.clone();
    torn[ends[1] + journal::RECORD_LEN + 1] ^= 1; // first record of the last batch
    let parsed = ParsedJournal::parse(&torn).unwrap();
    assert_eq!(parsed.record_count(), 8);
    assert_eq!(parsed.valid_len(), ends[1] + journal::RECORD_LEN);
    assert_eq!(parsed.discarded_bytes(), file.len() - parsed.valid_len());
    // ... and so is a commit slot followed by nothing, or a short tail.
    let parsed = ParsedJournal::parse(&file[..ends[1] + journal::RECORD_LEN + 7]).unwrap();
    assert_eq!(parsed.record_count(), 8);
    assert_eq!(parsed.discarded_bytes(), 7);

    // A commit slot written for another epoch, or with non-zero padding, is just a bad slot.
    let mut foreign = journal::encode_header(epoch).to_vec();
    foreign.extend_from_slice(&journal::encode_record(epoch, &tags[0]));
    foreign.extend_from_slice(&journal::encode_record(epoch, &tags[1]));
    let mut wrong = foreign.clone();
    wrong[journal::HEADER_LEN + 3] ^= 1;
    wrong.extend_from_slice(&journal::encode_commit(epoch + 1, wrong.len() as u64));
    assert_eq!(ParsedJournal::parse(&wrong).unwrap().record_count(), 0);
    let mut padded = journal::encode_commit(epoch, 1_000);
    padded[20] = 1;
    let mut with_padding = foreign.clone();
    with_padding[journal::HEADER_LEN + 3] ^= 1;
    with_padding.extend_from_slice(&padded);
    assert_eq!(ParsedJournal::parse(&with_padding).unwrap().record_count(), 0);
}

#[test]
fn version_1_journals_are_still_read() {
    let epoch = 4;
    let mut file = journal::encode_header_version(epoch, journal::VERSION_1).to_vec();
    for i in 0..6u8 {
        file.extend_from_slice(&journal::encode_record(epoch, &[i; 32]));
    }
    let parsed = ParsedJournal::parse(&file).unwrap();
    assert_eq!((parsed.version(), parsed.record_count()), (1, 6));
    // Torn tail: cut.
    let parsed = ParsedJournal::parse(&file[..file.len() - 1]).unwrap();
    assert_eq!(parsed.record_count(), 5);
    // No commit slots in v1: an intact record after a bad one is damage.
    let mut middle = file.clone();
    middle[journal::HEADER_LEN + 2 * journal::RECORD_LEN] ^= 1;
    assert_eq!(
        ParsedJournal::parse(&middle),
        Err(JournalError::Damaged {
            offset: (journal::HEADER_LEN + 2 * journal::RECORD_LEN) as u64,
            durable_len: file.len() as u64
        })
    );
    // Versions other than 1 and 2 are refused by name.
    let v3 = journal::encode_header_version(epoch, 3);
    assert_eq!(ParsedJournal::parse(&v3), Err(JournalError::UnsupportedVersion(3)));
}

#[test]
fn journal_of_another_epoch_or_a_bad_header_is_rejected() {
    let mut cache = ReplayCache::new(1, params());
    let other = journal::encode_header(2);
    assert_eq!(cache.apply_journal(&other), Err(JournalError::EpochMismatch { journal: 2, cache: 1 }));
    let mut bad = journal::encode_header(1);
    bad[13] ^= 1; // the epoch byte, under the header check
    assert_eq!(cache.apply_journal(&bad), Err(JournalError::HeaderChecksumMismatch));
    bad[0] = b'X';
    assert_eq!(cache.apply_journal(&bad), Err(JournalError::BadMagic));
    // A record written for another epoch does not verify in this one.
    let mut file = journal::encode_header(1).to_vec();
    file.extend_from_slice(&journal::encode_record(2, &[1u8; 32]));
    assert_eq!(cache.apply_journal(&file).unwrap().records, 0);
}

#[test]
fn corrupt_or_truncated_snapshots_are_rejected() {
    let (cache, _) = filled_cache(9, 1_000, 6);
    let bytes = cache.to_bytes();

    for cut in [0, 10, 63, 64, 100, bytes.len() / 2, bytes.len() - 1] {
        assert_eq!(ReplayCache::from_bytes(&bytes[..cut]), Err(SnapshotError::Truncated), "cut {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(ReplayCache::from_bytes(&longer), Err(SnapshotError::TrailingBytes(1)));

    // Any single flipped bit in the body or trailer fails the checksum.
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let body_start = 64 + 6;
    for _ in 0..50 {
        let mut corrupt = bytes.clone();
        let at = body_start + (rng.next_u64() as usize) % (bytes.len() - body_start);
        corrupt[at] ^= 1 << (rng.next_u32() % 8);
        assert_eq!(ReplayCache::from_bytes(&corrupt), Err(SnapshotError::ChecksumMismatch), "byte {at}");
    }

    let mut magic = bytes.clone();
    magic[0] ^= 0xFF;
    assert_eq!(ReplayCache::from_bytes(&magic), Err(SnapshotError::BadMagic));
    let mut version = bytes.clone();
    version[8] = 2;
    assert_eq!(ReplayCache::from_bytes(&version), Err(SnapshotError::UnsupportedVersion(2)));
    let mut reserved = bytes.clone();
    reserved[29] = 1;
    assert_eq!(ReplayCache::from_bytes(&reserved), Err(SnapshotError::ReservedNotZero));
    let mut header = bytes.clone();
    header[48] ^= 1; // set-bit count: caught by the checksum first
    assert_eq!(ReplayCache::from_bytes(&header), Err(SnapshotError::ChecksumMismatch));
    let mut hashes = bytes.clone();
    hashes[24..28].copy_from_slice(&0u32.to_le_bytes());
    assert!(matches!(ReplayCache::from_bytes(&hashes), Err(SnapshotError::Parameters(_))));
}

#[test]
fn a_huge_header_is_refused_before_allocating() {
    let (cache, _) = filled_cache(9, 10, 8);
    let mut bytes = cache.to_bytes();
    // Claim the maximum filter size: the input cannot back its page map, so it is refused as
    // truncated without allocating 2 GiB.
    bytes[16..24].copy_from_slice(&nox_replay::MAX_FILTER_BITS.to_le_bytes());
    assert_eq!(ReplayCache::from_bytes(&bytes), Err(SnapshotError::Truncated));
    bytes[16..24].copy_from_slice(&(nox_replay::MAX_FILTER_BITS * 2).to_le_bytes());
    assert!(matches!(ReplayCache::from_bytes(&bytes), Err(SnapshotError::Parameters(_))));
}

#[test]
fn set_bit_count_must_match_the_body() {
    // Re-sign a snapshot whose header lies about the set-bit count: the checksum passes,
    // the consistency check does not.
    let (cache, _) = filled_cache(9, 100, 9);
    let mut bytes = cache.to_bytes();
    let claimed = cache.set_bits() + 1;
    bytes[48..56].copy_from_slice(&claimed.to_le_bytes());
    let content_len = bytes.len() - 32;
    let checksum = blake3::Hasher::new_derive_key("NOX replay snapshot v1").update(&bytes[..content_len]).finalize();
    bytes[content_len..].copy_from_slice(checksum.as_bytes());
    assert_eq!(
        ReplayCache::from_bytes(&bytes),
        Err(SnapshotError::SetBitsMismatch { claimed, actual: cache.set_bits() })
    );
}
