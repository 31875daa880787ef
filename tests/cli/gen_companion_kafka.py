#!/usr/bin/env python3
"""Writes the input files of test_inspect_companion.sh into DIR.

Companion files are built here with zlib, json and base64 (an implementation
independent of tarn's); Kafka payloads with kafka-python's record builders
(python3-kafka) when it is installed, else with the layouts coded below."""
import base64, gzip, json, struct, sys, zlib

d = sys.argv[1]

def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def meta(offset, count, ts, size, cum, extra=b""):
    h = (b"\x08" + varint(offset) + b"\x10" + varint(count) + b"\x18" + varint(ts) +
         b"\x20" + varint(size) + b"\x28" + varint(cum))
    return extra + b"\x12" + varint(len(h)) + h

def row(offset, count, ts, size, cum):
    return {"metadata": base64.b64encode(meta(offset, count, ts, size, cum)).decode(),
            "offset": str(offset)}

def block(obj):
    s = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">i", len(s)) + s

def stream(blocks, mapping):
    return b"".join(block(b) for b in blocks) + struct.pack(">I", 0x7FFFFFFF) + block(mapping)

def put(name, data):
    with open(f"{d}/{name}", "wb") as f:
        f.write(data)

T = 1700000000000
# §4.8: the companion of 7-0.parquet.
ex = stream([[row(0, 2, T, 5, 5), row(2, 1, T, 3, 8)]], {"0": 0, "2": 1})
assert len(ex) == 132
put("example.stream", ex)
put("example.index", gzip.compress(ex))
# Keys 9 and 10, the map in HashMap-like order: numeric floor of 95 is row 1.
put("nine_ten.index", gzip.compress(stream([[row(9, 1, T, 1, 1), row(10, 100, T, 1, 2)]],
                                            {"10": 1, "9": 0})))
# 4 rows in blocks of 2: the last block is empty ("[]").
rows = [row(2 * i, 2, T + i, 10, 10 * (i + 1)) for i in range(4)]
put("empty_last.index", gzip.compress(stream([rows[:2], rows[2:], []],
                                              {r["offset"]: i for i, r in enumerate(rows)})))
# Refusals.
put("bad_offset.index", gzip.compress(stream([[dict(row(0, 2, T, 5, 5), offset="00")]], {"0": 0})))
put("bad_map.index", gzip.compress(stream([[row(0, 2, T, 5, 5)]], {"0": 1})))
put("empty_middle.index", gzip.compress(stream([[], [row(0, 2, T, 5, 5)]], {"0": 0})))
put("truncated.index", gzip.compress(ex)[:-9])
put("not_gzip.index", ex)
put("trailing.stream", ex + b"\0")

# ---- Kafka payloads ------------------------------------------------------------
try:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    have_kafka = True
except ImportError:
    have_kafka = False

def v2(n, codec=0, transactional=False):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=7 if transactional else -1,
                                  producer_epoch=0 if transactional else -1,
                                  base_sequence=0 if transactional else -1, batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=T + i, key=None, value=b"value-%d" % i, headers=[])
    return bytes(b.build())

def legacy(magic, n, codec=0):
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=T + i, key=None, value=b"value-%d" % i)
    return bytes(b.build())

if have_kafka:
    put("v2.kafka", v2(3) + v2(1) + v2(5, codec=1))
    put("legacy.kafka", legacy(0, 1) + legacy(1, 1) + legacy(1, 3, codec=1) +
        legacy(1, 4, codec=2) + legacy(1, 2, codec=3) + v2(2))
    put("transactional.kafka", v2(2, transactional=True))
    bad = bytearray(v2(3))
    bad[-1] ^= 1
    put("badcrc.kafka", bytes(bad))
    put("truncated.kafka", v2(3)[:-1])
    open(f"{d}/have_kafka", "w").close()
