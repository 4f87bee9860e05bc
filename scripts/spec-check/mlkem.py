"""ML-KEM-768 (FIPS 203) and X-Wing (draft-connolly-cfrg-xwing-kem-06), from the texts.

Slow and not constant time: for known-answer vectors only. Only the
deterministic "internal" algorithms are here (KeyGen_internal, Encaps_internal,
Decaps_internal); randomness comes from the vectors.
"""

import hashlib

Q, N, K, ETA1, ETA2, DU, DV = 3329, 256, 3, 2, 2, 10, 4


def _bitrev7(i):
    return int(f"{i:07b}"[::-1], 2)


ZETAS = [pow(17, _bitrev7(i), Q) for i in range(128)]
GAMMAS = [pow(17, 2 * _bitrev7(i) + 1, Q) for i in range(128)]


def G(b):  # noqa: N802 (FIPS 203 names)
    d = hashlib.sha3_512(b).digest()
    return d[:32], d[32:]


def H(b):  # noqa: N802
    return hashlib.sha3_256(b).digest()


def J(b):  # noqa: N802
    return hashlib.shake_256(b).digest(32)


def prf(eta, s, b):
    return hashlib.shake_256(s + bytes([b])).digest(64 * eta)


def byte_encode(f, d):
    bits = 0
    for i, a in enumerate(f):
        bits |= a << (d * i)
    return bits.to_bytes(32 * d, "little")


def byte_decode(b, d):
    m = Q if d == 12 else 1 << d
    x = int.from_bytes(b, "little")
    return [(x >> (d * i) & ((1 << d) - 1)) % m for i in range(N)]


def compress(x, d):
    return ((x << (d + 1)) + Q) // (2 * Q) % (1 << d)


def decompress(y, d):
    return (Q * y + (1 << (d - 1))) >> d


def sample_ntt(b):
    """Algorithm 7: rejection sampling from SHAKE128(b)."""
    n_bytes = 840
    while True:
        c = hashlib.shake_128(b).digest(n_bytes)
        a, i = [], 0
        while len(a) < N and i + 3 <= len(c):
            d1 = c[i] + 256 * (c[i + 1] % 16)
            d2 = c[i + 1] // 16 + 16 * c[i + 2]
            if d1 < Q:
                a.append(d1)
            if d2 < Q and len(a) < N:
                a.append(d2)
            i += 3
        if len(a) == N:
            return a
        n_bytes *= 2


def cbd(b, eta):
    """Algorithm 8."""
    bits = int.from_bytes(b, "little")
    out = []
    for i in range(N):
        x = sum(bits >> (2 * i * eta + j) & 1 for j in range(eta))
        y = sum(bits >> (2 * i * eta + eta + j) & 1 for j in range(eta))
        out.append((x - y) % Q)
    return out


def ntt(f):
    f, i, length = list(f), 1, 128
    while length >= 2:
        for start in range(0, N, 2 * length):
            z = ZETAS[i]
            i += 1
            for j in range(start, start + length):
                t = z * f[j + length] % Q
                f[j + length] = (f[j] - t) % Q
                f[j] = (f[j] + t) % Q
        length //= 2
    return f


def intt(f):
    f, i, length = list(f), 127, 2
    while length <= 128:
        for start in range(0, N, 2 * length):
            z = ZETAS[i]
            i -= 1
            for j in range(start, start + length):
                t = f[j]
                f[j] = (t + f[j + length]) % Q
                f[j + length] = z * (f[j + length] - t) % Q
        length *= 2
    return [x * 3303 % Q for x in f]


def mul_ntt(f, g):
    out = [0] * N
    for i in range(128):
        a0, a1, b0, b1 = f[2 * i], f[2 * i + 1], g[2 * i], g[2 * i + 1]
        out[2 * i] = (a0 * b0 + a1 * b1 * GAMMAS[i]) % Q
        out[2 * i + 1] = (a0 * b1 + a1 * b0) % Q
    return out


def add(f, g):
    return [(a + b) % Q for a, b in zip(f, g)]


def matrix(rho):
    """Â[i][j] = SampleNTT(ρ ‖ j ‖ i)."""
    return [[sample_ntt(rho + bytes([j, i])) for j in range(K)] for i in range(K)]


