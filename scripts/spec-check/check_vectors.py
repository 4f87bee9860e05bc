#!/usr/bin/env python3
"""Recomputes every file of docs/spec/vectors from the spec text alone.

An independent reading of docs/spec/sphinx.md, fragments.md, notes.md,
streams.md, replay-cache.md, topology.md, messages.md, registry.md,
relay.md and ceremony.md:
nothing here calls NOX code. It checks

- sphinx.json: geometry identifiers and tags; public keys; every packet and
  SURB rebuilt from its rng_bytes (section 5.2, 9: key schedule, blinding,
  filler, MACs, PoW nonces, HCTR2 body layers); every hop's shared secret, keys
  (rho, mu, pi, b), MAC, routing block, next alpha and beta, replay tag and
  PoW bits; HCTR2 decryption hop by hop and the exit payload; the SURB
  reply; the PoW vector's nonce search; and every failure case through the
  section 5.4 pipeline; the one-hop key schedule vector (section 4.1: s, the
  whole okm and its split). ristretto255 is ristretto.py, from RFC 9496.
- streams.json: every valid message decoded and re-encoded, every invalid one
  refused, by streams.md section 2.
- replay-journal.json: the header, record and commit slots rebuilt, and every
  file's verdict from replay-cache.md section 3.
- topology.json: node ids, layers, every key from its secret, descriptor and
  body encodings, both kinds of signature and the fingerprint (topology.md
  sections 2-4).
- messages.json: every request and response decoded to the committed fields,
  and every invalid one refused with its error, in the decoding order of
  messages.md section 2.
- sphinx-kem.json, every scheme (x25519-kem, mlkem768, xwing): node keys from
  their seeds, packet and SURB rebuilt from rng_bytes and traced hop by hop
  (sphinx.md section 13), and every failure case through section 5.4 on
  that geometry; ML-KEM-768 and X-Wing are mlkem.py, from FIPS 203
  and draft-connolly-cfrg-xwing-kem-06, checked first against
  xwing-draft06.json.
- registry.json and relay.json: Keccak-256 record hashes, fingerprints,
  EIP-712 digests and the ECDSA signature (evm.py); relay request bodies and
  the section 5 pricing formulas.
- ceremony.json: the starting phase-1 file (BN254 generators in the
  compressed encoding of ceremony.md section 1) and its transcript hash.
- fragments.json: every fragment header, the shard split, and every parity
  shard from section 4 (GF(2^16), Cantor basis, 64-byte chunk layout, high and
  low rate), by Gaussian elimination; every malformed fragment's error from
  the section 5 check order.
- notes.json: the viewing key, the nox1/noxview1 strings (bech32m written from
  BIP-350) and every refused string's error in section 2.2's order, every note
  ciphertext and its intermediates, what a wallet makes of each scanned
  ciphertext, and with Poseidon (circom parameters regenerated from the
  Poseidon paper's Grain LFSR, checked against circomlib's Poseidon(1, 2)) sk,
  the owner, inner, the commitments and the nullifier.

And every field name of every vectors file must appear in its table in
docs/spec/vectors/README.md.

Usage: python3 -m venv .venv && .venv/bin/pip install -r requirements.txt
       .venv/bin/python check_vectors.py        (exit status 0: all checked)
"""

import sys

from checks.ceremony import check_ceremony
from checks.common import FAILURES
from checks.field_tables import check_field_tables
from checks.fragments import check_fragment_errors, check_fragments
from checks.hctr2 import check_hctr2
from checks.journal import check_journal
from checks.messages import check_messages
from checks.notes import check_notes
from checks.registry import check_registry
from checks.relay import check_relay
from checks.sphinx import check_sphinx
from checks.sphinx_kem import check_sphinx_kem, check_xwing_draft
from checks.streams import check_streams
from checks.topology import check_topology


def main():
    check_hctr2()
    cases = check_sphinx()
    check_fragments()
    check_fragment_errors()
    check_notes()
    n_streams = check_streams()
    n_journal = check_journal()
    n_topology = check_topology()
    n_messages = check_messages()
    n_xwing = check_xwing_draft()
    kem_schemes = check_sphinx_kem()
    check_registry()
    check_ceremony()
    n_files = check_field_tables()
    n_relay = check_relay()
    for f in FAILURES:
        print("MISMATCH", f)
    print(f"sphinx: forward and SURB vectors rebuilt and traced, pow checked, {cases} failure cases")
    print("fragments: every valid vector checked, parity from section 4; parse errors from section 5")
    print("notes: keys, nox1/noxview1 strings and their refusals, note ciphertexts, scans, owner, commitments, nullifier (Poseidon) from sections 2-5")
    print(f"streams: {n_streams} messages decoded (and re-encoded) or refused by section 2")
    print(f"replay journal: header, record and commit slots rebuilt; {n_journal} files read by section 3")
    print(f"topology: {n_topology} descriptors, the document body, both signatures and the fingerprint rebuilt")
    print(f"messages: {n_messages} requests and responses decoded or refused by section 1-3")
    print(f"xwing-draft06: {n_xwing} vectors through mlkem.py (FIPS 203, draft-06)")
    print(f"sphinx-kem: {', '.join(kem_schemes)}: packets and SURBs rebuilt from rng_bytes and traced, failure cases, by section 13")
    print("registry: record hashes, fingerprints, EpochKeys digest and signature, execution hash, typehashes")
    print(f"relay: {n_relay} request bodies decoded or refused; fee plan, gas limit, required fee, token prices")
    print("ceremony: the starting phase-1 file and its transcript hash")
    print(f"field tables: every field of the {n_files} vectors files has its meaning in vectors/README.md")
    print("OK" if not FAILURES else f"{len(FAILURES)} mismatches")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
