"""streams.json (streams.md section 2): messages decoded, re-encoded or refused."""

import json

from .common import check, VECTORS


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
