"""The shared pieces: where the vectors are, the failure list, and the BLAKE3 and AES-CTR
primitives every spec builds on (sphinx.md section 4)."""

import pathlib

import blake3
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

REPO = pathlib.Path(__file__).resolve().parents[3]
VECTORS = REPO / "docs" / "spec" / "vectors"
ELL = 2**252 + 27742317777372353535851937790883648493
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


def kdf(ctx, m, n):
    return blake3.blake3(m, derive_key_context=ctx).digest(length=n)


def prf(k, m):
    return blake3.blake3(m, key=k).digest()


def stream(k, n):
    enc = Cipher(algorithms.AES(k), modes.CTR(bytes(16))).encryptor()
    return enc.update(bytes(n)) + enc.finalize()


def xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def be32(x):
    return x.to_bytes(4, "big")
