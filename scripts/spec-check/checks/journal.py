"""replay-journal.json (replay-cache.md section 3): slots rebuilt, every file's verdict."""

import json

from .common import check, kdf, VECTORS


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
