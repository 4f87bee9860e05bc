//! Client side: building headers (for forward packets and SURBs) and
//! forward packets.

use curve25519_dalek::{constants::RISTRETTO_BASEPOINT_TABLE, scalar::Scalar};
use rand_core::{CryptoRng, RngCore};
use zeroize::{Zeroize, Zeroizing};

use crate::{
    body::BodyKey,
    crypto::{HopKeys, header_mac, xor_keystream},
    error::SphinxError,
    geometry::{Blinding, Geometry, PREFIX_LEN, ROUTING_BLOCK_LEN},
    header::replay_tag_of,
    kem::ENCAPSULATION_RANDOMNESS_LEN,
    keys::{NodeId, PublicKey, encapsulate, random_scalar},
    padding::encode_body,
    pow,
    routing::{Delay, RoutingBlock},
};

/// One hop of a path, as the client knows it from the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathHop {
    /// The node's identifier; the previous hop forwards to it.
    pub node: NodeId,
    /// The node's Sphinx public key for the packet's key epoch.
    pub public_key: PublicKey,
    /// Mixing delay this hop should apply (`Delay(0)`: node's choice).
    pub delay: Delay,
    /// Proof-of-work difficulty this node requires, in bits.
    pub pow_difficulty: u8,
}

/// Options for building a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildOptions {
    /// Key epoch of the public keys in the path.
    pub key_epoch: u32,
    /// Threads for proof-of-work solving (1: deterministic).
    pub pow_threads: usize,
}

impl BuildOptions {
    /// Single-threaded proof of work for `key_epoch`.
    pub fn new(key_epoch: u32) -> Self {
        Self { key_epoch, pow_threads: 1 }
    }
}

/// A finished header and the body keys of its hops, first hop first.
pub(crate) struct BuiltHeader {
    pub header: Vec<u8>,
    pub body_keys: Vec<BodyKey>,
}

/// Builds a header for `path` whose last hop executes `last`.
pub(crate) fn build_header<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    options: &BuildOptions,
    path: &[PathHop],
    last: RoutingBlock,
    rng: &mut R,
) -> Result<BuiltHeader, SphinxError> {
    let hops = path.len();
    if hops == 0 || hops > geometry.hops() {
        return Err(SphinxError::PathLength { max: geometry.hops(), actual: hops });
    }
    let scheme = geometry.scheme();
    if let Some(hop) = path.iter().find(|hop| hop.public_key.scheme() != scheme) {
        return Err(SphinxError::WrongKeyScheme { expected: scheme, actual: hop.public_key.scheme() });
    }
    let mut prefix = [0u8; PREFIX_LEN];
    prefix[..4].copy_from_slice(&geometry.tag());
    prefix[4..].copy_from_slice(&options.key_epoch.to_be_bytes());

    // ε_i and the hop keys: blinded group elements or one KEM ciphertext per hop.
    let (ephemerals, keys) =
        if scheme.is_kem() { encapsulate_path(path, rng)? } else { blind_path(geometry, path, rng) };

    // Each hop shifts β by its routing block and, for KEM schemes, the next
    // hop's ciphertext; the stream covers β and the shifted-in tail.
    let shift = geometry.hop_shift();
    let routing_len = geometry.routing_len();
    let stream_len = routing_len + shift;
    let streams: Vec<Zeroizing<Vec<u8>>> = keys
        .iter()
        .map(|k| {
            let mut stream = Zeroizing::new(vec![0u8; stream_len]);
            xor_keystream(&k.routing, &mut stream);
            stream
        })
        .collect();

    // Filler: what hops 1..n-1 will find shifted in at the end of β.
    let mut filler: Vec<u8> = Vec::with_capacity(routing_len);
    for stream in streams.iter().take(hops - 1) {
        filler.resize(filler.len() + shift, 0);
        let tail = &stream[stream_len - filler.len()..];
        for (f, s) in filler.iter_mut().zip(tail) {
            *f ^= s;
        }
    }

    // Last hop: its block, random padding, encrypted; then the filler.
    let last_plain_len = routing_len - filler.len();
    let mut routing = vec![0u8; routing_len];
    routing[..ROUTING_BLOCK_LEN].copy_from_slice(&last.encode());
    rng.fill_bytes(&mut routing[ROUTING_BLOCK_LEN..last_plain_len]);
    for (r, s) in routing[..last_plain_len].iter_mut().zip(streams[hops - 1].iter()) {
        *r ^= s;
    }
    routing[last_plain_len..].copy_from_slice(&filler);

    let mut header = vec![0u8; geometry.header_len()];
    header[..PREFIX_LEN].copy_from_slice(&prefix);
    let mut index = hops - 1;
    loop {
        let mac = header_mac(&keys[index].mac, &prefix, &routing);
        header[geometry.alpha_range()].copy_from_slice(&ephemerals[index]);
        header[geometry.routing_range()].copy_from_slice(&routing);
        header[geometry.mac_range()].copy_from_slice(&mac);
        let tag = replay_tag_of(&header[..geometry.nonce_range().start]);
        let nonce = pow::solve(&tag, path[index].pow_difficulty, options.pow_threads)?;
        header[geometry.nonce_range()].copy_from_slice(&nonce);
        if index == 0 {
            break;
        }
        // Wrap one more layer for the previous hop: its block, then (KEM
        // schemes) the ciphertext of the hop it forwards to.
        index -= 1;
        let block = RoutingBlock::Forward {
            delay: path[index].delay,
            next_hop: path[index + 1].node,
            next_mac: mac,
            next_nonce: nonce,
        };
        routing.copy_within(..routing_len - shift, shift);
        routing[..ROUTING_BLOCK_LEN].copy_from_slice(&block.encode());
        if scheme.is_kem() {
            routing[ROUTING_BLOCK_LEN..shift].copy_from_slice(&ephemerals[index + 1]);
        }
        for (r, s) in routing.iter_mut().zip(streams[index].iter()) {
            *r ^= s;
        }
    }
    let body_keys = keys.iter().map(|k| k.body.clone()).collect();
    Ok(BuiltHeader { header, body_keys })
}

