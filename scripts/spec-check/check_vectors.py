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

import json
import pathlib
import sys

import blake3
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import evm
import mlkem
import ristretto

VECTORS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "spec" / "vectors"
ELL = 2**252 + 27742317777372353535851937790883648493
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


# ----------------------------------------------------------------- Sphinx
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


def geometry_id(g):
    label = b"blind=add" if g["blinding"] == "additive" else b"blind=mul"
    m = b"ristretto255|blake3|aes128ctr|hctr2|" + label
    m += be32(g["packet_len"]) + be32(g["hops"]) + be32(64) + be32(16)
    return kdf("NOX sphinx v1 geometry", m, 32)


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
    data = pathlib.Path(__file__).resolve().parents[2] / "crates" / "nox-hctr2" / "tests" / "data"
    for v in json.loads((data / "HCTR2_AES128.json").read_text()):
        k, t = bytes.fromhex(v["input"]["key_hex"]), bytes.fromhex(v["input"]["tweak_hex"])
        p, c = bytes.fromhex(v["plaintext_hex"]), bytes.fromhex(v["ciphertext_hex"])
        check(hctr2(k, t, p) == c, "HCTR2 designers' vector, encrypt: " + v["description"])
        check(hctr2(k, t, c, decrypt=True) == p, "HCTR2 designers' vector, decrypt: " + v["description"])


def decode_body(body):
    """Section 6.2: the payload, or the error name."""
    if body[:16] != bytes(16):
        return "PayloadIntegrity"
    rest = body[16:].rstrip(b"\x00")
    if not rest or rest[-1] != 0x80:
        return "BadPadding"
    return rest[:-1]


def work_bits(tag, nonce):
    w = kdf("NOX sphinx v1 proof of work", tag + nonce, 32)
    bits = 0
    for byte in w:
        if byte:
            return bits + 8 - byte.bit_length()
        bits += 8
    return bits


def replay_tag(header, hops):
    return kdf("NOX sphinx v1 replay tag", header[: 56 + 64 * hops], 32)


def decode_block(block):
    """Section 5.3: the routing block's command, or the error name."""
    if any(block[1:4]):
        return "MalformedRoutingBlock"
    cmd = block[0]
    if cmd not in (1, 2, 3):
        return "UnknownCommand"
    if cmd == 2 and any(block[8:64]) or cmd == 3 and any(block[56:64]):
        return "MalformedRoutingBlock"
    return {1: "Forward", 2: "Deliver", 3: "Reply"}[cmd]


def scalar(hexstr):
    return int.from_bytes(bytes.fromhex(hexstr), "little")


def check_nodes(name, nodes):
    for i, n in enumerate(nodes):
        pub = ristretto.encode(ristretto.mul(scalar(n["secret_key"]), ristretto.B))
        check(pub.hex() == n["public_key"], f"{name} node {i}: public key")


def first_nonce(tag, difficulty):
    """Section 7: the first BE64 counter meeting the difficulty."""
    c = 0
    while difficulty and work_bits(tag, c.to_bytes(8, "big")) < difficulty:
        c += 1
    return c.to_bytes(8, "big")


class Rng:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        out = self.data[self.at : self.at + n]
        self.at += n
        return out


def block(cmd, delay, node=bytes(32), mid=bytes(16), tail=bytes(8)):
    return bytes([cmd, 0, 0, 0]) + be32(delay) + node + mid + tail


def build_header(g, epoch, nodes, last, rng):
    """Section 5.2 from the spec: returns (header, [pi_i])."""
    H, n = g["hops"], len(nodes)
    R = 64 * H
    prefix = bytes.fromhex(g["tag"]) + be32(epoch)
    a = int.from_bytes(rng.take(64), "little") % ristretto.L
    alphas, keys = [], []
    for node in nodes:
        alpha = ristretto.encode(ristretto.mul(a, ristretto.B))
        x = ristretto.decode(bytes.fromhex(node["public_key"]))
        s = ristretto.encode(ristretto.mul(a, x))
        okm = kdf("NOX sphinx v1 hop key schedule", alpha + s, 128)
        b = int.from_bytes(okm[64:128], "little") % ristretto.L
        a = (a * b if g["blinding"] == "multiplicative" else a + b) % ristretto.L
        alphas.append(alpha)
        keys.append((okm[:16], okm[16:48], okm[48:64]))
    streams = [stream(k[0], R + 64) for k in keys]
    filler = b""
    for i in range(1, n):
        filler = xor(filler + bytes(64), streams[i - 1][R + 64 - 64 * i : R + 64])
    plain = last + rng.take(R - 64 * n)
    beta = xor(plain, streams[n - 1][: R - 64 * (n - 1)]) + filler
    for i in range(n - 1, -1, -1):
        gamma = prf(keys[i][1], prefix + beta)[:16]
        partial = prefix + alphas[i] + beta + gamma
        nonce = first_nonce(replay_tag(partial, H), nodes[i]["pow_difficulty"])
        header = partial + nonce
        if i > 0:
            fwd = block(1, nodes[i - 1]["delay_us"], bytes.fromhex(nodes[i]["id"]), gamma, nonce)
            beta = xor(fwd + beta[: R - 64], streams[i - 1][:R])
    return header, [k[2] for k in keys]


def encode_body(payload, length):
    body = bytes(16) + payload + b"\x80"
    return body + bytes(length - len(body))


def check_build(f):
    g = f["geometry"]
    rng = Rng(bytes.fromhex(f["rng_bytes"]))
    last = block(2, f["nodes"][-1]["delay_us"])
    header, pis = build_header(g, f["key_epoch"], f["nodes"], last, rng)
    body = encode_body(bytes.fromhex(f["payload"]), g["packet_len"] - g["header_len"])
    for pi in reversed(pis):
        body = body_encrypt(pi, body)
    packet = header + body
    check(rng.at == len(rng.data), f["name"] + ": rng bytes all used")
    check(blake3.blake3(packet).hexdigest() == f["packet_blake3"], f["name"] + ": rebuilt packet")
    if "packet" in f:
        check(packet.hex() == f["packet"], f["name"] + ": rebuilt packet bytes")
    return packet


def check_trace(name, g, hops, packet, last_kind, nodes):
    H, hl = g["hops"], g["header_len"]
    R = 64 * H
    body = packet[hl:] if packet is not None else None
    for i, hop in enumerate(hops):
        header = bytes.fromhex(hop["header"])
        alpha, beta = header[8:40], header[40 : 40 + R]
        point = ristretto.decode(alpha)
        s = ristretto.encode(ristretto.mul(scalar(nodes[i]["secret_key"]), point))
        check(s.hex() == hop["shared_secret"], f"{name} hop {i}: shared secret")
        okm = kdf("NOX sphinx v1 hop key schedule", alpha + s, 128)
        rho, mu, pi = okm[:16], okm[16:48], okm[48:64]
        b = (int.from_bytes(okm[64:128], "little") % ELL).to_bytes(32, "little")
        tag = f"{name} hop {i}"
        check(rho.hex() == hop["rho"], tag + ": rho")
        check(mu.hex() == hop["mu"], tag + ": mu")
        check(pi.hex() == hop["pi"], tag + ": pi")
        check(b.hex() == hop["b"], tag + ": b")
        check(prf(mu, header[:8] + beta)[:16] == header[40 + R : 56 + R], tag + ": gamma")
        t = replay_tag(header, H)
        check(t.hex() == hop["replay_tag"], tag + ": replay tag")
        check(work_bits(t, header[56 + R : 64 + R]) == hop["pow_work_bits"], tag + ": pow bits")
        u = xor(beta + bytes(64), stream(rho, R + 64))
        check(u[:64].hex() == hop["routing_block"], tag + ": routing block")
        kind = decode_block(u[:64])
        if body is not None:
            check(blake3.blake3(body).hexdigest() == hop["body_blake3"], tag + ": body")
            body = body_decrypt(pi, body)
        if i + 1 < len(hops):
            check(kind == "Forward", tag + ": command")
            nxt = bytes.fromhex(hops[i + 1]["header"])
            check(nxt[40 : 40 + R] == u[64:], tag + ": next beta")
            check(nxt[40 + R : 56 + R] == u[40:56], tag + ": next gamma")
            check(nxt[56 + R : 64 + R] == u[56:64], tag + ": next nonce")
            check(nxt[:8] == header[:8], tag + ": prefix")
            bi = int.from_bytes(b, "little")
            if g["blinding"] == "multiplicative":
                nxt_alpha = ristretto.mul(bi, point)
            else:
                nxt_alpha = ristretto.add(point, ristretto.mul(bi, ristretto.B))
            check(ristretto.encode(nxt_alpha) == nxt[8:40], tag + ": next alpha")
        else:
            check(kind == last_kind, tag + ": last command")
    return body, u


