#!/usr/bin/env python3
"""Writes one Kafka v2 record batch (base offset 0) to stdout, built from
Kafka's published layout with a CRC32C of its own (not tarn's):
gen_kafka_batch.py CODEC KEY=VALUE[;H=V,...] ...   (CODEC: none or gzip)."""
import gzip, struct, sys

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def varint(v):
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(b):
    return varint(-1) if b is None else varint(len(b)) + b

def main():
    codec = sys.argv[1]
    recs = bytearray()
    args = sys.argv[2:]
    for i, a in enumerate(args):
        kv, _, hs = a.partition(";")
        k, _, v = kv.partition("=")
        heads = [h.split("=", 1) for h in hs.split(",")] if hs else []
        body = bytes([0]) + varint(i * 10) + varint(i) + field(k.encode() if k != "-" else None)
        body += field(v.encode()) + varint(len(heads))
        for hk, hv in heads:
            body += field(hk.encode()) + field(hv.encode())
        recs += varint(len(body)) + body
    attrs = 0
    if codec == "gzip":
        recs, attrs = gzip.compress(bytes(recs)), 1
    base_ts = 1700000000000
    after_crc = struct.pack(">hiqqqhii", attrs, len(args) - 1, base_ts, base_ts + 10 * (len(args) - 1),
                            -1, -1, -1, len(args)) + bytes(recs)
    head = struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), 0, 2)
    sys.stdout.buffer.write(head + struct.pack(">I", crc32c(after_crc)) + after_crc)

if __name__ == "__main__":  # kafka_idem_client.py imports the helpers
    main()
