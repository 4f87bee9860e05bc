//! The private-transfer side of the module (issue 31): the shielded wallet's pure core
//! (`nox-wallet`: keys from the seed, note opening, the pool view, transaction preparation) and
//! the 2-in/2-out transfer prover (`nox-zk`), the same Rust code `nox wallet` runs natively.
//!
//! The witness never crosses the boundary: [`Module::wallet_prepare`] keeps the prepared
//! transaction (its spending key and notes) behind a handle, and [`Module::transfer_prove`]
//! consumes it. The proving key is decoded once ([`Module::prover_load`]) and kept behind its
//! own handle for every later proof.

use ark_bn254::{Bn254, Fr};
use nox_wallet::{
    OutputRole, PaymentAddress, PoolView, PreparedTransaction, Seed, TxRequest, WalletError,
    memo::{self, Opened},
};
use nox_zk::{ZkError, field, groth16::ProvingKey, split_prover, transfer};
use rand_core::RngCore;
use serde::Deserialize;
use serde_json::json;
use zeroize::Zeroizing;

use crate::api::{Module, Object, WasmError, bad};

/// Length of a wallet seed.
pub const WALLET_SEED_LEN: usize = 32;
/// [`Module::prover_load`]'s format: arkworks compressed (the published key).
pub const KEY_COMPRESSED: u32 = 0;
/// [`Module::prover_load`]'s format: arkworks uncompressed (a cache's copy).
pub const KEY_UNCOMPRESSED: u32 = 1;

/// A transaction request as the host writes it (JSON): every word hex (32 bytes big-endian for
/// field elements, 20 bytes for addresses), amounts as decimal strings (they exceed 2^53).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestJson {
    /// `uint160(asset)` as a 32-byte word; omitted for ETH.
    #[serde(default)]
    asset: Option<String>,
    /// At most two payments: `{ "to": "nox1…", "value": "…" }`.
    #[serde(default)]
    outputs: Vec<OutputJson>,
    #[serde(default)]
    public_in: Option<String>,
    #[serde(default)]
    public_out: Option<String>,
    #[serde(default)]
    fee: Option<String>,
    #[serde(default)]
    recipient: Option<String>,
    #[serde(default)]
    relayer: Option<String>,
    #[serde(default)]
    execution_hash: Option<String>,
    chain_id: u64,
    pool: String,
    deadline: u64,
    #[serde(default)]
    avoid: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputJson {
    to: String,
    value: String,
}

fn hex_bytes<const N: usize>(what: &str, s: Option<&str>) -> Result<[u8; N], WasmError> {
    let Some(s) = s else { return Ok([0u8; N]) };
    let s = s.strip_prefix("0x").unwrap_or(s);
    let v = hex::decode(s).map_err(|_| bad(format!("{what}: not hex")))?;
    v.try_into().map_err(|_| bad(format!("{what}: must be {N} bytes")))
}

fn word(what: &str, s: Option<&str>) -> Result<Fr, WasmError> {
    field::from_be32(&hex_bytes::<32>(what, s)?).map_err(|_| bad(format!("{what}: not below the field modulus")))
}

fn amount(what: &str, s: Option<&str>) -> Result<u128, WasmError> {
    match s {
        None => Ok(0),
        Some(s) => s.parse().map_err(|_| bad(format!("{what}: not a decimal amount below 2^128"))),
    }
}

fn hex_word(x: &Fr) -> String {
    hex::encode(field::to_be32(x))
}

pub(crate) fn seed_of(bytes: &[u8]) -> Result<Seed, WasmError> {
    let s: [u8; WALLET_SEED_LEN] = bytes
        .try_into()
        .map_err(|_| bad(format!("wallet seed must be {WALLET_SEED_LEN} bytes, got {}", bytes.len())))?;
    let s = Zeroizing::new(s);
    Ok(Seed::from_bytes(*s))
}

pub(crate) fn view_of(json: &[u8]) -> Result<PoolView, WasmError> {
    if json.is_empty() {
        return Ok(PoolView::new());
    }
    Ok(PoolView::from_json(json)?)
}