def check_sphinx():
    v = json.loads((VECTORS / "sphinx.json").read_text())
    for f in v["forward"]:
        g = f["geometry"]
        gid = geometry_id(g)
        check(gid.hex() == g["identifier"] and gid[:4].hex() == g["tag"], f["name"] + ": geometry id")
        check_nodes(f["name"], f["nodes"])
        packet = check_build(f)
        if "packet_header" in f:
            check(packet[: g["header_len"]].hex() == f["packet_header"], f["name"] + ": header")
        check(packet[4:8] == be32(f["key_epoch"]), f["name"] + ": epoch")
        body, u = check_trace(f["name"], g, f["hops"], packet, "Deliver", f["nodes"])
        check(decode_body(body) == bytes.fromhex(f["exit"]["payload"]), f["name"] + ": exit payload")
        check(int.from_bytes(u[4:8], "big") == f["exit"]["delay_us"], f["name"] + ": exit delay")
    s = v["surb"]
    check_nodes("surb", s["nodes"])
    rng = Rng(bytes.fromhex(s["rng_bytes"]))
    sid = rng.take(16)
    last = block(3, s["nodes"][-1]["delay_us"], bytes.fromhex(s["recipient"]), sid)
    header, _ = build_header(s["geometry"], s["key_epoch"], s["nodes"], last, rng)
    rebuilt = bytes.fromhex(s["nodes"][0]["id"]) + rng.take(32) + header
    check(rebuilt.hex() == s["surb"] and rng.at == len(rng.data), "surb: rebuilt from rng_bytes")
    surb = bytes.fromhex(s["surb"])
    k_r, header = surb[32:64], surb[64:]
    body = bytes(16) + bytes.fromhex(s["reply"]) + b"\x80"
    body += bytes(s["geometry"]["packet_len"] - len(header) - len(body))
    reply = header + body_encrypt(reply_body_key(k_r), body)
    check(reply.hex() == s["reply_packet"], "surb: reply packet")
    delivered, u = check_trace("surb", s["geometry"], s["hops"], reply, "Reply", s["nodes"])
    check(delivered.hex() == s["delivered_body"], "surb: delivered body")
    check(u[40:56].hex() == s["surb_id"] and u[8:40].hex() == s["recipient"], "surb: block")
    check_key_schedule(v["key_schedule"])
    p = v["pow"]
    tag = bytes.fromhex(p["replay_tag"])
    c = 0
    while work_bits(tag, c.to_bytes(8, "big")) < p["difficulty"]:
        c += 1
    check(c.to_bytes(8, "big").hex() == p["nonce"], "pow: first BE64 counter")
    check(work_bits(tag, c.to_bytes(8, "big")) == p["work_bits"], "pow: work bits")
    return check_failures(v["failures"])


def check_key_schedule(k):
    """Section 4.1 for one hop in isolation: s, okm and its split."""
    alpha = bytes.fromhex(k["alpha"])
    point = ristretto.decode(alpha)
    check(point is not None and not ristretto.is_identity(point), "key schedule: alpha decodes")
    s = ristretto.encode(ristretto.mul(scalar(k["secret_key"]), point))
    check(s.hex() == k["shared_secret"], "key schedule: shared secret")
    okm = kdf("NOX sphinx v1 hop key schedule", alpha + s, 128)
    check(okm.hex() == k["okm"], "key schedule: okm")
    check(okm[:16].hex() == k["rho"], "key schedule: rho = okm[0..16]")
    check(okm[16:48].hex() == k["mu"], "key schedule: mu = okm[16..48]")
    check(okm[48:64].hex() == k["pi"], "key schedule: pi = okm[48..64]")
    check(okm[64:128].hex() == k["b_wide"], "key schedule: okm[64..128]")
    b = int.from_bytes(okm[64:128], "little") % ELL
    check(b.to_bytes(32, "little").hex() == k["b"], "key schedule: b = WideScalar(okm[64..128])")


def ingest(g, node, seen, x):
    """Section 5.4: the first failing check's name, or the outcome."""
    H, n = g["hops"], g["packet_len"]
    R, hl = 64 * H, g["header_len"]
    if len(x) != n:
        return "WrongLength"
    if x[:4].hex() != g["tag"]:
        return "WrongGeometry"
    if int.from_bytes(x[4:8], "big") != node["key_epoch"]:
        return "UnknownEpoch"
    tag = replay_tag(x, H)
    if tag in seen:
        return "Replay"
    if work_bits(tag, x[56 + R : 64 + R]) < node["pow_difficulty"]:
        return "InsufficientWork"
    point = ristretto.decode(x[8:40])
    if point is None or ristretto.is_identity(point):
        return "InvalidEphemeralKey"
    s = ristretto.encode(ristretto.mul(scalar(node["secret_key"]), point))
    okm = kdf("NOX sphinx v1 hop key schedule", x[8:40] + s, 128)
    if prf(okm[16:48], x[:8] + x[40 : 40 + R])[:16] != x[40 + R : 56 + R]:
        return "MacMismatch"
    # Check 8: the MAC verified, so the tag is recorded now, whatever the
    # routing block and the body say (a concurrent copy would be a Replay).
    if tag in seen:
        return "Replay"
    seen.add(tag)
    u = xor(x[40 : 40 + R] + bytes(64), stream(okm[:16], R + 64))
    kind = decode_block(u[:64])
    if kind in ("MalformedRoutingBlock", "UnknownCommand"):
        return kind
    body = body_decrypt(okm[48:64], x[hl:])
    if kind == "Deliver":
        result = decode_body(body)
        if isinstance(result, str):
            return result
    return kind


def check_failures(f):
    g, node = f["geometry"], f["node"]
    check_nodes("failures", [node])
    for case in f["cases"]:
        seen = {bytes.fromhex(t) for t in case["seen_replay_tags"]}
        before = len(seen)
        x = bytes.fromhex(case["input"])
        got = ingest(g, node, seen, x)
        check(got == case.get("error", case.get("outcome")), f"failure case {case['name']}: got {got}")
        # Recorded iff the MAC verified; then a second copy is a replay.
        mac_ok = got in ("Forward", "Deliver", "Reply", "MalformedRoutingBlock", "UnknownCommand",
                         "PayloadIntegrity", "BadPadding")
        check(len(seen) == before + mac_ok, f"failure case {case['name']}: tag recorded iff the MAC verified")
        if mac_ok:
            check(ingest(g, node, seen, x) == "Replay", f"failure case {case['name']}: second copy")
    return len(f["cases"])


