"""sphinx-kem.json (sphinx.md section 13) for x25519-kem, mlkem768 and xwing, and
xwing-draft06.json through mlkem.py."""

import json

import blake3

import mlkem

from .common import be32, check, kdf, prf, stream, VECTORS, xor
from .hctr2 import body_decrypt, body_encrypt, reply_body_key
from .sphinx import block, decode_block, decode_body, encode_body, first_nonce, Rng, routed_outcome, work_bits


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
    return routed_outcome(u, okm[48:64], x[hl:])


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