fn parse_request(json: &[u8]) -> Result<TxRequest, WasmError> {
    let r: RequestJson = serde_json::from_slice(json).map_err(|e| bad(format!("transaction request: {e}")))?;
    let outputs = r
        .outputs
        .iter()
        .map(|o| {
            let to: PaymentAddress = o.to.parse().map_err(|e| bad(format!("output address: {e}")))?;
            Ok((to, amount("output value", Some(&o.value))?))
        })
        .collect::<Result<Vec<_>, WasmError>>()?;
    let avoid = r.avoid.iter().map(|n| word("avoid", Some(n))).collect::<Result<Vec<_>, _>>()?;
    Ok(TxRequest {
        asset: word("asset", r.asset.as_deref())?,
        outputs,
        public_in: amount("public_in", r.public_in.as_deref())?,
        public_out: amount("public_out", r.public_out.as_deref())?,
        fee: amount("fee", r.fee.as_deref())?,
        recipient: hex_bytes("recipient", r.recipient.as_deref())?,
        relayer: hex_bytes("relayer", r.relayer.as_deref())?,
        execution_hash: hex_bytes("execution_hash", r.execution_hash.as_deref())?,
        chain_id: r.chain_id,
        pool: hex_bytes("pool", Some(&r.pool))?,
        deadline: r.deadline,
        avoid,
    })
}

/// What the host learns of a prepared transaction (JSON): the pool's `Transaction` values less
/// the proof, and what it spends and makes.
fn describe(p: &PreparedTransaction) -> serde_json::Value {
    let f = &p.fields;
    let role = |r: OutputRole| match r {
        OutputRole::Requested => "requested",
        OutputRole::Change => "change",
        OutputRole::Padding => "padding",
    };
    json!({
        "root": hex::encode(f.root),
        "nullifiers": f.nullifiers.iter().map(hex::encode).collect::<Vec<_>>(),
        "commitments": f.commitments.iter().map(hex::encode).collect::<Vec<_>>(),
        "asset": hex::encode(f.asset),
        "public_in": f.public_in.to_string(),
        "public_out": f.public_out.to_string(),
        "fee": f.fee.to_string(),
        "recipient": hex::encode(f.recipient),
        "deadline": f.deadline,
        "notes": f.notes.iter().map(hex::encode).collect::<Vec<_>>(),
        "context": hex_word(&p.public.context),
        "change": p.change.to_string(),
        "inputs": p.inputs.iter().map(|i| json!({
            "commitment": hex_word(&i.commitment),
            "nullifier": hex_word(&i.nullifier),
            "value": i.value.to_string(),
            "leaf_index": i.leaf_index,
        })).collect::<Vec<_>>(),
        "outputs": p.outputs.iter().map(|o| json!({
            "to": o.to.to_string(),
            "value": o.value.to_string(),
            "role": role(o.role),
            "commitment": hex_word(&o.commitment),
        })).collect::<Vec<_>>(),
    })
}

impl Module {
    /// A `rand_core` 0.6 RNG (the one arkworks and the wallet take) seeded from the module's
    /// host-seeded RNG.
    fn zk_rng(&mut self) -> Result<rand_chacha_03::ChaCha20Rng, WasmError> {
        use rand_core_06::SeedableRng;
        let mut s = Zeroizing::new([0u8; 32]);
        self.rng()?.fill_bytes(&mut s[..]);
        Ok(rand_chacha_03::ChaCha20Rng::from_seed(*s))
    }

    /// The shielded payment address (`nox1…`) of the wallet with `seed`, as `nox wallet` prints it.
    pub fn wallet_address(&self, seed: &[u8]) -> Result<String, WasmError> {
        Ok(seed_of(seed)?.address()?.to_string())
    }

    /// The seed sealed under `passphrase` as `nox wallet` keeps it (`wallet.key`: Argon2id at
    /// the default cost, ChaCha20-Poly1305; docs/spec/notes.md §6): `nox wallet restore --from`
    /// opens it.
    pub fn wallet_seal_key(&mut self, seed: &[u8], passphrase: &[u8]) -> Result<Vec<u8>, WasmError> {
        let seed = seed_of(seed)?;
        let mut rng = self.zk_rng()?;
        Ok(nox_wallet::file::seal_seed(&seed, passphrase, nox_wallet::file::KdfParams::default(), &mut rng)?)
    }

