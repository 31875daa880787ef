#!/usr/bin/python3
"""Captures the requests librdkafka 2.0.2 (through kcat 1.7.1) sends, for test_kproto.

A scripted broker on loopback answers just enough (ApiVersions v3, Metadata, Produce,
ListOffsets, Fetch, InitProducerId and a consumer group's calls; the answers are built
here with struct, from the protocol guide) for `kcat -L`, a `kcat -P` of one message
(plain and idempotent), a `kcat -C -e` from the beginning and a `kcat -G` group member to
run, and prints the first request frame of each api/version kcat sent as
    <api key> <version> <hex of the frame after its 4-byte size>
test_kproto decodes each frame's header and body with tarn's codec and re-encodes the
body byte for byte: real-client requests, the flexible ApiVersions v3 among them.

    /usr/bin/python3 tests/unit/kproto_capture_rdkafka.py > tests/data/kproto/librdkafka.txt
"""
import re
import socket
import struct
import subprocess
import sys
import threading

# What the scripted broker advertises: tarn's declared ranges (src/kafka/proto/defs).
RANGES = [(0, 0, 8), (1, 0, 11), (2, 0, 5), (3, 0, 8), (8, 0, 7), (9, 0, 5), (10, 0, 2),
          (11, 0, 5), (12, 0, 3), (13, 0, 3), (14, 0, 3), (15, 0, 4), (16, 0, 2),
          (18, 0, 3), (19, 0, 4), (20, 0, 3), (22, 0, 1)]
TOPIC = b"t0"
captured = []


def s16(v): return struct.pack(">h", v)
def s32(v): return struct.pack(">i", v)
def s64(v): return struct.pack(">q", v)
def string(b): return s16(len(b)) + b
def uvarint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7f | 0x80])
        v >>= 7
    return out + bytes([v])


def api_versions(version):
    keys = RANGES
    if version >= 3:
        body = s16(0) + uvarint(len(keys) + 1)
        body += b"".join(s16(k) + s16(lo) + s16(hi) + b"\x00" for k, lo, hi in keys)
        return body + s32(0) + b"\x00"
    body = s16(0) + s32(len(keys)) + b"".join(s16(k) + s16(lo) + s16(hi) for k, lo, hi in keys)
    return body + (s32(0) if version >= 1 else b"")


def metadata(version, port):
    assert 1 <= version <= 8, version
    body = s32(0) if version >= 3 else b""
    body += s32(1) + s32(1) + string(b"127.0.0.1") + s32(port) + s16(-1)  # rack null
    if version >= 2:
        body += s16(-1)  # cluster id null
    body += s32(1)  # controller
    part = s16(0) + s32(0) + s32(1)
    if version >= 7:
        part += s32(0)
    part += s32(1) + s32(1) + s32(1) + s32(1)
    if version >= 5:
        part += s32(0)
    body += s32(1) + s16(0) + string(TOPIC) + b"\x00" + s32(1) + part
    if version >= 8:
        body += s32(-2147483648)
        body += s32(-2147483648)
    return body


def produce(version):
    part = s32(0) + s16(0) + s64(0)
    if version >= 2:
        part += s64(-1)
    if version >= 5:
        part += s64(0)
    if version >= 8:
        part += s32(0) + s16(-1)
    return s32(1) + string(TOPIC) + s32(1) + part + (s32(0) if version >= 1 else b"")


def list_offsets(version):
    assert version >= 1
    body = s32(0) if version >= 2 else b""
    part = s32(0) + s16(0) + s64(-1) + s64(0)
    if version >= 4:
        part += s32(0)
    return body + s32(1) + string(TOPIC) + s32(1) + part


def fetch(version):
    body = s32(0) if version >= 1 else b""
    if version >= 7:
        body += s16(0) + s32(0)
    part = s32(0) + s16(0) + s64(0)
    if version >= 4:
        part += s64(0)
    if version >= 5:
        part += s64(0)
    if version >= 4:
        part += s32(0)  # no aborted transactions
    if version >= 11:
        part += s32(-1)
    part += s32(0)  # empty records
    return body + s32(1) + string(TOPIC) + s32(1) + part


def nbytes(b): return s32(-1) if b is None else s32(len(b)) + b


class Reader:
    """Just enough of a request to answer it: the strings and bytes a group needs."""

    def __init__(self, frame):
        self.b, self.o = frame, 8
        self.string()  # client id

    def take(self, n):
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def i16(self): return struct.unpack(">h", self.take(2))[0]
    def i32(self): return struct.unpack(">i", self.take(4))[0]

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n)

    def nbytes(self):
        n = self.i32()
        return None if n < 0 else self.take(n)


MEMBER = b"member-1"
group = {}


def find_coordinator(version, port):
    body = s32(0) if version >= 1 else b""
    body += s16(0)
    if version >= 1:
        body += s16(-1)
    return body + s32(1) + string(b"127.0.0.1") + s32(port)


