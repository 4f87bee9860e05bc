"""topology.json (topology.md sections 2-4): ids, keys, encodings, signatures, fingerprint."""

import json

import ristretto

from .common import check, kdf, VECTORS
from .sphinx import geometry_id, scalar


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