# -------------------------------------------------------------- fragments
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


# ---------------------------------------------------------------- Poseidon
POSEIDON_PARTIAL_ROUNDS = {2: 56, 3: 57, 4: 56}  # circom's R_P for widths 2, 3, 4; R_F = 8
_POSEIDON = {}


def poseidon_params(t):
    """The circom parameters: round constants and the Cauchy MDS matrix from the Grain LFSR of
    the Poseidon paper's reference script (field 1, S-box x^5, n = 254 bits, width t, R_F, R_P)."""
    if t in _POSEIDON:
        return _POSEIDON[t]
    rf, rp = 8, POSEIDON_PARTIAL_ROUNDS[t]
    bits = [0, 1, 0, 0, 0, 0] + [int(b) for b in f"{254:012b}{t:012b}{rf:010b}{rp:010b}"] + [1] * 30

    def step():
        bits.append(bits[62] ^ bits[51] ^ bits[38] ^ bits[23] ^ bits[13] ^ bits[0])
        bits.pop(0)
        return bits[-1]

    for _ in range(160):
        step()

    def bit():
        while step() == 0:  # a pair (0, x) is discarded
            step()
        return step()

    def rand(n=254):
        x = 0
        for _ in range(n):
            x = x << 1 | bit()
        return x

    consts = []
    for _ in range((rf + rp) * t):
        x = rand()
        while x >= BN254_R:
            x = rand()
        consts.append(x)
    while True:
        xs = [rand() % BN254_R for _ in range(2 * t)]
        while len(set(xs)) != 2 * t:
            xs = [rand() % BN254_R for _ in range(2 * t)]
        if all((x + y) % BN254_R for x in xs[:t] for y in xs[t:]):
            mds = [[pow(xs[i] + xs[t + j], -1, BN254_R) for j in range(t)] for i in range(t)]
            break
    _POSEIDON[t] = (consts, mds, rf, rp)
    return _POSEIDON[t]


def poseidon(*inputs):
    t = len(inputs) + 1
    consts, mds, rf, rp = poseidon_params(t)
    state = [0] + list(inputs)
    for r in range(rf + rp):
        state = [(a + consts[r * t + i]) % BN254_R for i, a in enumerate(state)]
        if r < rf // 2 or r >= rf // 2 + rp:
            state = [pow(a, 5, BN254_R) for a in state]
        else:
            state[0] = pow(state[0], 5, BN254_R)
        state = [sum(mds[i][j] * state[j] for j in range(t)) % BN254_R for i in range(t)]
    return state[0]


BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
BECH32M_CONST = 0x2BC830A3


def bech32_polymod(values):
    """BIP-173's checksum polynomial, as BIP-350 uses it for bech32m."""
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    return chk


