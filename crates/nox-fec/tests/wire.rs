//! The fragment parser: every malformed input is refused with its own error.

use nox_fec::{FORMAT_VERSION, Fragment, FragmentError, HEADER_LEN, Layout, LayoutError, MessageId, encode};

const ID: MessageId = MessageId::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

/// A valid fragment: shard 1 of a 100-byte message in 3 data + 2 parity.
fn valid() -> Vec<u8> {
    let message: Vec<u8> = (0..100u8).collect();
    let layout = Layout::new(100, 3, 2).unwrap();
    encode(&message, ID, &layout).unwrap().swap_remove(1)
}

#[test]
fn header_bytes_are_as_specified() {
    let bytes = valid();
    assert_eq!(bytes.len(), HEADER_LEN + 34);
    assert_eq!(bytes[0], FORMAT_VERSION);
    assert_eq!(&bytes[1..17], ID.as_bytes());
    assert_eq!(bytes[17], 1, "shard index");
    assert_eq!(bytes[18], 3, "data shards");
    assert_eq!(bytes[19], 2, "parity shards");
    assert_eq!(&bytes[20..24], &100u32.to_be_bytes());
    // Data shard 1 carries message bytes 34..68.
    assert_eq!(&bytes[24..], &(34..68u8).collect::<Vec<_>>()[..]);

    let parsed = Fragment::parse(&bytes).unwrap();
    assert_eq!(parsed.message_id(), ID);
    assert_eq!(parsed.shard_index(), 1);
    assert!(!parsed.header().is_parity());
    assert_eq!(*parsed.layout(), Layout::new(100, 3, 2).unwrap());
    assert_eq!(parsed.to_bytes(), bytes);
    assert_eq!(parsed.header().to_bytes()[..], bytes[..HEADER_LEN]);
}

#[test]
fn truncated_header() {
    for len in 0..HEADER_LEN {
        assert_eq!(Fragment::parse(&valid()[..len]), Err(FragmentError::Truncated { len }));
    }
}

#[test]
fn unknown_version() {
    for version in [0u8, 2, 0xff] {
        let mut bytes = valid();
        bytes[0] = version;
        assert_eq!(Fragment::parse(&bytes), Err(FragmentError::UnsupportedVersion(version)));
    }
}

#[test]
fn invalid_counts() {
    let mut bytes = valid();
    bytes[18] = 0;
    assert_eq!(Fragment::parse(&bytes), Err(LayoutError::NoDataShards.into()));
    let mut bytes = valid();
    bytes[18] = 200;
    bytes[19] = 56;
    assert_eq!(Fragment::parse(&bytes), Err(LayoutError::TooManyShards { data: 200, parity: 56 }.into()));
}

#[test]
fn padding_only_layout_is_refused() {
    let mut bytes = valid();
    bytes[18] = 60; // 60 data shards of 2 bytes for 100 bytes
    assert_eq!(
        Fragment::parse(&bytes),
        Err(LayoutError::PaddingOnlyShard { message_len: 100, data_shards: 60 }.into())
    );
}

#[test]
fn index_out_of_range() {
    for index in [5u8, 6, 0xff] {
        let mut bytes = valid();
        bytes[17] = index;
        assert_eq!(Fragment::parse(&bytes), Err(FragmentError::IndexOutOfRange { index, total: 5 }));
    }
}

#[test]
fn shard_of_wrong_length() {
    let bytes = valid();
    assert_eq!(
        Fragment::parse(&bytes[..bytes.len() - 1]),
        Err(FragmentError::ShardLengthMismatch { expected: 34, actual: 33 })
    );
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(Fragment::parse(&longer), Err(FragmentError::ShardLengthMismatch { expected: 34, actual: 35 }));
    // A header alone, or a header that announces another length.
    assert_eq!(
        Fragment::parse(&bytes[..HEADER_LEN]),
        Err(FragmentError::ShardLengthMismatch { expected: 34, actual: 0 })
    );
    let mut other_length = bytes;
    other_length[23] = 120; // 120 bytes in 3 shards: 40-byte shards
    assert_eq!(Fragment::parse(&other_length), Err(FragmentError::ShardLengthMismatch { expected: 40, actual: 34 }));
}

#[test]
fn message_length_of_u32_max_is_refused_not_overflowed() {
    let mut bytes = valid();
    bytes[18] = 1;
    bytes[19] = 0;
    bytes[17] = 0;
    bytes[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(Fragment::parse(&bytes), Err(FragmentError::InvalidLayout(LayoutError::MessageTooLarge { .. }))));
}

#[test]
fn message_id_debug_is_short() {
    assert_eq!(format!("{ID:?}"), "MessageId(00010203…)");
}
