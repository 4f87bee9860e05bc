"""registry.json (registry.md sections 3, 4.1, 5.1, 5.3): record hashes, fingerprints,
EIP-712 digests and the signature (evm.py)."""

import json

import evm

from .common import BN254_R, check, VECTORS


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