def pke_keygen(d):
    rho, sigma = G(d + bytes([K]))
    a = matrix(rho)
    s = [ntt(cbd(prf(ETA1, sigma, i), ETA1)) for i in range(K)]
    e = [ntt(cbd(prf(ETA1, sigma, K + i), ETA1)) for i in range(K)]
    t = []
    for i in range(K):
        acc = e[i]
        for j in range(K):
            acc = add(acc, mul_ntt(a[i][j], s[j]))
        t.append(acc)
    ek = b"".join(byte_encode(x, 12) for x in t) + rho
    dk = b"".join(byte_encode(x, 12) for x in s)
    return ek, dk


def pke_encrypt(ek, m, r):
    t = [byte_decode(ek[384 * i : 384 * (i + 1)], 12) for i in range(K)]
    a = matrix(ek[384 * K :])
    y = [ntt(cbd(prf(ETA1, r, i), ETA1)) for i in range(K)]
    e1 = [cbd(prf(ETA2, r, K + i), ETA2) for i in range(K)]
    e2 = cbd(prf(ETA2, r, 2 * K), ETA2)
    u = []
    for i in range(K):
        acc = [0] * N
        for j in range(K):
            acc = add(acc, mul_ntt(a[j][i], y[j]))
        u.append(add(intt(acc), e1[i]))
    mu = [decompress(b, 1) for b in byte_decode(m, 1)]
    acc = [0] * N
    for j in range(K):
        acc = add(acc, mul_ntt(t[j], y[j]))
    v = add(add(intt(acc), e2), mu)
    c1 = b"".join(byte_encode([compress(x, DU) for x in p], DU) for p in u)
    return c1 + byte_encode([compress(x, DV) for x in v], DV)


def pke_decrypt(dk, c):
    u = [[decompress(x, DU) for x in byte_decode(c[320 * i : 320 * (i + 1)], DU)] for i in range(K)]
    v = [decompress(x, DV) for x in byte_decode(c[320 * K :], DV)]
    s = [byte_decode(dk[384 * i : 384 * (i + 1)], 12) for i in range(K)]
    acc = [0] * N
    for i in range(K):
        acc = add(acc, mul_ntt(s[i], ntt(u[i])))
    w = [(a - b) % Q for a, b in zip(v, intt(acc))]
    return byte_encode([compress(x, 1) for x in w], 1)


def keygen(d, z):
    """ML-KEM.KeyGen_internal (Algorithm 16): (ek, dk)."""
    ek, dk_pke = pke_keygen(d)
    return ek, dk_pke + ek + H(ek) + z


def encaps(ek, m):
    """ML-KEM.Encaps_internal (Algorithm 17): (K, c)."""
    k, r = G(m + H(ek))
    return k, pke_encrypt(ek, m, r)


def decaps(dk, c):
    """ML-KEM.Decaps_internal (Algorithm 18), with implicit rejection."""
    dk_pke, ek = dk[: 384 * K], dk[384 * K : 768 * K + 32]
    h, z = dk[768 * K + 32 : 768 * K + 64], dk[768 * K + 64 :]
    m = pke_decrypt(dk_pke, c)
    k, r = G(m + h)
    return k if pke_encrypt(ek, m, r) == c else J(z + c)


# ------------------------------------------------------------------ X-Wing
LABEL = b"\\.//^\\"


def _x25519(k, u):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

    return X25519PrivateKey.from_private_bytes(k).exchange(X25519PublicKey.from_public_bytes(u))


def _x25519_base(k):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return X25519PrivateKey.from_private_bytes(k).public_key().public_bytes_raw()


def xwing_keygen(sk):
    """Draft section 5.2: the 32-byte seed expands to d ‖ z ‖ sk_X. Returns (pk, (dk_M, sk_X, pk_X))."""
    e = hashlib.shake_256(sk).digest(96)
    pk_m, dk_m = keygen(e[:32], e[32:64])
    pk_x = _x25519_base(e[64:96])
    return pk_m + pk_x, (dk_m, e[64:96], pk_x)


def xwing_encaps(pk, eseed):
    """Draft section 5.4: (ss, ct)."""
    pk_m, pk_x = pk[:1184], pk[1184:]
    ss_m, ct_m = encaps(pk_m, eseed[:32])
    ct_x = _x25519_base(eseed[32:64])
    ss_x = _x25519(eseed[32:64], pk_x)
    return hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + LABEL).digest(), ct_m + ct_x


def xwing_decaps(expanded, ct):
    dk_m, sk_x, pk_x = expanded
    ct_m, ct_x = ct[:1088], ct[1088:]
    ss_m = decaps(dk_m, ct_m)
    ss_x = _x25519(sk_x, ct_x)
    return hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + LABEL).digest()