/// Successive blinding (paper eq. 3, 6; Lemma 1): hop i sees
/// α_i = a_i·B and shares s_i = a_i·X_i, with a_{i+1} = a_i·b_i
/// (multiplicative) or a_i + b_i (additive).
fn blind_path<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    path: &[PathHop],
    rng: &mut R,
) -> (Vec<Vec<u8>>, Vec<HopKeys>) {
    let mut secret: Scalar = random_scalar(rng);
    let mut alphas = Vec::with_capacity(path.len());
    let mut keys = Vec::with_capacity(path.len());
    for hop in path {
        let alpha = (RISTRETTO_BASEPOINT_TABLE * &secret).compress().to_bytes();
        let shared = Zeroizing::new((hop.public_key.point() * secret).compress().to_bytes());
        let hop_keys = HopKeys::derive(&alpha, &shared);
        match geometry.blinding() {
            Blinding::Multiplicative => secret *= hop_keys.blinding,
            Blinding::Additive => secret += hop_keys.blinding,
        }
        alphas.push(alpha.to_vec());
        keys.push(hop_keys);
    }
    secret.zeroize();
    (alphas, keys)
}

/// KEM Sphinx: one independent encapsulation to every hop's key; the hop
/// keys come from the ciphertext and the shared secret.
fn encapsulate_path<R: RngCore + CryptoRng>(
    path: &[PathHop],
    rng: &mut R,
) -> Result<(Vec<Vec<u8>>, Vec<HopKeys>), SphinxError> {
    let mut ciphertexts = Vec::with_capacity(path.len());
    let mut keys = Vec::with_capacity(path.len());
    for hop in path {
        let mut randomness = Zeroizing::new([0u8; ENCAPSULATION_RANDOMNESS_LEN]);
        rng.fill_bytes(&mut randomness[..]);
        let (ct, shared) = encapsulate(&hop.public_key, &randomness).ok_or(SphinxError::InvalidPublicKey)?;
        keys.push(HopKeys::derive(&ct, &shared));
        ciphertexts.push(ct);
    }
    Ok((ciphertexts, keys))
}

/// Builds a forward packet carrying `payload` along `path`; the last hop
/// delivers the payload (exit). Returns the packet to send to `path[0]`.
pub fn build_forward<R: RngCore + CryptoRng>(
    geometry: &Geometry,
    options: &BuildOptions,
    path: &[PathHop],
    payload: &[u8],
    rng: &mut R,
) -> Result<Vec<u8>, SphinxError> {
    let last_delay = path.last().map(|hop| hop.delay).unwrap_or_default();
    let built = build_header(geometry, options, path, RoutingBlock::Deliver { delay: last_delay }, rng)?;
    let mut packet = vec![0u8; geometry.packet_len()];
    let (header, body) = packet.split_at_mut(geometry.header_len());
    header.copy_from_slice(&built.header);
    encode_body(payload, body)?;
    for cipher in built.body_keys.iter().rev() {
        cipher.encrypt(body);
    }
    Ok(packet)
}
