//! The view's file format ([`VIEW_VERSION`], format 2 still loads): what the wallet encrypts
//! and writes to disk.

use super::*;

impl PoolView {
    /// Serialises the view (the wallet encrypts it before writing it to disk).
    pub fn to_json(&self) -> Result<Vec<u8>, WalletError> {
        let file = ViewFile {
            version: VIEW_VERSION,
            mode: self.mode,
            last_block: self.last_block,
            next_queue: self.next_queue,
            queue: self.queue.iter().map(|(i, c)| (*i, hex::encode(field::to_be32(c)))).collect(),
            leaves: self.tree.leaves().iter().map(|l| hex::encode(field::to_be32(l))).collect(),
            root: hex::encode(field::to_be32(&self.root)),
            notes: self.notes.clone(),
            corrupt: self.corrupt.clone(),
            deposits: self.deposits.clone(),
            deposits_from_block: self.deposits_from_block,
        };
        serde_json::to_vec(&file).map_err(|e| WalletError::State(e.to_string()))
    }

    /// Restores a view written by [`PoolView::to_json`], rebuilding the tree from its leaves and
    /// checking it reaches the recorded root. A view of format 2 (before the deposit history)
    /// loads, with the history starting after its last block; an older format (the pool before
    /// private transfers) is refused: the wallet resynchronises from the chain instead.
    pub fn from_json(bytes: &[u8]) -> Result<Self, WalletError> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let v: Version = serde_json::from_slice(bytes).map_err(|e| WalletError::State(e.to_string()))?;
        if v.version != VIEW_VERSION && v.version != 2 {
            return Err(WalletError::State(format!(
                "view version {} (this wallet writes {VIEW_VERSION}): resynchronise from the chain",
                v.version
            )));
        }
        let file: ViewFile = serde_json::from_slice(bytes).map_err(|e| WalletError::State(e.to_string()))?;
        let mut view = PoolView::new();
        view.mode = file.mode;
        view.last_block = file.last_block;
        view.next_queue = file.next_queue;
        for (i, c) in file.queue {
            view.queue.insert(i, word::parse(&c)?);
        }
        if !file.leaves.len().is_multiple_of(BATCH_SIZE as usize) {
            return Err(WalletError::State("the stored leaves are not whole batches".into()));
        }
        for chunk in file.leaves.chunks(BATCH_SIZE as usize) {
            let mut batch = [Fr::from(0u64); BATCH_SIZE as usize];
            for (b, l) in batch.iter_mut().zip(chunk) {
                *b = word::parse(l)?;
            }
            view.tree.push_batch(&batch)?;
        }
        view.root = word::parse(&file.root)?;
        if view.tree.root() != view.root {
            return Err(WalletError::State("the stored leaves do not produce the stored root".into()));
        }
        view.notes = file.notes;
        view.corrupt = file.corrupt;
        if v.version == 2 {
            view.deposits_from_block = file.last_block + 1;
        } else {
            view.deposits = file.deposits;
            view.deposits_from_block = file.deposits_from_block;
        }
        Ok(view)
    }
}

/// The view file's format: 2 since the 2-in/2-out pool (issue 30); 3 adds the pool's deposits
/// with their block times (the privacy advice, issue 35). Format 2 still loads.
const VIEW_VERSION: u32 = 3;

#[derive(Serialize, Deserialize)]
struct ViewFile {
    version: u32,
    mode: Mode,
    last_block: u64,
    next_queue: u64,
    queue: BTreeMap<u64, String>,
    leaves: Vec<String>,
    root: String,
    notes: Vec<OwnedNote>,
    corrupt: Vec<CorruptNote>,
    /// Absent in format 2.
    #[serde(default)]
    deposits: Vec<DepositSeen>,
    #[serde(default)]
    deposits_from_block: u64,
}
