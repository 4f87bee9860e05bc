"""ceremony.json (ceremony.md sections 1, 2): the starting phase-1 file and its transcript hash."""

import json

import blake3

from .common import check, VECTORS


BN254_P = 21888242871839275222246405745257275088696311157297823662689037894645226208583
G2_GEN = ((10857046999023057135944570762232829481370756359578518086990519993285655852781,
           11559732032986387107991004021392285783925812861821192530917403151452391805634),
          (8495653923123431417604973247489272438418190587263600148770280649306958101930,
           4082367875863433681332203403145435568316851327593401208105741076214120093531))


def bn254_g1(x, y):
    """ceremony.md section 1: x little-endian, bit 7 of the last byte iff y > p - y."""
    out = bytearray(x.to_bytes(32, "little"))
    out[31] |= 0x80 if y > BN254_P - y else 0
    return bytes(out)


def bn254_g2(x, y):
    """x.c0 then x.c1, little-endian; bit 7 of the last byte iff y > -y, comparing c1 first, then c0."""
    neg = ((BN254_P - y[1]) % BN254_P, (BN254_P - y[0]) % BN254_P)
    out = bytearray(x[0].to_bytes(32, "little") + x[1].to_bytes(32, "little"))
    out[63] |= 0x80 if (y[1], y[0]) > neg else 0
    return bytes(out)


def check_ceremony():
    """ceremony.md section 1: the starting phase-1 file of size 2 (every secret 1, no contribution)."""
    v = json.loads((VECTORS / "ceremony.json").read_text())
    n, g1, g2 = 2, bn254_g1(1, 2), bn254_g2(*G2_GEN)

    def seq(items):
        return len(items).to_bytes(8, "little") + b"".join(items)

    f = b"NOXPOT01" + n.to_bytes(8, "little") + seq([g1] * (2 * n - 1)) + seq([g2] * n)
    f += seq([g1] * n) + seq([g1] * n) + g2 + seq([])
    check(f.hex() == v["phase1_initial_size2"], "ceremony: starting phase-1 file")
    check(blake3.blake3(f).hexdigest() == v["transcript_hash"], "ceremony: transcript hash")
