//! Sphinx nodes and paths for packet tests.

use nox_sphinx::{Delay, NodeId, PathHop, Scheme, SecretKey};
use rand_core::{CryptoRng, RngCore};

/// A node of a test path: its id and its Sphinx secret key.
pub struct TestNode {
    /// `[i, 0, …, 0, 0xAA]` for the `i`-th node.
    pub id: NodeId,
    /// A fresh key of the test's scheme.
    pub secret: SecretKey,
}

/// `count` nodes with ids `[i, 0, …, 0, 0xAA]` and fresh keys of `scheme`, drawn from `rng`
/// in order.
pub fn nodes<R: RngCore + CryptoRng>(scheme: Scheme, count: usize, rng: &mut R) -> Vec<TestNode> {
    (0..count)
        .map(|i| {
            let mut id = [0u8; 32];
            id[0] = u8::try_from(i).expect("at most 256 test nodes");
            id[31] = 0xAA;
            TestNode { id: NodeId(id), secret: SecretKey::generate_for(scheme, rng) }
        })
        .collect()
}

/// The path through `nodes` in order, hop `i` with delay `first_delay + i` and no PoW.
pub fn path(nodes: &[TestNode], first_delay: u32) -> Vec<PathHop> {
    (0u32..)
        .zip(nodes)
        .map(|(i, n)| PathHop {
            node: n.id,
            public_key: n.secret.public_key(),
            delay: Delay(first_delay + i),
            pow_difficulty: 0,
        })
        .collect()
}

/// A path over `keys`, hop `i` named `[i; 32]`, no delay and no PoW (benchmarks, where ids do
/// not matter).
pub fn hops(keys: &[SecretKey]) -> Vec<PathHop> {
    (0u8..)
        .zip(keys)
        .map(|(i, k)| PathHop { node: NodeId([i; 32]), public_key: k.public_key(), delay: Delay(0), pow_difficulty: 0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;

    #[test]
    fn nodes_are_deterministic_and_named_by_index() {
        let mut a = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let mut b = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let (x, y) = (nodes(Scheme::Ristretto255, 3, &mut a), nodes(Scheme::Ristretto255, 3, &mut b));
        assert_eq!((x[2].id.0[0], x[2].id.0[31]), (2, 0xAA));
        assert!(x.iter().zip(&y).all(|(p, q)| p.secret.public_key() == q.secret.public_key()));
        let p = path(&x, 1000);
        assert_eq!((p[0].delay, p[2].delay, p[1].node), (Delay(1000), Delay(1002), x[1].id));
        let keys: Vec<SecretKey> = x.into_iter().map(|n| n.secret).collect();
        let h = hops(&keys);
        assert_eq!((h[1].node, h[1].delay), (NodeId([1; 32]), Delay(0)));
    }
}
