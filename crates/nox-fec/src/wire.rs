//! The fragment wire format (specified in `docs/spec/fragments.md`).
//!
//! ```text
//! offset  size  field
//!      0     1  version        = 1
//!      1    16  message id     random, chosen by the sender
//!     17     1  shard index    0..d are data shards, d..d+p parity shards
//!     18     1  data shards d  1..=255
//!     19     1  parity p       d + p <= 255
//!     20     4  message length big-endian u32
//!     24     s  shard          s = Layout::shard_len(), derived from the header
//! ```

use std::fmt;

use rand_core::CryptoRng;

use crate::error::FragmentError;
use crate::layout::Layout;

/// The fragment format version this crate writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Length of a message id.
pub const MESSAGE_ID_LEN: usize = 16;
/// Length of the fragment header.
pub const HEADER_LEN: usize = 24;

const VERSION_AT: usize = 0;
const MESSAGE_ID_AT: usize = 1;
const INDEX_AT: usize = 17;
const DATA_AT: usize = 18;
const PARITY_AT: usize = 19;
const LENGTH_AT: usize = 20;

/// Identifies the fragments of one message. Chosen at random by the sender,
/// fresh for every message, and carried only inside the encrypted Sphinx
/// payload: relays never see it. It groups fragments; it is not an address —
/// the caller routes replies by the SURBs they arrived on.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId([u8; MESSAGE_ID_LEN]);

impl MessageId {
    /// A message id with these bytes.
    pub const fn from_bytes(bytes: [u8; MESSAGE_ID_LEN]) -> Self {
        Self(bytes)
    }

    /// A fresh random message id.
    pub fn random<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut bytes = [0u8; MESSAGE_ID_LEN];
        rng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The id's bytes.
    pub const fn as_bytes(&self) -> &[u8; MESSAGE_ID_LEN] {
        &self.0
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Eight hex digits are enough to tell ids apart in a log line.
        write!(f, "MessageId(")?;
        for byte in &self.0[..4] {
            write!(f, "{byte:02x}")?;
        }
        write!(f, "…)")
    }
}

/// The parsed header of a fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentHeader {
    /// Which message the fragment belongs to.
    pub message_id: MessageId,
    /// Index of the shard: below d for data, d..d+p for parity.
    pub shard_index: u8,
    /// Counts, message length and shard length.
    pub layout: Layout,
}

impl FragmentHeader {
    /// The header as its 24 wire bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut bytes = [0u8; HEADER_LEN];
        let (data, parity) = self.layout.count_fields();
        bytes[VERSION_AT] = FORMAT_VERSION;
        bytes[MESSAGE_ID_AT..INDEX_AT].copy_from_slice(self.message_id.as_bytes());
        bytes[INDEX_AT] = self.shard_index;
        bytes[DATA_AT] = data;
        bytes[PARITY_AT] = parity;
        bytes[LENGTH_AT..HEADER_LEN].copy_from_slice(&self.layout.message_len_field().to_be_bytes());
        bytes
    }

    /// Whether the shard is a parity shard.
    pub fn is_parity(&self) -> bool {
        usize::from(self.shard_index) >= self.layout.data_shards()
    }
}

/// A parsed fragment borrowing its shard bytes from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment<'a> {
    header: FragmentHeader,
    shard: &'a [u8],
}

impl<'a> Fragment<'a> {
    /// Parses one fragment. `bytes` must be exactly the fragment: the header
    /// and a shard of the length the header implies. Checks, in order: length
    /// of the header, version, layout (counts and length), shard index, and
    /// shard length.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FragmentError> {
        let Some((header_bytes, shard)) = bytes.split_first_chunk::<HEADER_LEN>() else {
            return Err(FragmentError::Truncated { len: bytes.len() });
        };
        let version = header_bytes[VERSION_AT];
        if version != FORMAT_VERSION {
            return Err(FragmentError::UnsupportedVersion(version));
        }
        let mut id = [0u8; MESSAGE_ID_LEN];
        id.copy_from_slice(&header_bytes[MESSAGE_ID_AT..INDEX_AT]);
        let shard_index = header_bytes[INDEX_AT];
        let data_shards = usize::from(header_bytes[DATA_AT]);
        let parity_shards = usize::from(header_bytes[PARITY_AT]);
        let mut length = [0u8; 4];
        length.copy_from_slice(&header_bytes[LENGTH_AT..HEADER_LEN]);
        let message_len = u32::from_be_bytes(length) as usize;

        let layout = Layout::new(message_len, data_shards, parity_shards)?;
        if usize::from(shard_index) >= layout.total_shards() {
            return Err(FragmentError::IndexOutOfRange { index: shard_index, total: layout.total_shards() });
        }
        if shard.len() != layout.shard_len() {
            return Err(FragmentError::ShardLengthMismatch { expected: layout.shard_len(), actual: shard.len() });
        }
        let header = FragmentHeader { message_id: MessageId(id), shard_index, layout };
        Ok(Self { header, shard })
    }

    /// The header.
    pub fn header(&self) -> &FragmentHeader {
        &self.header
    }

    /// The message id.
    pub fn message_id(&self) -> MessageId {
        self.header.message_id
    }

    /// The shard index.
    pub fn shard_index(&self) -> usize {
        usize::from(self.header.shard_index)
    }

    /// The message layout announced by the header.
    pub fn layout(&self) -> &Layout {
        &self.header.layout
    }

    /// The shard bytes (exactly `layout().shard_len()` long).
    pub fn shard(&self) -> &'a [u8] {
        self.shard
    }

    /// The fragment as wire bytes (header then shard).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(HEADER_LEN + self.shard.len());
        bytes.extend_from_slice(&self.header.to_bytes());
        bytes.extend_from_slice(self.shard);
        bytes
    }
}