    /// Opens a `wallet.key` (the seed sealed under `passphrase`, written by `nox wallet new` or
    /// [`Module::wallet_seal_key`]): the 32-byte seed. A wrong passphrase or an altered byte is
    /// [`WasmError::WrongPassphrase`]; a file of another format [`WasmError::BadKeyFile`].
    pub fn wallet_open_key(&self, sealed: &[u8], passphrase: &[u8]) -> Result<Vec<u8>, WasmError> {
        let seed = nox_wallet::file::open_seed(sealed, passphrase).map_err(file_error)?;
        Ok(seed.as_bytes().to_vec())
    }

    /// The pool view's JSON sealed under the seed's state key, as `nox wallet` writes its `state`
    /// file (docs/spec/notes.md §6): what the browser keeps in IndexedDB.
    pub fn wallet_seal_state(&mut self, seed: &[u8], view_json: &[u8]) -> Result<Vec<u8>, WasmError> {
        let seed = seed_of(seed)?;
        let mut rng = self.zk_rng()?;
        Ok(nox_wallet::file::seal_state(&seed, view_json, &mut rng)?)
    }

    /// Opens a sealed state (a `state` file or [`Module::wallet_seal_state`]'s output) with the
    /// seed: the pool view's JSON. Another wallet's seed or an altered byte is
    /// [`WasmError::WrongPassphrase`].
    pub fn wallet_open_state(&self, seed: &[u8], sealed: &[u8]) -> Result<Vec<u8>, WasmError> {
        let seed = seed_of(seed)?;
        nox_wallet::file::open_state(&seed, sealed).map_err(file_error)
    }

    /// Opens a note ciphertext published with `commitment` (of `asset`, a 32-byte word) with the
    /// viewing key of `seed`: JSON `{"result":"mine","value":"…","blinding":"…"}`, or
    /// `{"result":"not_mine"}`, or `{"result":"corrupt"}` (the view tag is ours but the note does
    /// not open or match the commitment).
    pub fn wallet_open_note(
        &self,
        seed: &[u8],
        ciphertext: &[u8],
        asset: &[u8],
        commitment: &[u8],
    ) -> Result<Vec<u8>, WasmError> {
        let vk = seed_of(seed)?.viewing_key()?;
        let asset = field::from_be32(asset.try_into().map_err(|_| bad("asset must be 32 bytes"))?)
            .map_err(|_| bad("asset: not below the field modulus"))?;
        let commitment = field::from_be32(commitment.try_into().map_err(|_| bad("commitment must be 32 bytes"))?)
            .map_err(|_| bad("commitment: not below the field modulus"))?;
        let out = match memo::scan(&vk, ciphertext, &asset, &commitment) {
            Opened::NotMine => json!({ "result": "not_mine" }),
            Opened::Mine { value, blinding } => {
                json!({ "result": "mine", "value": value.to_string(), "blinding": hex_word(&blinding) })
            }
            Opened::Corrupt(_) => json!({ "result": "corrupt" }),
        };
        Ok(out.to_string().into_bytes())
    }

    /// The balances of a pool view (the wallet's state JSON, `PoolView::to_json`): JSON
    /// `{"root": …, "next_leaf": …, "assets": [{"asset", "spendable", "pending", "largest",
    /// "largest_pair", "notes"}]}`.
    pub fn wallet_balances(&self, view_json: &[u8]) -> Result<Vec<u8>, WasmError> {
        let view = view_of(view_json)?;
        let assets = view
            .assets()
            .iter()
            .map(|a| {
                let b = view.balance(a);
                json!({
                    "asset": hex_word(a),
                    "spendable": b.spendable.to_string(),
                    "pending": b.pending.to_string(),
                    "largest": b.largest.to_string(),
                    "largest_pair": b.largest_pair.to_string(),
                    "notes": b.notes,
                })
            })
            .collect::<Vec<_>>();
        Ok(json!({ "root": hex_word(&view.root()), "next_leaf": view.next_leaf(), "assets": assets })
            .to_string()
            .into_bytes())
    }

