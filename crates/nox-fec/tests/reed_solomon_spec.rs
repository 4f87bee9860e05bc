//! The Reed-Solomon code of `docs/spec/fragments.md` §4, written from the spec
//! text alone (field, basis, symbol layout, high/low-rate definitions) with
//! plain Gaussian elimination, and checked against the committed vectors and
//! against the implementation (`reed-solomon-simd`) on layouts covering both
//! rates, several chunks and shards with and without a partial 64-byte block.
//! It is slow and simple on purpose: an executable reading of the spec.

// Matrix code reads closest to the spec with explicit indices.
#![allow(clippy::needless_range_loop)]

use nox_fec::{HEADER_LEN, Layout, MessageId, encode};
use serde_json::Value;

/// x^16 + x^5 + x^3 + x^2 + 1.
const POLY: u32 = 0x1_002d;

/// β_0 .. β_15 in the polynomial basis (spec §4.2).
const CANTOR: [u16; 16] = [
    0x0001, 0xacca, 0x3c0e, 0x163e, 0xc582, 0xed2e, 0x914c, 0x4012, 0x6c98, 0x10d8, 0x6a72, 0xb900, 0xfdb8, 0xfb34,
    0xff38, 0x991e,
];

/// Field elements in the polynomial basis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Gf(u16);

impl Gf {
    fn mul(self, other: Gf) -> Gf {
        let (mut a, mut b, mut r) = (u32::from(self.0), other.0, 0u32);
        while b != 0 {
            if b & 1 == 1 {
                r ^= a;
            }
            b >>= 1;
            a <<= 1;
            if a & 0x1_0000 != 0 {
                a ^= POLY;
            }
        }
        Gf(r as u16)
    }
    fn pow(self, mut e: u32) -> Gf {
        let (mut base, mut r) = (self, Gf(1));
        while e != 0 {
            if e & 1 == 1 {
                r = r.mul(base);
            }
            base = base.mul(base);
            e >>= 1;
        }
        r
    }
    fn inv(self) -> Gf {
        self.pow(65_534)
    }
}

/// The element a 16-bit symbol value (or a position index) stands for:
/// Σ bit_i(v)·β_i.
fn element(value: u16) -> Gf {
    Gf((0..16).filter(|i| value >> i & 1 == 1).fold(0, |acc, i| acc ^ CANTOR[i]))
}

/// Inverse of [`element`], by solving the 16×16 system over GF(2) bit by bit.
fn value_of(x: Gf) -> u16 {
    // Gaussian elimination over GF(2): columns are β_i.
    let mut rows: Vec<(u16, u16)> = (0..16).map(|i| (CANTOR[i], 1u16 << i)).collect();
    let (mut target, mut value) = (x.0, 0u16);
    for bit in (0..16).rev() {
        let Some(pivot) = rows.iter().position(|(b, _)| b >> bit & 1 == 1) else { continue };
        let (pb, pv) = rows.swap_remove(pivot);
        for row in rows.iter_mut() {
            if row.0 >> bit & 1 == 1 {
                row.0 ^= pb;
                row.1 ^= pv;
            }
        }
        if target >> bit & 1 == 1 {
            target ^= pb;
            value ^= pv;
        }
    }
    assert_eq!(target, 0, "the Cantor basis spans the field");
    value
}

/// Solves `a · x = b` over GF(2^16) (a square and invertible).
fn solve(mut a: Vec<Vec<Gf>>, mut b: Vec<Gf>) -> Vec<Gf> {
    let n = b.len();
    for c in 0..n {
        let pivot = (c..n).find(|&r| a[r][c] != Gf(0)).expect("invertible");
        a.swap(c, pivot);
        b.swap(c, pivot);
        let inv = a[c][c].inv();
        for x in a[c].iter_mut() {
            *x = x.mul(inv);
        }
        b[c] = b[c].mul(inv);
        for r in 0..n {
            let f = a[r][c];
            if r != c && f != Gf(0) {
                for k in 0..n {
                    let v = a[c][k].mul(f);
                    a[r][k].0 ^= v.0;
                }
                b[r].0 ^= b[c].mul(f).0;
            }
        }
    }
    b
}

/// Symbols of a shard (spec §4.3): full 64-byte blocks hold 32 low bytes then
/// 32 high bytes; a final block of t bytes holds t/2 low then t/2 high bytes.
fn symbols(shard: &[u8]) -> Vec<u16> {
    let mut out = Vec::with_capacity(shard.len() / 2);
    for block in shard.chunks(64) {
        let half = block.len() / 2;
        out.extend((0..half).map(|k| u16::from(block[k]) | u16::from(block[half + k]) << 8));
    }
    out
}

/// Inverse of [`symbols`] for a shard of `2·values.len()` bytes.
fn shard_bytes(values: &[u16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 2);
    for block in values.chunks(32) {
        out.extend(block.iter().map(|v| *v as u8));
        out.extend(block.iter().map(|v| (*v >> 8) as u8));
    }
    out
}

fn high_rate(d: usize, p: usize) -> bool {
    let (n, m) = (d.next_power_of_two(), p.next_power_of_two());
    n > m || (n == m && d <= p)
}

