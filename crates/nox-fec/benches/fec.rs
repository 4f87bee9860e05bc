//! Encode, decode and reassembly of a 300 KiB reply with d = 11, p = 4, the
//! configuration of the NOX report ("Tier 6"). Results: docs/benchmarks/fec.md.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use nox_fec::{Encoder, HEADER_LEN, Layout, MessageId, Reassembler, ReassemblyLimits, decode, encode};

const REPLY_LEN: usize = 300 * 1024;
const DATA_SHARDS: usize = 11;
const PARITY_SHARDS: usize = 4;
const LOST_DATA_SHARDS: usize = 4;

fn reply() -> Vec<u8> {
    // Deterministic, non-repeating bytes; the codec is data-independent.
    (0..REPLY_LEN).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

fn benches(c: &mut Criterion) {
    let message = reply();
    let layout = Layout::new(REPLY_LEN, DATA_SHARDS, PARITY_SHARDS).expect("valid layout");
    let id = MessageId::from_bytes([7; 16]);
    let fragments = encode(&message, id, &layout).expect("encodes");
    let shards: Vec<(usize, &[u8])> = fragments.iter().enumerate().map(|(i, f)| (i, &f[HEADER_LEN..])).collect();
    let limits = ReassemblyLimits { max_message_len: REPLY_LEN, ..ReassemblyLimits::default() };

    let mut group = c.benchmark_group("fec_300KiB_d11_p4");
    group.throughput(Throughput::Bytes(REPLY_LEN as u64));
    group.bench_function("encode", |b| b.iter(|| encode(black_box(&message), id, &layout).expect("encodes")));
    group.bench_function("encode_reused_encoder", |b| {
        let mut encoder = Encoder::new();
        b.iter(|| encoder.encode(black_box(&message), id, &layout).expect("encodes"))
    });
    group.bench_function("decode_4_data_lost", |b| {
        let survivors = &shards[LOST_DATA_SHARDS..];
        b.iter(|| decode(&layout, black_box(survivors).iter().copied()).expect("decodes"))
    });
    group.bench_function("decode_all_data_fast_path", |b| {
        let data = &shards[..DATA_SHARDS];
        b.iter(|| decode(&layout, black_box(data).iter().copied()).expect("decodes"))
    });
    group.bench_function("reassemble_all_data", |b| {
        b.iter_batched(
            || Reassembler::new(limits).expect("valid limits"),
            |mut reassembler| {
                for fragment in &fragments[..DATA_SHARDS] {
                    let _ = reassembler.accept(black_box(fragment), 0).expect("accepted");
                }
                reassembler
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("reassemble_4_data_lost", |b| {
        b.iter_batched(
            || Reassembler::new(limits).expect("valid limits"),
            |mut reassembler| {
                for fragment in &fragments[LOST_DATA_SHARDS..] {
                    let _ = reassembler.accept(black_box(fragment), 0).expect("accepted");
                }
                reassembler
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(fec, benches);
criterion_main!(fec);