def join_group(version, frame):
    r = Reader(frame)
    r.string(), r.i32()
    if version >= 1:
        r.i32()
    r.string()
    if version >= 5:
        r.string()
    r.string()
    r.i32()
    name, meta = r.string(), r.nbytes()
    group["gen"] = group.get("gen", 0) + 1
    body = s32(0) if version >= 2 else b""
    body += s16(0) + s32(group["gen"]) + string(name) + string(MEMBER) + string(MEMBER)
    member = string(MEMBER) + (s16(-1) if version >= 5 else b"") + nbytes(meta)
    return body + s32(1) + member


def sync_group(version, frame):
    r = Reader(frame)
    r.string(), r.i32(), r.string()
    if version >= 3:
        r.string()
    assignment = b""
    for _ in range(r.i32()):
        m, a = r.string(), r.nbytes()
        if m == MEMBER:
            assignment = a
    return (s32(0) if version >= 1 else b"") + s16(0) + nbytes(assignment)


def offset_fetch(version):
    part = s32(0) + s64(-1) + (s32(-1) if version >= 5 else b"") + s16(-1) + s16(0)
    body = (s32(0) if version >= 3 else b"") + s32(1) + string(TOPIC) + s32(1) + part
    return body + (s16(0) if version >= 2 else b"")


def offset_commit(version, frame):
    return (s32(0) if version >= 3 else b"") + s32(1) + string(TOPIC) + s32(1) + s32(0) + s16(0)


def heartbeat(version):
    return (s32(0) if version >= 1 else b"") + s16(0)


def leave_group(version):
    body = (s32(0) if version >= 1 else b"") + s16(0)
    if version >= 3:
        body += s32(1) + string(MEMBER) + s16(-1) + s16(0)
    return body


def init_producer_id(version):
    return s32(0) + s16(0) + s64(1000) + s16(0)


# How the scripted broker answers each api key: (version, request frame, port) -> body.
ANSWERS = {
    18: lambda v, f, p: api_versions(v), 3: lambda v, f, p: metadata(v, p),
    0: lambda v, f, p: produce(v), 2: lambda v, f, p: list_offsets(v),
    1: lambda v, f, p: fetch(v), 10: lambda v, f, p: find_coordinator(v, p),
    11: lambda v, f, p: join_group(v, f), 14: lambda v, f, p: sync_group(v, f),
    9: lambda v, f, p: offset_fetch(v), 8: lambda v, f, p: offset_commit(v, f),
    12: lambda v, f, p: heartbeat(v), 13: lambda v, f, p: leave_group(v),
    22: lambda v, f, p: init_producer_id(v),
}


def serve_conn(conn, port):
    try:
        answer(conn, port)
    except OSError:
        pass  # kcat hung up


def answer(conn, port):
    f = conn.makefile("rb")
    while True:
        head = f.read(4)
        if len(head) < 4:
            return
        frame = f.read(struct.unpack(">i", head)[0])
        key, version, corr = struct.unpack(">hhi", frame[:8])
        captured.append((key, version, frame))
        answer_of = ANSWERS.get(key)
        if not answer_of:
            return
        body = answer_of(version, frame, port)
        resp = s32(corr) + body  # header v0: no served answer here is flexible but v3's body
        conn.sendall(s32(len(resp)) + resp)


def main():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]

    def loop():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve_conn, args=(conn, port), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    b = "127.0.0.1:%d" % port
    runs = [(["kcat", "-b", b, "-L", "-m", "5"], None),
            (["kcat", "-b", b, "-P", "-t", "t0", "-p", "0", "-m", "5"], b"hello\n"),
            (["kcat", "-b", b, "-C", "-t", "t0", "-p", "0", "-o", "beginning", "-e", "-m", "5"],
             None),
            # An idempotent producer asks for a producer id first.
            (["kcat", "-b", b, "-P", "-t", "t0", "-p", "0", "-m", "5",
              "-X", "enable.idempotence=true"], b"hello\n"),
            # A group member: FindCoordinator, JoinGroup, SyncGroup, OffsetFetch, Heartbeat,
            # LeaveGroup; -e ends it at the end of its partitions.
            (["kcat", "-b", b, "-G", "g0", "-e", "-m", "5", "-X", "auto.offset.reset=earliest",
              "t0"], None)]
    for cmd, stdin in runs:
        try:
            subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30)
        except subprocess.TimeoutExpired:
            pass  # what it sent until then is kept
    srv.close()
    seen = set()
    ver = re.search(r"librdkafka (\S+) builtin",
                    subprocess.run(["kcat", "-V"], capture_output=True, text=True).stdout)
    out = ["# librdkafka %s requests: tests/unit/kproto_capture_rdkafka.py wrote them"
           % (ver.group(1) if ver else "?")]
    for key, version, frame in captured:
        if (key, version) in seen:
            continue
        seen.add((key, version))
        out.append("%d %d %s" % (key, version, frame.hex()))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
