#!/usr/bin/env python3
"""A hand-made idempotent Kafka producer (issue 31 item 3), Python stdlib only,
from Kafka's published wire layout: InitProducerId v0 and Produce v3 with one
v2 record batch per request, each sent to the node the caller names, so that
a producer's batches can move between nodes as a client's do when its
leader changes.  Commands, each printing one line:
  init HOST:PORT                         -> the producer ID
  produce HOST:PORT TOPIC PID SEQ VALUE  -> "<error code> <base offset>"
"""
import os, socket, struct, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_kafka_batch import crc32c, varint  # noqa: E402 (Kafka's layout, its own CRC32C)

def kstr(s):
    return struct.pack(">h", -1) if s is None else struct.pack(">h", len(s)) + s.encode()

def call(addr, key, version, body):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as c:
        req = struct.pack(">hhi", key, version, 7) + kstr("idem-test") + body
        c.sendall(struct.pack(">i", len(req)) + req)
        n = struct.unpack(">i", recv(c, 4))[0]
        resp = recv(c, n)
    assert struct.unpack(">i", resp[:4])[0] == 7, "correlation id"
    return resp[4:]

def recv(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            raise EOFError("connection closed")
        b += x
    return b

def batch(pid, epoch, seq, value):
    ts = int(time.time() * 1000)
    rec = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    rec = varint(len(rec)) + rec
    tail = struct.pack(">hiqqqhii", 0, 0, ts, ts, pid, epoch, seq, 1) + rec
    crc = crc32c(tail)
    head = struct.pack(">ibI", 0, 2, crc)  # partition leader epoch, magic, crc
    body = head + tail
    return struct.pack(">qi", 0, len(body)) + body

cmd = sys.argv[1]
if cmd == "init":
    r = call(sys.argv[2], 22, 0, kstr(None) + struct.pack(">i", 60000))
    _, err, pid, epoch = struct.unpack(">ihqh", r[:16])
    assert err == 0 and epoch == 0, (err, epoch)
    print(pid)
elif cmd == "produce":
    addr, topic, pid, seq, value = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    recs = batch(pid, 0, seq, value.encode())
    body = kstr(None) + struct.pack(">hi", -1, 10000) + struct.pack(">i", 1) + kstr(topic)
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(recs)) + recs
    r = call(addr, 0, 3, body)
    nt = struct.unpack(">i", r[:4])[0]
    assert nt == 1
    ln = struct.unpack(">h", r[4:6])[0]
    p = 6 + ln
    np_, idx, err, off = struct.unpack(">iihq", r[p:p + 18])
    print(err, off)