def bech32_hrp_expand(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def bech32m_encode(hrp, data):
    """notes.md 2.1: 8-bit bytes regrouped into 5-bit groups (zero-padded), BIP-350 checksum."""
    acc, bits, groups = 0, 0, []
    for b in data:
        acc, bits = (acc << 8) | b, bits + 8
        while bits >= 5:
            bits -= 5
            groups.append((acc >> bits) & 31)
    if bits:
        groups.append((acc << (5 - bits)) & 31)
    poly = bech32_polymod(bech32_hrp_expand(hrp) + groups + [0] * 6) ^ BECH32M_CONST
    groups += [(poly >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32_CHARSET[g] for g in groups)


def notes_decode(s, want):
    """notes.md 2.2: a nox1/noxview1 string to its 65 data bytes, or the kind of error, checked
    in the section's order."""
    s = s.strip()
    if not s:
        return "empty"
    h = s[2:] if s[:2] in ("0x", "0X") else s
    if len(h) == 40 and all(c in "0123456789abcdefABCDEF" for c in h):
        return "ethereum_address"
    if s[:7].lower() == "noxpay:":
        return "retired_form"
    if "1" not in s:
        return "not_bech32"
    if any(ord(c) < 33 or ord(c) > 126 for c in s):
        return "invalid_character"
    if s.lower() != s and s.upper() != s:
        return "mixed_case"
    s = s.lower()
    sep = s.rindex("1")
    hrp, data = s[:sep], s[sep + 1 :]
    if not hrp or len(hrp) > 83:
        return "not_bech32"
    if any(c not in BECH32_CHARSET for c in data):
        return "invalid_character"
    if hrp != want:
        if (want, hrp) == ("nox", "noxview"):
            return "viewing_key_not_address"
        if (want, hrp) == ("noxview", "nox"):
            return "address_not_viewing_key"
        return "wrong_prefix"
    groups = [BECH32_CHARSET.index(c) for c in data]
    if len(groups) < 6 or len(s) > 1023:
        return "wrong_length"
    if bech32_polymod(bech32_hrp_expand(hrp) + groups) != BECH32M_CONST:
        return "checksum"
    groups = groups[:-6]
    if len(groups) != 104:
        return "wrong_length"
    n = 0
    for g in groups:
        n = (n << 5) | g
    out = n.to_bytes(65, "big")
    if out[0] != 0:
        return "unknown_version"
    return out


def check_notes():
    """notes.md v2 sections 2-4: keys, the nox1/noxview1 strings and every refusal, the note
    ciphertexts with their intermediates, what a wallet makes of each ciphertext, and through
    Poseidon the owner, inner, commitments and the nullifier."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    def pub(k):
        return X25519PrivateKey.from_private_bytes(k).public_key().public_bytes_raw()

    def dh(k, u):
        """X25519; None when the result is all zeros (cryptography refuses it)."""
        try:
            return X25519PrivateKey.from_private_bytes(k).exchange(X25519PublicKey.from_public_bytes(u))
        except ValueError:
            return None

    def address(s):
        d = notes_decode(s, "nox")
        if isinstance(d, str):
            return d
        if int.from_bytes(d[1:33], "big") >= BN254_R:
            return "owner_out_of_range"
        if dh(bytes([0x55] * 32), d[33:]) is None:
            return "low_order_viewing_key"
        return int.from_bytes(d[1:33], "big"), d[33:]

    v = json.loads((VECTORS / "notes.json").read_text())
    w = lambda x: int(x, 16)  # noqa: E731
    seed = bytes.fromhex(v["seed"])
    sk = int.from_bytes(kdf("NOX wallet v1 spending key", seed, 64), "little") % BN254_R
    check(sk == w(v["spending_key"]), "notes: sk")
    check(poseidon(1, 2) == 0x115CC0F5E7D690413DF64C6B9662E9CF2A3617F2743245519E19607A4417189A, "poseidon: circomlib's Poseidon(1, 2)")
    owner = poseidon(sk)
    check(owner == w(v["owner"]), "notes: owner = Poseidon(sk)")
    vk = blake3.blake3(seed, derive_key_context="NOX wallet v1 viewing key").digest()
    check(vk.hex() == v["viewing_secret"], "notes: viewing secret")
    VK = pub(vk)
    check(VK.hex() == v["viewing_public"], "notes: viewing public key")
    check(v["payment_address"] == bech32m_encode("nox", bytes([0]) + owner.to_bytes(32, "big") + VK), "notes: payment address")
    check(address(v["payment_address"]) == (owner, VK), "notes: payment address decoded")
    check(address(v["payment_address"].upper()) == (owner, VK), "notes: upper-case address decoded")
    check(v["viewing_key"] == bech32m_encode("noxview", bytes([0]) + vk + owner.to_bytes(32, "big")), "notes: viewing key string")
    for r in v["refused_addresses"]:
        check(address(r["input"]) == r["error"], f"notes: refused address {r['name']}: {address(r['input'])!r} != {r['error']}")
    note = v["note"]
    inner = poseidon(owner, w(note["blinding"]))
    check(inner == w(v["inner"]), "notes: inner")
    commitment = poseidon(int(note["value"]), w(note["asset"]), inner)
    check(commitment == w(v["commitment"]), "notes: commitment")
    check(poseidon(sk, commitment, v["leaf_index"]) == w(v["nullifier"]), "notes: nullifier")
    # Section 4: every ciphertext rebuilt from its ephemeral secret and the recipient's address.
    for c in v["ciphertexts"]:
        to_owner, to_vk = address(c["to"])
        e = bytes.fromhex(c["ephemeral_secret"])
        E = pub(e)
        shared = dh(e, to_vk)
        okm = kdf("NOX note v2", shared + E + to_vk, 40)
        aad = bytes.fromhex(c["asset"]) + to_owner.to_bytes(32, "big")
        plain = int(c["value"]).to_bytes(16, "big") + bytes.fromhex(c["blinding"])
        ct = E + okm[:8] + ChaCha20Poly1305(okm[8:]).encrypt(bytes(12), plain, aad)
        got = {"ephemeral_public": E, "shared_secret": shared, "view_tag": okm[:8], "key": okm[8:], "aad": aad, "ciphertext": ct}
        for k, x in got.items():
            check(x.hex() == c[k], f"notes: ciphertext {c['name']}: {k}")
        cm = poseidon(int(c["value"]), w(c["asset"]), poseidon(to_owner, w(c["blinding"])))
        check(cm == w(c["commitment"]), f"notes: ciphertext {c['name']}: commitment")
    # Section 5: what the wallet of `seed` makes of each ciphertext (scanning, in order).
    for s in v["scans"]:
        ct, asset = bytes.fromhex(s["ciphertext"]), bytes.fromhex(s["asset"])
        result = "not_mine"
        shared = dh(vk, ct[:32]) if len(ct) == 104 else None
        okm = kdf("NOX note v2", shared + ct[:32] + VK, 40) if shared else None
        if okm and okm[:8] == ct[32:40]:
            try:
                plain = ChaCha20Poly1305(okm[8:]).decrypt(bytes(12), ct[40:], asset + owner.to_bytes(32, "big"))
                value, blinding = int.from_bytes(plain[:16], "big"), int.from_bytes(plain[16:], "big")
                ok = blinding < BN254_R and poseidon(value, int.from_bytes(asset, "big"), poseidon(owner, blinding)) == w(s["commitment"])
                result = "mine" if ok else "corrupt"
                if ok:
                    check(str(value) == s["value"] and blinding == w(s["blinding"]), f"notes: scan {s['name']}: value")
            except InvalidTag:
                result = "corrupt"
        check(result == s["result"], f"notes: scan {s['name']}: {result} != {s['result']}")


# ---------------------------------------------------------------- streams
RESET_CODES = {1, 2, 3, 4, 5, 6, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15}


def stream_decode(m):
    """streams.md section 2: the list of (type, fields) frames, or None if refused."""
    if len(m) < 17 or m[0] != 1:
        return None
    at, last, frames = 17, 0, []

    def take(n):
        nonlocal at
        if at + n > len(m):
            raise ValueError("truncated")
        at += n
        return m[at - n : at]

    le = lambda b: int.from_bytes(b, "little")  # noqa: E731
    try:
        while at < len(m):
            t = take(1)[0]
            if t <= last:
                return None
            last = t
            if t == 1:
                port, host = le(take(2)), take(take(1)[0])
                if port == 0 or not host or any(c < 0x21 or c > 0x7E or c in b"/@?#" for c in host):
                    return None
                frames.append((t, port, host))
            elif t == 2:
                frames.append((t,))
            elif t == 3:
                seq, count = le(take(4)), le(take(2))
                if seq == 0:
                    return None
                frames.append((t, seq, count))
            elif t == 4:
                frames.append((t, le(take(2)), le(take(4))))
            elif t == 5:
                frames.append((t, le(take(8)), le(take(8))))
            elif t == 6:
                offset, n = le(take(8)), le(take(4))
                if not 1 <= n <= 8 << 20:
                    return None
                data = take(n)
                if offset + n >= 2**64:
                    return None
                frames.append((t, offset, data))
            elif t == 7:
                fin = le(take(8))
                data = [f for f in frames if f[0] == 6]
                if data and data[0][1] + len(data[0][2]) > fin:
                    return None
                frames.append((t, fin))
            elif t == 8:
                code = take(1)[0]
                if code not in RESET_CODES:
                    return None
                frames.append((t, code))
            else:
                return None
    except ValueError:
        return None
    return frames


def stream_encode(stream_id, frames):
    out = bytes([1]) + stream_id
    for f in frames:
        t = f[0]
        out += bytes([t])
        if t == 1:
            out += f[1].to_bytes(2, "little") + bytes([len(f[2])]) + f[2]
        elif t == 3:
            out += f[1].to_bytes(4, "little") + f[2].to_bytes(2, "little")
        elif t == 4:
            out += f[1].to_bytes(2, "little") + f[2].to_bytes(4, "little")
        elif t == 5:
            out += f[1].to_bytes(8, "little") + f[2].to_bytes(8, "little")
        elif t == 6:
            out += f[1].to_bytes(8, "little") + len(f[2]).to_bytes(4, "little") + f[2]
        elif t == 7:
            out += f[1].to_bytes(8, "little")
        elif t == 8:
            out += bytes([f[1]])
    return out


def check_streams():
    v = json.loads((VECTORS / "streams.json").read_text())
    for case in v["valid"]:
        m = bytes.fromhex(case["encoded"])
        frames = stream_decode(m)
        check(frames is not None, f"stream {case['name']}: refused")
        if frames is not None:
            check(stream_encode(m[1:17], frames) == m, f"stream {case['name']}: re-encoding")
    for case in v["invalid"]:
        check(stream_decode(bytes.fromhex(case["encoded"])) is None, f"stream {case['name']}: accepted")
    return len(v["valid"]) + len(v["invalid"])


# ---------------------------------------------------------- replay journal
def journal_read(f):
    """replay-cache.md section 3: the reader's verdict, as in the vectors."""
    if len(f) < 32:
        return {"error": "TruncatedHeader"}
    if f[:8] != b"NOXRPLJ1":
        return {"error": "BadMagic"}
    if kdf("NOX replay journal v1 header", f[:16], 32)[:16] != f[16:32]:
        return {"error": "HeaderChecksumMismatch"}
    version, epoch = int.from_bytes(f[8:10], "little"), int.from_bytes(f[12:16], "little")
    if version not in (1, 2) or f[10:12] != bytes(2):
        return {"error": f"UnsupportedVersion({version})"}
    e = epoch.to_bytes(4, "little")
    first_bad, durable, intact_after_bad, tags, valid = None, 32, None, [], 0
    for off in range(32, len(f), 40):
        slot = f[off : off + 40]
        kind = "bad"
        if len(slot) == 40:
            if kdf("NOX replay journal v1 record", e + slot[:32], 32)[:8] == slot[32:]:
                kind = "record"
            elif (version == 2 and slot[8:32] == bytes(24)
                  and kdf("NOX replay journal v2 commit", e + slot[:32], 32)[:8] == slot[32:]):
                kind = "commit"
                durable = max(durable, int.from_bytes(slot[:8], "little"))
        if first_bad is None:
            if kind == "bad":
                first_bad = off
            else:
                valid += 40
                if kind == "record":
                    tags.append(slot[:32].hex())
        elif kind == "record":
            intact_after_bad = off + 40
    if first_bad is not None:
        lost = (intact_after_bad or 0) if version == 1 else durable
        if lost > first_bad:
            return {"durable_len": lost, "error": "Damaged", "offset": first_bad}
    return {"ok": {"discarded_bytes": len(f) - 32 - valid, "durable_len": min(durable, 32 + valid),
                   "epoch": epoch, "tags": tags, "valid_len": 32 + valid, "version": version}}


def check_journal():
    v = json.loads((VECTORS / "replay-journal.json").read_text())
    e = v["epoch"].to_bytes(4, "little")
    for version, field in ((1, "header_v1"), (2, "header_v2")):
        head = b"NOXRPLJ1" + version.to_bytes(2, "little") + bytes(2) + e
        head += kdf("NOX replay journal v1 header", head, 32)[:16]
        check(head.hex() == v[field], f"journal: {field}")
    tag0 = bytes(range(32))
    rec = tag0 + kdf("NOX replay journal v1 record", e + tag0, 32)[:8]
    check(rec.hex() == v["record_tag_0"], "journal: record slot")
    body = (112).to_bytes(8, "little") + bytes(24)
    commit = body + kdf("NOX replay journal v2 commit", e + body, 32)[:8]
    check(commit.hex() == v["commit_durable_len_112"], "journal: commit slot")
    for case in v["cases"]:
        got = journal_read(bytes.fromhex(case["file"]))
        check(got == case["verdict"], f"journal {case['name']}: got {got}")
    return len(v["cases"])


# ---------------------------------------------------------------- topology
def topology_address(text):
    """topology.md section 3.1: 0x04 ‖ ipv4 ‖ LE16(port) or 0x06 ‖ ipv6 ‖ LE16(port)."""
    import ipaddress

    host, port = text.rsplit(":", 1)
    ip = ipaddress.ip_address(host.strip("[]"))
    return bytes([4 if ip.version == 4 else 6]) + ip.packed + int(port).to_bytes(2, "little")


def topology_descriptor(n):
    """topology.md section 3.1 (ristretto255 Sphinx keys: the 32 bytes alone; the optional
    WebSocket endpoint as 0x57 ‖ address after the keys)."""
    out = bytes.fromhex(n["identity_key"]) + bytes.fromhex(n["link_key"]) + topology_address(n["address"])
    out += bytes([n["layer"], n["pow_difficulty"]]) + len(n["sphinx_keys"]).to_bytes(4, "little")
    for k in n["sphinx_keys"]:
        check("scheme" not in k, "topology: only ristretto255 keys in the vectors")
        out += k["epoch"].to_bytes(4, "little") + bytes.fromhex(k["key"])
    if "websocket" in n:
        out += b"\x57" + topology_address(n["websocket"])
    return out


def check_topology():
    """topology.md sections 2-4: ids, layers, keys, encodings, signatures, fingerprint."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    def ed_pub(secret):
        key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(secret)).public_key()
        return key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def ed_ok(pub, sig, msg):
        try:
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(pub)).verify(bytes.fromhex(sig), msg)
            return True
        except Exception:  # InvalidSignature
            return False

    v = json.loads((VECTORS / "topology.json").read_text())
    d = v["document"]
    g = dict(v["geometry"], blinding="additive")
    check(geometry_id(g).hex() == v["geometry"]["identifier"] == d["geometry"], "topology: geometry identifier")
    check(ed_pub(v["authority_secret"]) == v["authority_key"], "topology: authority key")
    L = d["layers"]
    for n, dn in zip(v["nodes"], d["nodes"]):
        tag = f"topology node {n['node_id'][:8]}"
        check(ed_pub(n["identity_secret"]) == n["identity_key"] == dn["identity_key"], tag + ": identity key")
        link = X25519PrivateKey.from_private_bytes(bytes.fromhex(n["link_secret"])).public_key()
        check(link.public_bytes_raw().hex() == n["link_key"] == dn["link_key"], tag + ": link key")
        node_id = kdf("NOX topology v1 node id", bytes.fromhex(n["identity_key"]), 32)
        check(node_id.hex() == n["node_id"] == dn["node_id"], tag + ": node id")
        layer = int.from_bytes(kdf("NOX topology v1 layer", node_id, 32)[:8], "little") % L
        check(layer == n["layer"] == dn["layer"], tag + ": layer")
        for sec, k in zip(n["sphinx_secrets"], dn["sphinx_keys"]):
            pub = ristretto.encode(ristretto.mul(scalar(sec["secret"]), ristretto.B))
            check(sec["epoch"] == k["epoch"] and pub.hex() == k["key"], tag + ": Sphinx key")
        enc = topology_descriptor(dn)
        check(enc.hex() == n["descriptor_encoding"], tag + ": descriptor encoding")
        msg = kdf("NOX topology v1 descriptor", enc, 32)
        check(msg.hex() == n["descriptor_message"], tag + ": descriptor message")
        check(n["descriptor_signature"] == dn["signature"], tag + ": signature in the document")
        check(ed_ok(n["identity_key"], dn["signature"], msg), tag + ": self-signature verifies")
    s = d["schedule"]
    params = d["version"].to_bytes(2, "little") + bytes.fromhex(d["geometry"])
    params += s["genesis_unix"].to_bytes(8, "little") + s["epoch_length_secs"].to_bytes(8, "little")
    params += s["overlap_secs"].to_bytes(8, "little") + s["publish_ahead"].to_bytes(4, "little") + bytes([L])
    nodes = sorted(d["nodes"], key=lambda n: bytes.fromhex(n["node_id"]))
    body = params + d["issued_at"].to_bytes(8, "little") + len(nodes).to_bytes(4, "little")
    fp = params + len(nodes).to_bytes(4, "little")
    for n in nodes:
        enc = topology_descriptor(n)
        body += len(enc).to_bytes(4, "little") + enc + bytes.fromhex(n["signature"])
        fp += len(enc).to_bytes(4, "little") + enc
    check(len(params) == 63, "topology: params are 63 bytes")
    check(body.hex() == v["body_encoding"], "topology: body encoding")
    msg = kdf("NOX topology v1 document", body, 32)
    check(msg.hex() == v["document_message"], "topology: document message")
    check(v["signature"] == d["signature"] and ed_ok(v["authority_key"], d["signature"], msg), "topology: signature")
    check(kdf("NOX topology v1 fingerprint", fp, 32).hex() == v["fingerprint"], "topology: fingerprint")
    check(0 <= v["verify_at"] - d["issued_at"] <= 2 * 3600, "topology: verify_at within the default max_age")
    return len(nodes)


# ---------------------------------------------------------------- messages
TCHAR = set(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Refused(Exception):
    pass


class MsgReader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        if self.at + n > len(self.data):
            raise Refused("Truncated")
        self.at += n
        return self.data[self.at - n : self.at]

    def le(self, n):
        return int.from_bytes(self.take(n), "little")

    def string(self, lo, hi):
        n = self.le(2)
        if n > hi:
            raise Refused("FieldTooLong")
        if n < lo:
            raise Refused("InvalidField")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("InvalidField") from None


def http_headers_and_body(r):
    """messages.md section 2.2 / 3: headers, then a body that ends the input exactly."""
    n = r.le(2)
    if n > 64:
        raise Refused("FieldTooLong")
    headers = []
    for _ in range(n):
        name, value = r.string(1, 256), r.string(0, 8192)
        if any(c not in TCHAR for c in name.encode()) or any(c in "\r\n\0" for c in value):
            raise Refused("InvalidField")
        headers.append([name, value])
    body = r.take(r.le(4))
    if r.at != len(r.data):
        raise Refused("TrailingBytes")
    return headers, body.hex()


def decode_request(data, tag, surb_len):
    """messages.md section 2, in the order of its "Decoding order" paragraph."""
    r = MsgReader(data)
    if r.take(1)[0] != 1:
        raise Refused("UnknownVersion")
    kind = r.take(1)[0]
    n = r.take(1)[0]
    area = r.take(n * surb_len)
    surbs = [area[i * surb_len : (i + 1) * surb_len] for i in range(n)]
    if any(sb[64:68] != tag for sb in surbs):
        raise Refused("Sphinx")
    rest = data[r.at :]
    if kind == 1:
        body = {"echo": rest.hex()}
    elif kind == 2:
        method = r.string(1, 16)
        if any(c not in TCHAR or chr(c).islower() for c in method.encode()):
            raise Refused("InvalidField")
        url = r.string(1, 8192)
        headers, hbody = http_headers_and_body(r)
        body = {"http": {"body": hbody, "headers": headers, "method": method, "url": url}}
    elif kind in (3, 4, 5):
        if not rest:
            raise Refused("InvalidField")
        body = {{3: "json_rpc", 4: "relay", 5: "stream"}[kind]: rest.hex()}
    else:
        raise Refused("UnknownKind")
    return kind, [sb.hex() for sb in surbs], body


def decode_response(data):
    r = MsgReader(data)
    if r.take(1)[0] != 1:
        raise Refused("UnknownVersion")
    status = r.take(1)[0]
    if status > 8:
        raise Refused("UnknownStatus")
    body = data[2:]
    if status != 0:
        if len(body) > 1024:
            raise Refused("FieldTooLong")
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("InvalidField") from None
    return status, body


def check_messages():
    v = json.loads((VECTORS / "messages.json").read_text())
    g = dict(v["geometry"], blinding="additive")
    check(geometry_id(g)[:4].hex() == g["tag"], "messages: geometry tag")
    tag = bytes.fromhex(g["tag"])
    check(g["surb_len"] == 64 + 8 + 32 + 64 * g["hops"] + 16 + 8, "messages: surb_len")

    def run(f, *args):
        try:
            return f(*args)
        except Refused as e:
            return str(e)

    for c in v["requests"]:
        got = run(decode_request, bytes.fromhex(c["encoded"]), tag, g["surb_len"])
        check(got == (c["kind"], c["surbs"], c["body"]), f"request {c['name']}: got {str(got)[:200]}")
    for c in v["responses"]:
        got = run(decode_response, bytes.fromhex(c["encoded"]))
        check(got == (c["status"], bytes.fromhex(c["body"])), f"response {c['name']}: got {got}")
        if "http" in c:
            r = MsgReader(bytes.fromhex(c["body"]))
            status = r.le(2)
            headers, body = http_headers_and_body(r)
            want = c["http"]
            check((status, headers, body) == (want["status"], want["headers"], want["body"]),
                  f"response {c['name']}: http body")
    for c in v["invalid_requests"]:
        got = run(decode_request, bytes.fromhex(c["encoded"]), tag, g["surb_len"])
        check(got == c["error"], f"invalid request {c['name']}: got {got if isinstance(got, str) else 'accepted'}")
    for c in v["invalid_responses"]:
        got = run(decode_response, bytes.fromhex(c["encoded"]))
        check(got == c["error"], f"invalid response {c['name']}: got {got if isinstance(got, str) else 'accepted'}")
    return sum(len(v[k]) for k in ("requests", "responses", "invalid_requests", "invalid_responses"))


# ------------------------------------------------- Sphinx on x25519-kem (section 13)
def x25519(k, u):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

    return X25519PrivateKey.from_private_bytes(k).exchange(X25519PublicKey.from_public_bytes(u))


def x25519_base(k):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return X25519PrivateKey.from_private_bytes(k).public_key().public_bytes_raw()


class KemScheme:
    """Section 13.3: a node's keys from its 32-byte secret, Encaps with 64 bytes, Decaps."""

    def __init__(self, name):
        self.name = name
        self.label = {"x25519-kem": b"kem=x25519|", "mlkem768": b"kem=mlkem768|", "xwing": b"kem=xwing-06|"}[name]
        self.ct_len = {"x25519-kem": 32, "mlkem768": 1088, "xwing": 1120}[name]

    def keys(self, seed):
        """(public key, decapsulation key)."""
        if self.name == "x25519-kem":
            return x25519_base(seed), seed
        if self.name == "mlkem768":
            dz = kdf("NOX sphinx v1 ml-kem-768 key seed", seed, 64)
            return mlkem.keygen(dz[:32], dz[32:])
        return mlkem.xwing_keygen(seed)

    def encaps(self, pk, r):
        """(ciphertext, shared secret)."""
        if self.name == "x25519-kem":
            return x25519_base(r[:32]), x25519(r[:32], pk)
        if self.name == "mlkem768":
            k, c = mlkem.encaps(pk, r[:32])
            return c, k
        ss, ct = mlkem.xwing_encaps(pk, r)
        return ct, ss

    def decaps(self, dk, ct):
        if self.name == "x25519-kem":
            return x25519(dk, ct)
        if self.name == "mlkem768":
            return mlkem.decaps(dk, ct)
        return mlkem.xwing_decaps(dk, ct)


def kem_build_header(scheme, g, epoch, nodes, last, rng):
    """Section 13.4 construction with the scheme's encapsulation (13.3)."""
    H, n, C = g["hops"], len(nodes), scheme.ct_len
    D, R = 64 + C, 64 * g["hops"] + (g["hops"] - 1) * C
    prefix = bytes.fromhex(g["tag"]) + be32(epoch)
    cts, keys = [], []
    for node in nodes:
        r = rng.take(64)
        ct, s = scheme.encaps(bytes.fromhex(node["public_key"]), r)
        okm = kdf("NOX sphinx v1 hop key schedule", ct + s, 128)
        cts.append(ct)
        keys.append((okm[:16], okm[16:48], okm[48:64]))
    streams = [stream(k[0], R + D) for k in keys]
    filler = b""
    for i in range(1, n):
        filler = xor(filler + bytes(D), streams[i - 1][R + D - D * i : R + D])
    plain = last + rng.take(R - D * (n - 1) - 64)
    beta = xor(plain, streams[n - 1][: R - D * (n - 1)]) + filler
    for i in range(n - 1, -1, -1):
        gamma = prf(keys[i][1], prefix + beta)[:16]
        partial = prefix + cts[i] + beta + gamma
        tag = kdf("NOX sphinx v1 replay tag", partial, 32)
        nonce = first_nonce(tag, nodes[i]["pow_difficulty"])
        header = partial + nonce
        if i > 0:
            fwd = block(1, nodes[i - 1]["delay_us"], bytes.fromhex(nodes[i]["id"]), gamma, nonce)
            beta = xor(fwd + cts[i] + beta[: R - D], streams[i - 1][:R])
    return header, [k[2] for k in keys]


def kem_trace(scheme, name, g, hops, packet, last_kind, dks):
    """Section 13.4 processing; checks every committed per-hop value."""
    C, hl = scheme.ct_len, g["header_len"]
    D, R = 64 + C, 64 * g["hops"] + (g["hops"] - 1) * C
    digest = lambda b: blake3.blake3(b).hexdigest()  # noqa: E731
    for i, hop in enumerate(hops):
        tag = f"{name} hop {i}"
        header, body = packet[:hl], packet[hl:]
        check(digest(header) == hop["header_blake3"] and digest(body) == hop["body_blake3"], tag + ": packet")
        ct, beta, gamma = header[8 : 8 + C], header[8 + C : 8 + C + R], header[8 + C + R : 24 + C + R]
        check(ct.hex() == hop["ciphertext"], tag + ": ciphertext")
        s = scheme.decaps(dks[i], ct)
        check(s.hex() == hop["shared_secret"], tag + ": shared secret")
        okm = kdf("NOX sphinx v1 hop key schedule", ct + s, 128)
        check(okm[:16].hex() == hop["rho"] and okm[16:48].hex() == hop["mu"], tag + ": rho, mu")
        check(prf(okm[16:48], header[:8] + beta)[:16] == gamma, tag + ": gamma")
        check(kdf("NOX sphinx v1 replay tag", header[: 24 + C + R], 32).hex() == hop["replay_tag"], tag + ": replay tag")
        u = xor(beta + bytes(D), stream(okm[:16], R + D))
        check(u[:64].hex() == hop["routing_block"], tag + ": routing block")
        body = body_decrypt(okm[48:64], body)
        kind = decode_block(u[:64])
        if i + 1 < len(hops):
            check(kind == "Forward", tag + ": command")
            packet = header[:8] + u[64:D] + u[D : D + R] + u[40:56] + u[56:64] + body
        else:
            check(kind == last_kind, tag + ": last command")
    return body, u


def kem_ingest(scheme, g, epoch, difficulty, dk, x):
    """Section 5.4 on a KEM geometry (13.4): the first failing check's name, or the outcome."""
    C, hl = scheme.ct_len, g["header_len"]
    D, R = 64 + C, 64 * g["hops"] + (g["hops"] - 1) * C
    if len(x) != g["packet_len"]:
        return "WrongLength"
    if x[:4].hex() != g["tag"]:
        return "WrongGeometry"
    if int.from_bytes(x[4:8], "big") != epoch:
        return "UnknownEpoch"
    tag = kdf("NOX sphinx v1 replay tag", x[: 24 + C + R], 32)
    if work_bits(tag, x[24 + C + R : 32 + C + R]) < difficulty:
        return "InsufficientWork"
    ct, beta = x[8 : 8 + C], x[8 + C : 8 + C + R]
    try:
        s = scheme.decaps(dk, ct)
    except ValueError:  # cryptography refuses an all-zero X25519 result
        s = bytes(32)
    if scheme.name == "x25519-kem" and s == bytes(32):
        return "InvalidEphemeralKey"
    okm = kdf("NOX sphinx v1 hop key schedule", ct + s, 128)
    if prf(okm[16:48], x[:8] + beta)[:16] != x[8 + C + R : 24 + C + R]:
        return "MacMismatch"
    u = xor(beta + bytes(D), stream(okm[:16], R + D))
    kind = decode_block(u[:64])
    if kind in ("MalformedRoutingBlock", "UnknownCommand"):
        return kind
    body = body_decrypt(okm[48:64], x[hl:])
    if kind == "Deliver":
        result = decode_body(body)
        if isinstance(result, str):
            return result
    return kind


def check_sphinx_kem():
    v = json.loads((VECTORS / "sphinx-kem.json").read_text())
    for sv in v["schemes"]:
        scheme = KemScheme(sv["scheme"])
        name, g, epoch, nodes = "kem " + sv["scheme"], sv["geometry"], sv["key_epoch"], sv["nodes"]
        m = scheme.label + b"blake3|aes128ctr|hctr2|" + be32(g["packet_len"]) + be32(g["hops"]) + be32(64) + be32(16)
        gid = kdf("NOX sphinx v1 geometry", m, 32)
        check(gid.hex() == g["identifier"] and gid[:4].hex() == g["tag"], name + ": geometry identifier")
        C = scheme.ct_len
        check(g["header_len"] == 8 + C + 64 * g["hops"] + (g["hops"] - 1) * C + 24, name + ": header length")
        dks = []
        for i, node in enumerate(nodes):
            pk, dk = scheme.keys(bytes.fromhex(node["seed"]))
            check(pk.hex() == node["public_key"], f"{name} node {i}: public key")
            dks.append(dk)
        f = sv["forward"]
        rng = Rng(bytes.fromhex(f["rng_bytes"]))
        header, pis = kem_build_header(scheme, g, epoch, nodes, block(2, nodes[-1]["delay_us"]), rng)
        body = encode_body(bytes.fromhex(f["payload"]), g["packet_len"] - g["header_len"])
        for pi in reversed(pis):
            body = body_encrypt(pi, body)
        check((header + body).hex() == f["packet"] and rng.at == len(rng.data), name + ": packet rebuilt")
        body, _ = kem_trace(scheme, name, g, f["hops"], bytes.fromhex(f["packet"]), "Deliver", dks)
        check(decode_body(body) == bytes.fromhex(f["payload"]), name + ": exit payload")
        s = sv["surb"]
        rng = Rng(bytes.fromhex(s["rng_bytes"]))
        sid = rng.take(16)
        check(sid.hex() == s["surb_id"], name + ": SURB id")
        last = block(3, nodes[-1]["delay_us"], bytes.fromhex(s["recipient"]), sid)
        header, _ = kem_build_header(scheme, g, epoch, nodes, last, rng)
        k_r = rng.take(32)
        surb = bytes.fromhex(nodes[0]["id"]) + k_r + header
        check(blake3.blake3(surb).hexdigest() == s["surb_blake3"] and rng.at == len(rng.data), name + ": SURB")
        body = bytes(16) + bytes.fromhex(s["reply"]) + b"\x80"
        body += bytes(g["packet_len"] - len(header) - len(body))
        reply = header + body_encrypt(reply_body_key(k_r), body)
        check(blake3.blake3(reply).hexdigest() == s["reply_packet_blake3"], name + ": reply packet")
        delivered, u = kem_trace(scheme, name + " surb", g, s["hops"], reply, "Reply", dks)
        check(blake3.blake3(delivered).hexdigest() == s["delivered_body_blake3"], name + ": delivered body")
        check(u[40:56] == sid and u[8:40].hex() == s["recipient"], name + ": DeliverReply block")
        fl = sv["failures"]
        for case in fl["cases"]:
            got = kem_ingest(scheme, g, epoch, fl["pow_difficulty"], dks[fl["node"]], bytes.fromhex(case["input"]))
            check(got == case.get("error", case.get("outcome")), f"{name} failure case {case['name']}: got {got}")
    return [sv["scheme"] for sv in v["schemes"]]


def check_xwing_draft():
    """The draft's own vectors through mlkem.py (FIPS 203 and draft-06 from their texts)."""
    v = json.loads((VECTORS / "xwing-draft06.json").read_text())
    for i, c in enumerate(v):
        pk, dk = mlkem.xwing_keygen(bytes.fromhex(c["seed"]))
        check(pk.hex() == c["pk"], f"xwing draft vector {i}: public key")
        ss, ct = mlkem.xwing_encaps(pk, bytes.fromhex(c["eseed"]))
        check(ct.hex() == c["ct"] and ss.hex() == c["ss"], f"xwing draft vector {i}: encapsulation")
        check(mlkem.xwing_decaps(dk, ct).hex() == c["ss"], f"xwing draft vector {i}: decapsulation")
    return len(v)


# ---------------------------------------------------------------- registry


def h0x(x):
    return bytes.fromhex(x[2:] if x.startswith("0x") else x)


def check_registry():
    """registry.md sections 3.1, 3.2, 4.1, 5.1, 5.3 with Keccak-256 and secp256k1 from evm.py."""
    k = evm.keccak256
    v = json.loads((VECTORS / "registry.json").read_text())
    chain, registry = evm.word(v["chain_id"]), bytes(12) + h0x(v["registry"])
    hashes = []
    for i, n in enumerate(v["nodes"]):
        la = k(n["link_address"].encode())
        if "link_address_hash" in n:
            check(la == h0x(n["link_address_hash"]), f"registry node {i}: link address hash")
        rec = bytes(12) + h0x(n["operator"]) + h0x(n["identity_key"]) + h0x(n["link_key"]) + la
        rec += evm.word(n["role"]) + evm.word(int(n["stake"])) + evm.word(n["unstake_available_at"])
        check(len(rec) == 224 and k(rec) == h0x(n["record_hash"]), f"registry node {i}: record hash")
        hashes.append(k(rec))
    check(k(chain + registry) == h0x(v["fingerprint_empty"]), "registry: empty fingerprint")
    check(k(chain + registry + b"".join(hashes)) == h0x(v["fingerprint_two_nodes"]), "registry: fingerprint")
    e = v["epoch_keys"]
    typehash = k(b"EpochKeys(address operator,uint32 epoch,bytes32 keysHash)")
    check(typehash == h0x(e["typehash"]), "registry: EpochKeys typehash")
    domain = k(b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")
    ds = k(domain + k(b"NOX NodeRegistry") + k(b"1") + chain + registry)
    check(ds == h0x(e["domain_separator"]), "registry: domain separator")
    struct = k(typehash + bytes(12) + h0x(e["operator"]) + evm.word(e["epoch"]) + h0x(e["keys_hash"]))
    digest = k(b"\x19\x01" + ds + struct)
    check(digest == h0x(e["digest"]), "registry: EpochKeys digest")
    key = h0x(e["operator_private_key"])
    check(evm.address(key) == h0x(e["operator"]), "registry: operator address from its key")
    check(evm.ecdsa_ok(key, digest, h0x(e["signature_rsv"])), "registry: EpochKeys signature (low s, v)")
    x = v["execution_hash"]
    raw = k(h0x(x["target"]) + h0x(x["data"]) + evm.word(int(x["fee"])) + evm.word(int(x["gas"])))
    check(raw == h0x(x["raw"]), "registry: execution hash")
    check(int.from_bytes(raw, "big") % BN254_R == int(x["field"], 16), "registry: execution hash mod r")
    payment = b"Payment(address payer,address asset,uint256 fee,address relayer,bytes32 actionHash,uint256 nonce,uint256 deadline)"
    check(k(payment) == h0x(v["payment_typehash"]), "registry: Payment typehash")


# ------------------------------------------------------------------- relay
EXECUTE = b"execute((address,bytes,address,uint256,(address,uint256,uint256,bytes)))"


def relay_decode(body):
    """relay.md section 2: ("quote",) or ("submit", fields), or None (refused: malformed)."""
    if body == b"\x01":
        return ("quote",)
    if len(body) < 50 or body[0] != 2 or body[1] & ~3:
        return None
    calldata = body[50:]
    if len(calldata) > 32768 or calldata[:4] != evm.keccak256(EXECUTE)[:4]:
        return None
    bundle = evm.decode_bundle(calldata[4:])
    if bundle is None or evm.encode_bundle(*bundle) != calldata[4:]:
        return None
    return ("submit", body[1], int.from_bytes(body[2:10], "big"), body[10:30], body[30:50], calldata, bundle)


def ceil_div(a, b):
    return -(-a // b)


def check_relay():
    """relay.md sections 2, 3 and 5 (fee plan, gas limit, required fee, token price)."""
    v = json.loads((VECTORS / "relay.json").read_text())
    for c in v["valid"]:
        got = relay_decode(bytes.fromhex(c["body"]))
        check(got is not None, f"relay {c['name']}: refused")
        if got and got[0] == "submit":
            _, flags, chain, executor, relayer, calldata, bundle = got
            b = c["bundle"]
            want = (c["flags"], c["chain_id"], h0x(c["executor"]), h0x(c["relayer"]), h0x(c["calldata"]))
            check((flags, chain, executor, relayer, calldata) == want, f"relay {c['name']}: header fields")
            wb = (h0x(b["payment"]), h0x(b["payment_data"]), h0x(b["asset"]), int(b["fee"], 16), h0x(b["target"]),
                  int(b["value"], 16), int(b["gas"], 16), h0x(b["data"]))
            check(bundle == wb, f"relay {c['name']}: bundle")
    for c in v["invalid"]:
        check(relay_decode(bytes.fromhex(c["body"])) is None, f"relay {c['name']}: accepted")
    p = v["pricing"]
    f = p["fee_plan"]
    max_fee = ceil_div(f["next_base_fee"] * (10000 + f["headroom_bps"]), 10000) + f["priority_fee"]
    check(max_fee == f["max_fee_per_gas"], "relay: fee plan (step 7)")
    for pay, action_gas, extra, limit in p["gas_limit"]:
        want = ceil_div((pay + ceil_div(64 * action_gas, 63)) * (10000 + extra), 10000) + 10000
        check(want == limit, f"relay: L({pay}, {action_gas}) (step 9)")

    def required(gas, fee, margin):
        return ceil_div(gas * fee * (10000 + margin), 10000)

    r = p["required_wei"]
    check(required(r["gas_limit"], r["max_fee_per_gas"], r["margin_bps"]) == int(r["wei"], 16), "relay: required fee (step 11)")
    t = p["token"]
    ra, rw, sell, wei = (int(t[x], 16) for x in ("reserve_asset", "reserve_weth", "sell", "wei"))
    check(sell * 997 * rw // (ra * 1000 + sell * 997) == int(t["value_wei"], 16), "relay: getAmountOut")
    check(ra * wei * 1000 // ((rw - wei) * 997) + 1 == int(t["asset_needed"], 16), "relay: getAmountIn")
    q = v["quote"]
    check(int(q["prices"][0]["per_million_gas"], 16) == required(10**6, int(q["max_fee_per_gas"], 16), q["margin_bps"]),
          "relay: quote price per million gas (section 3)")
    return len(v["valid"]) + len(v["invalid"])


# ---------------------------------------------------------------- ceremony
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


# ------------------------------------------------------- field documentation
def check_field_tables():
    """Every field name of every vectors file appears, in backticks, in that file's section of
    docs/spec/vectors/README.md (sphinx*.json: or in sphinx.md section 12 / 13.7), so a field
    added without its meaning fails here. description, regenerate, spec and name are covered
    by the README's conventions."""
    import re

    readme = (VECTORS / "README.md").read_text()
    sphinx_md = (VECTORS.parent / "sphinx.md").read_text()
    sphinx_md = sphinx_md[sphinx_md.index("## 12.") :]

    def keys(x, out):
        if isinstance(x, dict):
            for k, y in x.items():
                out.add(k)
                keys(y, out)
        elif isinstance(x, list):
            for y in x:
                keys(y, out)
        return out

    files = sorted(VECTORS.glob("*.json"))
    for f in files:
        m = re.search(r"^## " + re.escape(f.name) + r"\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
        check(m is not None, f"vectors/README.md: no section for {f.name}")
        text = (m.group(1) if m else "") + (sphinx_md if f.name.startswith("sphinx") else "")
        spans = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(re.findall(r"`([^`]*)`", text))))
        undocumented = keys(json.loads(f.read_text()), set()) - spans - {"description", "regenerate", "spec", "name"}
        check(not undocumented, f"vectors/README.md: {f.name} fields without a meaning: {sorted(undocumented)}")
    return len(files)


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