/// The p×d generator matrix G: parity symbol j = Σ_i G[j][i]·data symbol i.
fn generator(d: usize, p: usize) -> Vec<Vec<Gf>> {
    let point = |k: usize| element(u16::try_from(k).expect("position below 2^16"));
    // Column i of G is the parity of the unit data vector e_i.
    let mut g = vec![vec![Gf(0); d]; p];
    if high_rate(d, p) {
        // Recovery r_0..r_{m-1} at ω_0..ω_{m-1}, data at ω_{m+i}:
        // Σ_j r_j·ω_j^e = Σ_i x_i·ω_{m+i}^e for e = 0..m-1.
        let m = p.next_power_of_two();
        let a: Vec<Vec<Gf>> = (0..m).map(|e| (0..m).map(|j| point(j).pow(e as u32)).collect()).collect();
        for i in 0..d {
            let b: Vec<Gf> = (0..m).map(|e| point(m + i).pow(e as u32)).collect();
            let r = solve(a.clone(), b);
            for j in 0..p {
                g[j][i] = r[j];
            }
        }
    } else {
        // Data at ω_0..ω_{d-1}, zeros at ω_d..ω_{n-1}; f of degree < n
        // through them; recovery j is f(ω_{n+j}).
        let n = d.next_power_of_two();
        let a: Vec<Vec<Gf>> = (0..n).map(|k| (0..n).map(|e| point(k).pow(e as u32)).collect()).collect();
        for i in 0..d {
            let b: Vec<Gf> = (0..n).map(|k| if k == i { Gf(1) } else { Gf(0) }).collect();
            let coef = solve(a.clone(), b);
            for j in 0..p {
                let x = point(n + j);
                g[j][i] = coef.iter().enumerate().fold(Gf(0), |acc, (e, c)| Gf(acc.0 ^ c.mul(x.pow(e as u32)).0));
            }
        }
    }
    g
}

/// Parity shards of `data` by the spec's definition.
fn spec_parity(data: &[Vec<u8>], p: usize) -> Vec<Vec<u8>> {
    let d = data.len();
    if d == 1 {
        return vec![data[0].clone(); p];
    }
    let g = generator(d, p);
    let columns: Vec<Vec<u16>> = data.iter().map(|s| symbols(s)).collect();
    (0..p)
        .map(|j| {
            let values: Vec<u16> = (0..columns[0].len())
                .map(|pos| {
                    let sum = (0..d).fold(0u16, |acc, i| acc ^ g[j][i].mul(element(columns[i][pos])).0);
                    value_of(Gf(sum))
                })
                .collect();
            shard_bytes(&values)
        })
        .collect()
}

#[test]
fn basis_maps_values_to_elements_and_back() {
    for v in [0u16, 1, 2, 0x8000, 0x1234, 0xffff] {
        assert_eq!(value_of(element(v)), v);
    }
}

#[test]
fn committed_vectors_follow_the_spec_definition() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/fragments.json");
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("vectors")).expect("json");
    let mut checked = 0;
    for v in vectors["valid"].as_array().expect("valid") {
        let d = v["data_shards"].as_u64().expect("d") as usize;
        let p = v["parity_shards"].as_u64().expect("p") as usize;
        let shards: Vec<Vec<u8>> = v["fragments"]
            .as_array()
            .expect("fragments")
            .iter()
            .map(|f| hex::decode(f.as_str().expect("hex")).expect("hex")[HEADER_LEN..].to_vec())
            .collect();
        let expected_rate = match (p, d) {
            (0, _) => "none",
            (_, 1) => "copy",
            _ if high_rate(d, p) => "high",
            _ => "low",
        };
        assert_eq!(v["parity_construction"], expected_rate, "{}", v["name"]);
        assert_eq!(spec_parity(&shards[..d], p), shards[d..].to_vec(), "{}", v["name"]);
        checked += 1;
    }
    assert!(checked >= 10);
}

#[test]
fn implementation_matches_the_spec_definition_across_rates_and_chunks() {
    // (d, p, shard length): high and low rate, one and several chunks,
    // equal powers of two both ways, whole blocks and partial tails.
    let cases = [
        (2, 1, 2),
        (2, 2, 66),
        (3, 5, 64),
        (5, 3, 130),
        (4, 4, 62),
        (7, 9, 40),
        (17, 3, 96),
        (3, 40, 70),
        (2, 20, 200),
    ];
    for (d, p, s) in cases {
        let message: Vec<u8> = (0..d * s).map(|i| (i * 131 + 17) as u8 ^ (i >> 8) as u8).collect();
        let layout = Layout::new(message.len(), d, p).expect("layout");
        assert_eq!(layout.shard_len(), s);
        let fragments = encode(&message, MessageId::from_bytes([7; 16]), &layout).expect("encode");
        let shards: Vec<Vec<u8>> = fragments.iter().map(|f| f[HEADER_LEN..].to_vec()).collect();
        assert_eq!(spec_parity(&shards[..d], p), shards[d..].to_vec(), "d = {d}, p = {p}, s = {s}");
    }
}
