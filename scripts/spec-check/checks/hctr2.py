"""HCTR2-AES-128 (sphinx.md section 6.1) and the Sphinx body layers built on it."""

import json

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .common import check, kdf, REPO, xor


# HCTR2-AES-128 (section 6.1), written from the HCTR2 paper; checked below
# against the designers' vectors in crates/nox-hctr2/tests/data.
POLYVAL_P = (1 << 128) | (1 << 127) | (1 << 126) | (1 << 121) | 1


def gf_reduce(x):
    for bit in range(x.bit_length() - 1, 127, -1):
        if x >> bit & 1:
            x ^= POLYVAL_P << (bit - 128)
    return x


def gf_mul(a, b):
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        b >>= 1
    return gf_reduce(r)


def gf_inverse(y):
    """y^(2^128 - 2)."""
    r, e = 1, (1 << 128) - 2
    while e:
        if e & 1:
            r = gf_mul(r, y)
        y, e = gf_mul(y, y), e >> 1
    return r


X_INV128 = gf_inverse(gf_reduce(1 << 128))


def polyval(h, data):
    """RFC 8452 section 3: S_j = (S_{j-1} xor X_j) * H * x^-128, little-endian blocks."""
    hx = gf_mul(int.from_bytes(h, "little"), X_INV128)
    table = [gf_mul(hx, j) for j in range(16)]
    top = [gf_reduce(t << 128) for t in range(16)]
    mask = (1 << 128) - 1
    acc = 0
    for i in range(0, len(data), 16):
        y = acc ^ int.from_bytes(data[i : i + 16], "little")
        acc = 0
        for k in range(124, -1, -4):
            acc <<= 4
            acc = (acc & mask) ^ top[acc >> 128] ^ table[y >> k & 15]
    return acc.to_bytes(16, "little")


def aes_block(k, blocks, decrypt=False):
    c = Cipher(algorithms.AES(k), modes.ECB())
    op = c.decryptor() if decrypt else c.encryptor()
    return op.update(blocks) + op.finalize()


def hctr2_hash(h, tweak, x):
    """H(T, X): length block, padded tweak, X padded (0x01 first if partial)."""
    partial = len(x) % 16 != 0
    m = (2 * 8 * len(tweak) + 2 + partial).to_bytes(16, "little")
    m += tweak + bytes(-len(tweak) % 16)
    if partial:
        x = x + b"\x01"
    return polyval(h, m + x + bytes(-len(x) % 16))


def xctr(k, s, n):
    iv = int.from_bytes(s, "little")
    counters = b"".join((iv ^ i).to_bytes(16, "little") for i in range(1, n // 16 + 2))
    return aes_block(k, counters)[:n]


def hctr2(k, tweak, data, decrypt=False):
    h, l = aes_block(k, bytes(16)), aes_block(k, (1).to_bytes(16, "little"))
    head, tail = data[:16], data[16:]
    mm = xor(head, hctr2_hash(h, tweak, tail))
    uu = aes_block(k, mm, decrypt)
    tail = xor(tail, xctr(k, xor(xor(mm, uu), l), len(tail)))
    return xor(uu, hctr2_hash(h, tweak, tail)) + tail


def body_encrypt(pi, body):
    return hctr2(pi, b"", body)


def body_decrypt(pi, body):
    return hctr2(pi, b"", body, decrypt=True)


def reply_body_key(k_r):
    return kdf("NOX sphinx v1 hctr2 reply body key", k_r, 16)


def check_hctr2():
    data = REPO / "crates" / "nox-hctr2" / "tests" / "data"
    for v in json.loads((data / "HCTR2_AES128.json").read_text()):
        k, t = bytes.fromhex(v["input"]["key_hex"]), bytes.fromhex(v["input"]["tweak_hex"])
        p, c = bytes.fromhex(v["plaintext_hex"]), bytes.fromhex(v["ciphertext_hex"])
        check(hctr2(k, t, p) == c, "HCTR2 designers' vector, encrypt: " + v["description"])
        check(hctr2(k, t, c, decrypt=True) == p, "HCTR2 designers' vector, decrypt: " + v["description"])
