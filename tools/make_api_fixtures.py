#!/usr/bin/env python3
"""Reference fixtures for strict JSON decoding, json.dumps layout and float repr.

The reference worker decodes bodies with CPython's json module (json.loads with a duplicate-key
object_pairs_hook and a parse_constant that rejects NaN/Infinity, then a re-serialization
json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")); structured
instructions/labels are json.dumps(value, ensure_ascii=False). This script records what
CPython itself does on many inputs so the C++ parser and writer can be checked against it.

Run with the CPython that the reference uses (3.12; 3.11 behaves the same for these APIs):
    python3 tools/make_api_fixtures.py tests/fixtures/api
Writes decode_cases.json, dumps_cases.json and float_repr_cases.json.
"""

import base64
import json
import math
import random
import struct
import sys
from pathlib import Path

GENERIC = "request body must contain valid JSON and UTF-8 text"


class Malformed(ValueError):
    pass


def _pairs(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise Malformed("duplicate JSON keys are not supported")
        result[key] = value
    return result


def _constant(_):
    raise Malformed("non-finite JSON numbers are not supported")


def reference_decode(raw: bytes):
    """(status, detail) of the reference's decode_request for a body (200 = accepted)."""
    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant)
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except Malformed as exc:
        return 400, str(exc)
    except (ValueError, UnicodeError, RecursionError):
        return 400, GENERIC
    if not isinstance(value, dict):
        return 400, "request must be a JSON object"
    return 200, ""


def decode_bodies(rng):
    bodies = [
        b"not json", b'{"x":1,"x":2}', b'{"x":{"y":1,"y":2}}', b'{"x":NaN}', b'{"x":Infinity}',
        b'{"x":-Infinity}', b'{"x":1e400}', b'{"x":-1e400}', b'{"x":1e-400}', b"[]", b"null",
        b'{"x":"\xff"}', b'{"x":"\\ud800"}', b'{"\\ud800":1}', b'{"x":"\\udc00\\ud800"}',
        b'{"x":"\\ud83d\\ude00"}', b'{"x":"\\ud83d\\u0041"}', b"[" * 2000, b"{}".decode().encode("utf-16"),
        b"\xef\xbb\xbf{}", b"{}", b" \t\r\n{} \n", b"{} x", b"{}{}", b'{"a":1,}', b'{"a":[1,]}',
        b'{"a":01}', b'{"a":-}', b'{"a":1.}', b'{"a":.5}', b'{"a":1e}', b'{"a":1e+}', b'{"a":-0}',
        b'{"a":"\\x"}', b'{"a":"\\u12"}', b'{"a":"\\u12G4"}', b'{"a":"tab\there"}', b'{"a":"\x01"}',
        b'{"a":"\x7f"}', b'{"a":tru}', b'{"a":nul}', b'{"a":True}', b"{'a':1}", b'{"a" 1}',
        b'{"a":1 "b":2}', b'{"a":"\xed\xa0\x80"}', b'{"a":"\xc0\x80"}', b'{"a":"\xf4\x90\x80\x80"}',
        b'{"a":"\xe2\x82"}', b"", b" ", b'{"a":' + b"1" * 4300 + b"}", b'{"a":' + b"1" * 4301 + b"}",
        b'{"a":-' + b"1" * 4301 + b"}", b'{"a":1.5e308}', b'{"a":1.8e308}', b'{"a":[NaN]}',
        b'{"a":1,"a":NaN}', b'{"a":{"b":1,"b":2},"c":NaN}', b'{"a":"\\ud800","a":1}',
        b'{"a":' + b"[" * 899 + b"]" * 899 + b"}",
        b'{"a":' + b"{\"b\":" * 300 + b"1" + b"}" * 300 + b"}", b'{"a":"\\/"}', b'{"\x00":1}',
        b'{"a":"\xf0\x9f\x98\x80"}', b'{"a":[1,2,3],"b":{"c":null,"d":true,"e":false}}',
        b'{"a":1}\x00', b'\x00{"a":1}', b'{"a":1}\n\n', b'{"a":"\\u0000"}', b'{"a":-0.0}',
    ]
    # Duplicates among many keys (hash path) and at depth.
    many = ",".join(f'"k{i}":{i}' for i in range(100))
    bodies.append(("{" + many + "}").encode())
    bodies.append(("{" + many + ',"k57":0}').encode())
    bodies.append(b'{"q":[{"a":1},{"b":{"c":{"d":1,"d":1}}}]}')
    # Random mutations of a valid request-like body.
    seed = json.dumps({"model": "cua-s1-4b-0.2", "state": {"image": "data:image/png;base64,AAAA"},
                       "questions": {"q": {"type": "choice", "instructions": "Go \u00e9 \u4e2d",
                                           "criteria": {"a": "x", "b": None, "c": [1, 2.5]}}}},
                      ensure_ascii=False).encode()
    for _ in range(400):
        body = bytearray(seed)
        for _ in range(rng.randint(1, 3)):
            op = rng.randint(0, 2)
            pos = rng.randrange(len(body))
            if op == 0:
                body[pos] = rng.randrange(256)
            elif op == 1:
                del body[pos]
            else:
                body.insert(pos, rng.choice(b'{}[]",:\\ 0e-.nNtI\x00\xff\xc3'))
        bodies.append(bytes(body))
    return bodies


