//! HCTR2 against its parts over the default Sphinx body (32,512 bytes):
//! `cargo bench -p nox-hctr2`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use nox_hctr2::{Backend, Hctr2};

const BODY: usize = 32_512;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("hctr2");
    let mut body = vec![5u8; BODY];
    group.bench_function("decrypt_32512", |b| {
        b.iter(|| Hctr2::new(black_box(&[4; 16])).decrypt(b"", black_box(&mut body)))
    });
    for backend in Backend::all() {
        if Hctr2::with_backend(&[4; 16], backend).is_none() {
            continue;
        }
        group.bench_function(format!("decrypt_32512_polyval_{backend:?}"), |b| {
            b.iter(|| {
                let c = Hctr2::with_backend(black_box(&[4; 16]), backend).expect("available");
                c.decrypt(b"", black_box(&mut body))
            })
        });
    }
    group.bench_function("xctr_32512", |b| {
        b.iter(|| nox_hctr2::xctr_for_tests(black_box(&[4; 16]), &[1; 16], black_box(&mut body)))
    });
    group.bench_function("key_setup", |b| b.iter(|| Hctr2::new(black_box(&[4; 16]))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
