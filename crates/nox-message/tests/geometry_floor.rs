//! The packet-length floor of every Sphinx scheme (docs/spec/sphinx.md §2.2): one byte below
//! it `Geometry::with_scheme` refuses with a typed error naming the floor; at it, a request with
//! one SURB (FEC-split over several packets) goes client → 3 hops → exit and its reply comes
//! back through the SURB. `Geometry::single_packet_request_len` is checked against this crate's
//! and nox-fec's real encodings: from it on, such a request is one packet, one byte less needs two.

mod common;

use common::*;
use nox_message::*;
use nox_sphinx::{
    BuildOptions, Geometry, GeometryError, Processed, Scheme, SphinxError, Surb, SurbRecovery, build_forward,
    process_packet,
};

/// docs/spec/sphinx.md §2.2's table at 3 hops: (scheme, header, floor, one-SURB request in one packet).
const TABLE: [(Scheme, usize, usize, usize); 4] = [
    (Scheme::Ristretto255, 256, 320, 621),
    (Scheme::X25519Kem, 320, 384, 749),
    (Scheme::MlKem768, 3488, 3552, 7085),
    (Scheme::XWing, 3584, 3648, 7277),
];

#[test]
fn the_table_is_the_code() {
    for (scheme, header, floor, single) in TABLE {
        assert_eq!(Geometry::min_packet_len(3, scheme), Some(floor), "{scheme}");
        assert_eq!(Geometry::single_packet_request_len(3, scheme), Some(single), "{scheme}");
        let g = Geometry::with_scheme(floor, 3, scheme).unwrap();
        assert_eq!(g.header_len(), header, "{scheme}");
        // The floor is exactly the length of a SURB: its header and 64 bytes.
        assert_eq!(Surb::encoded_len(&g), floor, "{scheme}");
    }
    // 5 hops (docs/spec/sphinx.md §2.2, second table).
    let five: Vec<_> = Scheme::ALL
        .into_iter()
        .map(|s| (Geometry::min_packet_len(5, s), Geometry::single_packet_request_len(5, s)))
        .collect();
    assert_eq!(
        five,
        [(Some(448), Some(877)), (Some(576), Some(1133)), (Some(5856), Some(11_693)), (Some(6016), Some(12_013))]
    );
    assert_eq!(Geometry::min_packet_len(0, Scheme::Ristretto255), None);
    assert_eq!(Geometry::min_packet_len(17, Scheme::Ristretto255), None);
}

#[test]
fn one_byte_below_the_floor_is_refused_naming_the_floor() {
    for (scheme, header, floor, _) in TABLE {
        let error = Geometry::with_scheme(floor - 1, 3, scheme).unwrap_err();
        assert_eq!(
            error,
            SphinxError::InvalidGeometry(GeometryError::PacketTooShort {
                scheme,
                hops: 3,
                packet_len: floor - 1,
                header,
                min: floor
            })
        );
        let text = error.to_string();
        assert!(text.contains(&format!("{floor}-byte floor")) && text.contains(scheme.name()), "{text}");
    }
}

/// One reply packet through the return path, opened.
fn deliver_reply(geometry: &Geometry, nodes: &[TestNode], recoveries: &[SurbRecovery], packet: &mut [u8]) -> Vec<u8> {
    for node in nodes {
        match process_packet(geometry, &node.secret, packet).unwrap() {
            Processed::Forward { .. } => {}
            Processed::Reply { surb_id, body, .. } => {
                let recovery = recoveries.iter().find(|r| r.id() == surb_id).expect("known SURB");
                return recovery.open(&surb_id, &packet[body]).unwrap();
            }
            Processed::Deliver { .. } => panic!("a reply delivered as a forward payload"),
        }
    }
    panic!("reply still forwarding after the last hop");
}

#[test]
fn at_the_floor_a_one_surb_request_round_trips() {
    for (scheme, _, floor, _) in TABLE {
        let geometry = Geometry::with_scheme(floor, 3, scheme).unwrap();
        let mut rng = rng(u64::from(scheme.code()) + 40);
        let nodes = nox_test_support::sphinx::nodes(scheme, 3, &mut rng);
        let path = nox_test_support::sphinx::path(&nodes, 10);
        let (surbs, recoveries) = surbs(&geometry, &nodes, 1, &mut rng);
        let request = Request { surbs, body: RequestBody::Echo(b"ok".to_vec()) };
        let fragments = request_fragments(&geometry, &request.encode(), 0, &mut rng).unwrap();
        // 47 bytes of payload: 24 of fragment header, 22 shard bytes; the request is 3 + SURB +
        // 2 body bytes: 15, 18, 162 and 167 fragments (166 with an empty body, the spec's table).
        assert_eq!(geometry.payload_capacity(), 47);
        assert_eq!(fragments.len(), (3 + floor + 2).div_ceil(22), "{scheme}");
        // Every fragment as a forward packet through the three hops to the exit.
        let mut exit = RequestAssembler::new(REQUEST_LIMITS).unwrap();
        let mut received = None;
        for (i, fragment) in fragments.iter().enumerate() {
            let mut packet = build_forward(&geometry, &BuildOptions::new(1), &path, fragment, &mut rng).unwrap();
            assert_eq!(packet.len(), floor);
            let mut delivered = None;
            for node in &nodes {
                if let Processed::Deliver { payload, .. } =
                    process_packet(&geometry, &node.secret, &mut packet).unwrap()
                {
                    delivered = Some(packet[payload].to_vec());
                }
            }
            let payload = delivered.expect("delivered at the exit");
            if let Some(done) = exit.accept(&geometry, &payload, i as u64).unwrap() {
                received = Some(done);
            }
        }
        let received = received.expect("request rebuilt at the exit");
        let RequestBody::Echo(echo) = &received.body else { panic!("kind changed") };
        let answer = Response::ok(echo.clone());
        let packets = reply_packets(&geometry, &answer.encode(), received.surbs, 0.0, 0.5, &mut rng).unwrap();
        assert_eq!(packets.len(), 1);
        let (first, mut packet) = packets.into_iter().next().unwrap();
        assert_eq!(first, nodes[0].id);
        let fragment = deliver_reply(&geometry, &nodes, &recoveries, &mut packet);
        let mut client = ReplyAssembler::new(REPLY_LIMITS).unwrap();
        let bytes = client.accept(&fragment, 0).unwrap().expect("one fragment");
        assert_eq!(Response::decode(&bytes).unwrap(), answer, "{scheme}");
    }
}

#[test]
fn a_one_surb_request_is_one_packet_from_the_single_packet_length_on() {
    for (scheme, _, _, single) in TABLE {
        for (len, expected) in [(single, 1), (single - 1, 2)] {
            let geometry = Geometry::with_scheme(len, 3, scheme).unwrap();
            let mut rng = rng(7);
            let request = request(&geometry, 1, RequestBody::Echo(Vec::new()));
            // No parity: two data shards would bring a third, parity, fragment.
            let fragments = request_fragments(&geometry, &request.encode(), 0, &mut rng).unwrap();
            assert_eq!(fragments.len(), expected, "{scheme} at {len} bytes");
        }
    }
}
