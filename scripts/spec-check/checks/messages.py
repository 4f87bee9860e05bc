"""messages.json (messages.md sections 1-3): requests and responses decoded or refused."""

import json

from .common import check, VECTORS
from .sphinx import geometry_id


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
