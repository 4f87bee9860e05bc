"""Keccak-256, secp256k1 ECDSA (with v) and the ABI pieces the registry and relay specs use.

Written from the Keccak reference (FIPS 202's permutation with the original
0x01 padding, as Ethereum uses) and SEC 1; slow and not constant time: for
known-answer vectors only.
"""

# ------------------------------------------------------------------ Keccak
_RC = [
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
]
_ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56], [27, 20, 39, 8, 14]]
_M = (1 << 64) - 1


def _rol(x, n):
    return ((x << n) | (x >> (64 - n))) & _M if n else x


def _keccak_f(a):
    for rc in _RC:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rol(c[(x + 1) % 5], 1) for x in range(5)]
        a = [[a[x][y] ^ d[x] for y in range(5)] for x in range(5)]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rol(a[x][y], _ROT[x][y])
        a = [[b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
        a[0][0] ^= rc
    return a


def keccak256(data):
    rate = 136
    msg = bytearray(data) + b"\x01"
    msg += bytes(-len(msg) % rate)
    msg[-1] |= 0x80
    a = [[0] * 5 for _ in range(5)]
    for off in range(0, len(msg), rate):
        block = msg[off : off + rate]
        for i in range(rate // 8):
            a[i % 5][i // 5] ^= int.from_bytes(block[8 * i : 8 * i + 8], "little")
        a = _keccak_f(a)
    return b"".join(a[i % 5][i // 5].to_bytes(8, "little") for i in range(4))


# --------------------------------------------------------------- secp256k1
P = 2**256 - 2**32 - 977
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
G = (
    0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
    0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8,
)


def _add(p, q):
    if p is None:
        return q
    if q is None:
        return p
    if p[0] == q[0] and (p[1] + q[1]) % P == 0:
        return None
    if p == q:
        m = 3 * p[0] * p[0] * pow(2 * p[1], -1, P) % P
    else:
        m = (q[1] - p[1]) * pow(q[0] - p[0], -1, P) % P
    x = (m * m - p[0] - q[0]) % P
    return x, (m * (p[0] - x) - p[1]) % P


def mul(k, p=G):
    r = None
    while k:
        if k & 1:
            r = _add(r, p)
        p, k = _add(p, p), k >> 1
    return r


def address(private_key):
    """The Ethereum address of a secp256k1 private key (32 bytes)."""
    x, y = mul(int.from_bytes(private_key, "big"))
    return keccak256(x.to_bytes(32, "big") + y.to_bytes(32, "big"))[12:]


def ecdsa_ok(private_key, digest, sig):
    """A 65-byte r ‖ s ‖ v signature over a 32-byte digest: valid for the key, low s,
    v ∈ {27, 28} naming the parity of R's y coordinate."""
    q = mul(int.from_bytes(private_key, "big"))
    r, s, v = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:64], "big"), sig[64]
    if not (0 < r < N and 0 < s <= N // 2 and v in (27, 28)):
        return False
    z, w = int.from_bytes(digest, "big"), pow(s, -1, N)
    point = _add(mul(z * w % N), mul(r * w % N, q))
    return point is not None and point[0] % N == r and point[1] % 2 == v - 27


# --------------------------------------------------------------------- ABI
def word(x):
    return x.to_bytes(32, "big")


def pad_bytes(b):
    """ABI `bytes`: length word, then the bytes padded to a multiple of 32."""
    return word(len(b)) + b + bytes(-len(b) % 32)


def encode_bundle(payment, payment_data, asset, fee, target, value, gas, data):
    """abi.encode of Bundle(address, bytes, address, uint256, Action(address, uint256, uint256,
    bytes)) as the one argument of a function: offset word, then the tuple."""
    action = bytes(12) + target + word(value) + word(gas) + word(0x80) + pad_bytes(data)
    pd = pad_bytes(payment_data)
    head = bytes(12) + payment + word(0xA0) + bytes(12) + asset + word(fee) + word(0xA0 + len(pd))
    return word(0x20) + head + pd + action


def decode_bundle(b):
    """The fields of an encoded Bundle argument (following its offsets), or None."""
    try:
        base = int.from_bytes(b[:32], "big")
        t = b[base:]
        payment, asset = t[12:32], t[76:96]
        pd_off, fee, act_off = (int.from_bytes(t[32 * i : 32 * i + 32], "big") for i in (1, 3, 4))
        pd_len = int.from_bytes(t[pd_off : pd_off + 32], "big")
        payment_data = t[pd_off + 32 : pd_off + 32 + pd_len]
        a = t[act_off:]
        target, value, gas = a[12:32], int.from_bytes(a[32:64], "big"), int.from_bytes(a[64:96], "big")
        d_off = int.from_bytes(a[96:128], "big")
        d_len = int.from_bytes(a[d_off : d_off + 32], "big")
        data = a[d_off + 32 : d_off + 32 + d_len]
        if len(payment_data) != pd_len or len(data) != d_len or len(payment) != 20 or len(target) != 20:
            return None
        if len(asset) != 20:
            return None
        return payment, payment_data, asset, fee, target, value, gas, data
    except (IndexError, ValueError):
        return None