    /// Prepares a transaction (`PoolView::prepare_transaction`: note selection, change, output
    /// ciphertexts, context, statement and witness) for the wallet with `seed` over the pool view
    /// `view_json`. The prepared transaction stays in the module behind the returned handle (for
    /// [`Module::transfer_prove`]); the host gets its description ([`describe`]).
    pub fn wallet_prepare(
        &mut self,
        seed: &[u8],
        view_json: &[u8],
        request_json: &[u8],
    ) -> Result<(u32, Vec<u8>), WasmError> {
        let seed = seed_of(seed)?;
        let view = view_of(view_json)?;
        let req = parse_request(request_json)?;
        let mut rng = self.zk_rng()?;
        let prepared = view.prepare_transaction(&seed, &req, &mut rng)?;
        let description = describe(&prepared).to_string().into_bytes();
        Ok((self.insert(Object::Prepared(Box::new(prepared))), description))
    }

    /// Decodes a transfer proving key and checks its shape; the key stays behind the returned
    /// handle. `format` [`KEY_COMPRESSED`]: arkworks compressed, as the ceremony's `proving.key`
    /// and the testnet key are published (decompressing its ~90,000 points takes seconds in
    /// WebAssembly); [`KEY_UNCOMPRESSED`]: the form [`Module::prover_key_bytes`] writes for a
    /// cache (twice the size, no square roots). Points are not subgroup-checked in either
    /// (as natively): every proof is verified against the key's verifying key before it is
    /// returned, so a corrupted key yields no proof.
    pub fn prover_load(&mut self, key: &[u8], format: u32) -> Result<u32, WasmError> {
        let pk = match format {
            KEY_COMPRESSED => transfer::proving_key_from_bytes(key)?,
            KEY_UNCOMPRESSED => {
                use ark_serialize::CanonicalDeserialize;
                let mut reader = key;
                let pk = ProvingKey::<Bn254>::deserialize_uncompressed_unchecked(&mut reader)
                    .map_err(|_| ZkError::Encoding("not an arkworks uncompressed Groth16 proving key"))?;
                if !reader.is_empty() {
                    return Err(ZkError::Encoding("trailing bytes after the proving key").into());
                }
                transfer::check_shape(&pk)?;
                pk
            }
            other => return Err(bad(format!("key format {other}: 0 compressed, 1 uncompressed"))),
        };
        Ok(self.insert(Object::ProvingKey(Box::new(pk))))
    }

    /// The key behind `handle` in the uncompressed form ([`KEY_UNCOMPRESSED`]), for a cache.
    pub fn prover_key_bytes(&self, handle: u32) -> Result<Vec<u8>, WasmError> {
        use ark_serialize::CanonicalSerialize;
        let pk = self.proving_key(handle)?;
        let mut out = Vec::with_capacity(pk.uncompressed_size());
        pk.serialize_uncompressed(&mut out).map_err(|_| ZkError::Encoding("proving key does not serialise"))?;
        Ok(out)
    }

    /// Proves the prepared transaction behind `prepared` (consumed: its witness is zeroized)
    /// with the key behind `key`. The proof is checked against the key's verifying key before it
    /// is returned. Output: the proof as the pool takes it (256 bytes) ‖ the 8 public inputs
    /// (32 bytes each, big-endian, in the verifier's order).
    pub fn transfer_prove(&mut self, key: u32, prepared: u32) -> Result<Vec<u8>, WasmError> {
        self.proving_key(key)?;
        let tx = match self.objects.remove(&prepared) {
            Some(Object::Prepared(tx)) => tx,
            Some(other) => {
                self.objects.insert(prepared, other);
                return Err(WasmError::WrongHandle { handle: prepared, expected: "prepared transaction" });
            }
            None => return Err(WasmError::UnknownHandle(prepared)),
        };
        let mut rng = self.zk_rng()?;
        let pk = self.proving_key(key)?;
        let proof = transfer::prove_evm(pk, &tx.public, &tx.witness, &mut rng)?;
        let mut out = Vec::with_capacity(proof.len() + 32 * transfer::TRANSFER_NUM_PUBLIC_INPUTS);
        out.extend_from_slice(&proof);
        for w in tx.public.to_evm() {
            out.extend_from_slice(&w);
        }
        Ok(out)
    }

