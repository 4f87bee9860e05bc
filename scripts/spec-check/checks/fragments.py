"""fragments.json (fragments.md): headers, the shard split, parity from section 4, the
section 5 errors."""

import json

from .common import be32, check, VECTORS


POLY = 0x1002D
CANTOR = [0x0001, 0xACCA, 0x3C0E, 0x163E, 0xC582, 0xED2E, 0x914C, 0x4012,
          0x6C98, 0x10D8, 0x6A72, 0xB900, 0xFDB8, 0xFB34, 0xFF38, 0x991E]


def gmul(a, b):
    r = 0
    while b:
        if b & 1:
            r ^= a
        b >>= 1
        a <<= 1
        if a & 0x10000:
            a ^= POLY
    return r


def gpow(a, e):
    r = 1
    while e:
        if e & 1:
            r = gmul(r, a)
        a, e = gmul(a, a), e >> 1
    return r


def element(v):
    r = 0
    for i in range(16):
        if v >> i & 1:
            r ^= CANTOR[i]
    return r


VALUE = {element(v): v for v in range(1 << 16)}


def solve(a, b):
    n = len(b)
    m = [row[:] + [x] for row, x in zip(a, b)]
    for c in range(n):
        p = next(r for r in range(c, n) if m[r][c])
        m[c], m[p] = m[p], m[c]
        inv = gpow(m[c][c], 65534)
        m[c] = [gmul(x, inv) for x in m[c]]
        for r in range(n):
            if r != c and m[r][c]:
                f = m[r][c]
                m[r] = [x ^ gmul(f, y) for x, y in zip(m[r], m[c])]
    return [row[n] for row in m]


def symbols(shard):
    out = []
    for i in range(0, len(shard), 64):
        block = shard[i : i + 64]
        h = len(block) // 2
        out += [block[k] | block[h + k] << 8 for k in range(h)]
    return out


def npow2(x):
    return 1 << (x - 1).bit_length()


def generator(d, p):
    """p x d matrix of section 4.4; column i is the parity of data e_i."""
    n, m = npow2(d), npow2(p)
    high = n > m or (n == m and d <= p)
    g = [[0] * d for _ in range(p)]
    if high:
        a = [[gpow(element(j), e) for j in range(m)] for e in range(m)]
        for i in range(d):
            r = solve(a, [gpow(element(m + i), e) for e in range(m)])
            for j in range(p):
                g[j][i] = r[j]
    else:
        a = [[gpow(element(k), e) for e in range(n)] for k in range(n)]
        for i in range(d):
            coef = solve(a, [1 if k == i else 0 for k in range(n)])
            for j in range(p):
                x, acc = element(n + j), 0
                for e, c in enumerate(coef):
                    acc ^= gmul(c, gpow(x, e))
                g[j][i] = acc
    return g, "high" if high else "low"


def check_fragments():
    v = json.loads((VECTORS / "fragments.json").read_text())
    for case in v["valid"]:
        name, d, p, s = case["name"], case["data_shards"], case["parity_shards"], case["shard_len"]
        msg = bytes.fromhex(case["message"])
        L = len(msg)
        check(s == max(2, -(-(-(-L // d)) // 2) * 2), name + ": shard length")
        frags = [bytes.fromhex(x) for x in case["fragments"]]
        check(len(frags) == d + p, name + ": count")
        for k, fr in enumerate(frags):
            hdr = bytes([1]) + bytes.fromhex(case["message_id"]) + bytes([k, d, p]) + be32(L)
            check(fr[:24] == hdr and len(fr) == 24 + s, f"{name}: header {k}")
        padded = msg + bytes(d * s - L)
        data = [padded[i * s : (i + 1) * s] for i in range(d)]
        check([fr[24:] for fr in frags[:d]] == data, name + ": data shards")
        if p == 0:
            check(case["parity_construction"] == "none", name + ": construction")
            continue
        if d == 1:
            check(case["parity_construction"] == "copy", name + ": construction")
            check(all(fr[24:] == data[0] for fr in frags[1:]), name + ": copies")
            continue
        g, rate = generator(d, p)
        check(case["parity_construction"] == rate, name + ": construction")
        cols = [[element(x) for x in symbols(sh)] for sh in data]
        for j in range(p):
            values = []
            for q in range(s // 2):
                acc = 0
                for i in range(d):
                    acc ^= gmul(g[j][i], cols[i][q])
                values.append(VALUE[acc])
            check(symbols(frags[d + j][24:]) == values, f"{name}: parity {j}")


def parse_error(fr):
    """fragments.md §5: the first failing check's name, or None."""
    if len(fr) < 24:
        return "Truncated"
    if fr[0] != 1:
        return "UnsupportedVersion"
    k, d, p, L = fr[17], fr[18], fr[19], int.from_bytes(fr[20:24], "big")
    if d == 0:
        return "NoDataShards"
    if d + p > 255:
        return "TooManyShards"
    s = max(2, -(-(-(-L // d)) // 2) * 2)
    if d > 1 and (d - 1) * s >= L:
        return "PaddingOnlyShard"
    if s > 2**32 - 1:
        return "MessageTooLarge"
    if k >= d + p:
        return "IndexOutOfRange"
    if len(fr) != 24 + s:
        return "ShardLengthMismatch"
    return None


def check_fragment_errors():
    v = json.loads((VECTORS / "fragments.json").read_text())
    for case in v["invalid"]:
        got = parse_error(bytes.fromhex(case["fragment"]))
        check(got == case["error"], f"invalid fragment {case['name']}: got {got}")
    for case in v["valid"]:
        for fr in case["fragments"]:
            check(parse_error(bytes.fromhex(fr)) is None, f"{case['name']}: fragment refused")
