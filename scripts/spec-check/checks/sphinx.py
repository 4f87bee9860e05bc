"""sphinx.json (sphinx.md): geometry identifiers, packets and SURBs rebuilt from rng_bytes and
traced hop by hop, the key schedule vector, the PoW search, every failure case (section 5.4)."""

import json

import blake3

import ristretto

from .common import be32, check, ELL, kdf, prf, stream, VECTORS, xor
from .hctr2 import body_decrypt, body_encrypt, reply_body_key


def geometry_id(g):
    label = b"blind=add" if g["blinding"] == "additive" else b"blind=mul"
    m = b"ristretto255|blake3|aes128ctr|hctr2|" + label
    m += be32(g["packet_len"]) + be32(g["hops"]) + be32(64) + be32(16)
    return kdf("NOX sphinx v1 geometry", m, 32)


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
    return routed_outcome(u, okm[48:64], x[hl:])


def routed_outcome(u, body_key, body):
    """After the MAC (and the replay record): the routing block's verdict, then the body's for
    a delivery. Shared by the classical and the KEM hop."""
    kind = decode_block(u[:64])
    if kind in ("MalformedRoutingBlock", "UnknownCommand"):
        return kind
    plain = body_decrypt(body_key, body)
    if kind == "Deliver":
        result = decode_body(plain)
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