    /// Phase 1 of the split prover (issue 31, `nox_zk::split_prover`): consumes the prepared
    /// transaction behind `prepared` (its witness is zeroized) and returns the assignment and
    /// `h` that every MSM part needs ([`split_prover::Prepared::to_bytes`]; secret: it holds the
    /// witness, so it goes only to the caller's own Workers).
    pub fn split_prepare(&mut self, prepared: u32) -> Result<Vec<u8>, WasmError> {
        let tx = match self.objects.remove(&prepared) {
            Some(Object::Prepared(tx)) => tx,
            Some(other) => {
                self.objects.insert(prepared, other);
                return Err(WasmError::WrongHandle { handle: prepared, expected: "prepared transaction" });
            }
            None => return Err(WasmError::UnknownHandle(prepared)),
        };
        Ok(split_prover::prepare(&tx.public, &tx.witness)?.to_bytes())
    }

    /// Phase 2: part `k` of `n` of the MSMs with the key behind `key`
    /// ([`split_prover::PART_BYTES`] bytes).
    pub fn split_part(&self, key: u32, prepared: &[u8], k: u32, n: u32) -> Result<Vec<u8>, WasmError> {
        let pk = self.proving_key(key)?;
        let prep = split_prover::Prepared::from_bytes(prepared)?;
        Ok(split_prover::msm_part(pk, &prep, k, n)?.to_bytes())
    }

    /// Phase 3: the parts (concatenated, any order) added, blinded with fresh randomness from the
    /// module's generator, checked against the key's verifying key. Output as
    /// [`Module::transfer_prove`]'s: proof (256) ‖ the 8 public inputs (32 each).
    pub fn split_finish(&mut self, key: u32, prepared: &[u8], parts: &[u8]) -> Result<Vec<u8>, WasmError> {
        self.proving_key(key)?;
        let prep = split_prover::Prepared::from_bytes(prepared)?;
        if parts.is_empty() || !parts.len().is_multiple_of(split_prover::PART_BYTES) {
            return Err(bad(format!("parts: a multiple of {} bytes", split_prover::PART_BYTES)));
        }
        let parts = parts
            .chunks_exact(split_prover::PART_BYTES)
            .map(split_prover::Part::from_bytes)
            .collect::<Result<Vec<_>, _>>()?;
        let mut seed = Zeroizing::new([0u8; 32]);
        self.rng()?.fill_bytes(&mut seed[..]);
        let pk = self.proving_key(key)?;
        let proof = split_prover::finish_evm(pk, &prep, &parts, *seed)?;
        let mut out = proof.to_vec();
        for w in prep.public_evm() {
            out.extend_from_slice(&w);
        }
        Ok(out)
    }

    fn proving_key(&self, handle: u32) -> Result<&ProvingKey<Bn254>, WasmError> {
        match self.objects.get(&handle) {
            Some(Object::ProvingKey(pk)) => Ok(pk),
            Some(_) => Err(WasmError::WrongHandle { handle, expected: "proving key" }),
            None => Err(WasmError::UnknownHandle(handle)),
        }
    }
}

/// A sealed file's refusal (opening) as its own status (the host tells a wrong passphrase from a file of
/// another format without reading the text).
fn file_error(e: WalletError) -> WasmError {
    match e {
        WalletError::Decrypt => WasmError::WrongPassphrase,
        WalletError::BadFile(what) => WasmError::BadKeyFile(what),
        WalletError::Kdf(_) => WasmError::BadKeyFile("key-derivation parameters Argon2id refuses"),
        other => WasmError::Wallet(other),
    }
}

impl From<WalletError> for WasmError {
    fn from(e: WalletError) -> Self {
        WasmError::Wallet(e)
    }
}

impl From<ZkError> for WasmError {
    fn from(e: ZkError) -> Self {
        WasmError::Zk(e)
    }
}
