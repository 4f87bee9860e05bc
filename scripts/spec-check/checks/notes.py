"""notes.json (notes.md sections 1-5): Poseidon with circom's parameters, bech32m, keys,
addresses, note ciphertexts, scans, commitments and the nullifier."""

import json

import blake3

from .common import BN254_R, check, kdf, VECTORS


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