def random_string(rng):
    pools = ["abc XYZ", "\"\\/\b\f\n\r\t", "".join(map(chr, range(0, 32))) + "\x7f",
             "\u00e9\u4e2d\u6587\U0001f600\u0301\u200d\ufeff\u2028\u2029", "<|im_end|>{}[]:,"]
    pool = rng.choice(pools)
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 12)))


def random_number(rng):
    kind = rng.randint(0, 5)
    if kind == 0:
        return rng.randint(-10**6, 10**6)
    if kind == 1:
        return rng.randint(-10**40, 10**40)
    if kind == 2:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
    if kind == 3:
        while True:
            value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isfinite(value):
                return value
    if kind == 4:
        return rng.choice([0.0, -0.0, 1.0, 0.1, 1e16, 1e15, 1e-4, 1e-5, 123456789012345678.0, 5e-324])
    return float(rng.randint(-1000, 1000)) / rng.choice([1, 3, 7, 1024])


def random_value(rng, depth=0):
    kind = rng.randint(0, 6 if depth < 4 else 3)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return random_number(rng)
    if kind in (2, 3):
        return random_string(rng)
    if kind == 4:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    result = {}
    for _ in range(rng.randint(0, 4)):
        result[random_string(rng)] = random_value(rng, depth + 1)
    return result


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261202)

    decode = []
    for body in decode_bodies(rng):
        status, detail = reference_decode(body)
        decode.append({"body_base64": base64.b64encode(body).decode(), "status": status,
                       "detail": detail})
    (out / "decode_cases.json").write_text(json.dumps(decode, indent=0) + "\n")

    dumps = []
    for i in range(600):
        value = random_value(rng)
        # Bodies in several spellings (escaped or raw non-ASCII, spacing) must all dump the same.
        body = json.dumps({"v": value}, ensure_ascii=bool(i % 2), indent=(None if i % 3 else 1))
        dumps.append({"body": body, "dumps": json.dumps(json.loads(body)["v"], ensure_ascii=False),
                      "escaped_string_body": (json.dumps(value, ensure_ascii=False)[1:-1]
                                              if isinstance(value, str) else None)})
    (out / "dumps_cases.json").write_text(json.dumps(dumps, ensure_ascii=False, indent=0) + "\n")

    floats = []
    for _ in range(3000):
        value = random_number(rng)
        if isinstance(value, int):
            value = float(value)
        floats.append({"bits": "%016x" % struct.unpack("<Q", struct.pack("<d", value))[0],
                       "repr": repr(value)})
    (out / "float_repr_cases.json").write_text(json.dumps(floats, indent=0) + "\n")
    print(f"{len(decode)} decode, {len(dumps)} dumps, {len(floats)} float cases -> {out}")


if __name__ == "__main__":
    main()
