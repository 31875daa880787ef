#!/usr/bin/env python3
"""Hostile Kafka and HTTP clients for tests/cli/test_kafka_dos.sh (issue 33,
denial-of-service items 2 and 3). Each mode opens N connections from a source
address (another 127.0.0.x, so that a per-address limit on it leaves the
well-behaved client on 127.0.0.1 alone) and prints one JSON line of what the
server did to them:

  oversized  each sends a size prefix of --size bytes, then up to --send bytes
             of it, for --hold seconds: {"sent": total bytes the server took}
  idle       each sends nothing: {"closed": [seconds until the server closed
             each, null when it did not within --hold]}
  trickle    each sends a size prefix of a 64-byte request, then one byte of
             it every --interval seconds: "closed" as for idle
  http       each sends an HTTP request line one byte every --interval seconds
             to the HTTP port; meanwhile /healthz is asked:
             {"healthz_s": seconds for its answer (null: none in --hold),
              "status": its status line}
  guess      (item 4) N threads log in with SASL PLAIN as --user with wrong
             passwords, each on a new connection, as fast as answered, for
             --hold seconds: {"answers": refusals read, "throttled": those
             refused as limited (no hash), "hashed": the others, "secs"}
  login      --count logins of --user with --password, one after the other:
             {"latencies": seconds for each (connect to answer), "failed": n}
"""
import argparse
import json
import select
import socket
import struct
import threading
import time


def connect(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((a.source, 0))
    s.settimeout(5)
    s.connect((a.host, a.port))
    return s


def closed_by_peer(s):
    """1 when the server has closed s (EOF or reset), without blocking."""
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return False
    try:
        return s.recv(4096) == b""
    except OSError:
        return True


def watch(socks, a, send_step=None):
    """Seconds until each of socks was closed by the server (None: not in --hold)."""
    t0 = time.monotonic()
    closed = [None] * len(socks)
    nxt = t0
    while time.monotonic() - t0 < a.hold and None in closed:
        now = time.monotonic()
        for i, s in enumerate(socks):
            if closed[i] is None and closed_by_peer(s):
                closed[i] = round(now - t0, 2)
        if send_step and now >= nxt:
            nxt = now + a.interval
            for i, s in enumerate(socks):
                if closed[i] is None:
                    try:
                        send_step(s)
                    except OSError:
                        closed[i] = round(now - t0, 2)
        time.sleep(0.02)
    return closed


def oversized(a):
    socks = [connect(a) for _ in range(a.n)]
    sent = [0] * a.n
    stop = time.monotonic() + a.hold

    def push(i, s):
        s.settimeout(0.2)
        try:
            s.sendall(struct.pack(">i", a.size))
        except OSError:
            return
        chunk = b"\x00" * 65536
        while sent[i] < a.send and time.monotonic() < stop:
            try:
                sent[i] += s.send(chunk[: min(len(chunk), a.send - sent[i])])
            except socket.timeout:
                continue
            except OSError:
                return

    ts = [threading.Thread(target=push, args=(i, s)) for i, s in enumerate(socks)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    time.sleep(max(0.0, stop - time.monotonic()))
    return {"sent": sum(sent)}


def idle(a):
    socks = []
    for _ in range(a.n):
        socks.append(connect(a))
    return {"closed": watch(socks, a)}


def trickle(a):
    socks = []
    for _ in range(a.n):
        s = connect(a)
        s.sendall(struct.pack(">i", 64))
        socks.append(s)
    return {"closed": watch(socks, a, lambda s: s.send(b"\x00"))}


def http(a):
    line = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
    socks = [connect(a) for _ in range(a.n)]
    pos = {id(s): 0 for s in socks}

    def step(s):
        p = pos[id(s)]
        s.send(line[p % len(line) : p % len(line) + 1])
        pos[id(s)] = p + 1

    out = {"healthz_s": None, "status": None}

    def ask():
        t0 = time.monotonic()
        c = socket.create_connection((a.host, a.port), timeout=a.hold)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        try:
            while b"\r\n" not in data:
                d = c.recv(4096)
                if not d:
                    break
                data += d
        except OSError:
            pass
        if data:
            out["healthz_s"] = round(time.monotonic() - t0, 2)
            out["status"] = data.split(b"\r\n")[0].decode()

    t = threading.Thread(target=ask)
    # the tricklers first, then the well-behaved client among them
    for s in socks:
        step(s)
    time.sleep(0.3)
    t.start()
    a.hold = min(a.hold, 3.0)
    watch(socks, a, step)
    t.join()
    return out


def frame(api_key, version, corr, body):
    h = struct.pack(">hhih", api_key, version, corr, 4) + b"host"
    return struct.pack(">i", len(h) + len(body)) + h + body


def recv_frame(s):
    def exact(n):
        b = b""
        while len(b) < n:
            d = s.recv(n - len(b))
            if not d:
                raise OSError("closed")
            b += d
        return b

    (n,) = struct.unpack(">i", exact(4))
    return exact(n)


def sasl_plain(a, password):
    """(error code, error message) of one PLAIN login on a new connection."""
    s = connect(a)
    s.settimeout(30)
    try:
        s.sendall(frame(17, 1, 1, struct.pack(">h", 5) + b"PLAIN"))
        r = recv_frame(s)
        if struct.unpack(">h", r[4:6])[0] != 0:
            return (-2, "handshake refused")
        tok = b"\0" + a.user.encode() + b"\0" + password.encode()
        s.sendall(frame(36, 1, 2, struct.pack(">i", len(tok)) + tok))
        r = recv_frame(s)
        (err, ml) = struct.unpack(">hh", r[4:8])
        return (err, r[8 : 8 + ml].decode() if ml > 0 else "")
    finally:
        s.close()


def guess(a):
    out = {"answers": 0, "throttled": 0, "hashed": 0, "secs": a.hold}
    mu = threading.Lock()
    stop = time.monotonic() + a.hold

    def run(i):
        k = 0
        while time.monotonic() < stop:
            k += 1
            try:
                err, msg = sasl_plain(a, "wrong-%d-%d" % (i, k))
            except OSError:
                continue
            with mu:
                out["answers"] += 1
                out["throttled" if "retry later" in msg else "hashed"] += 1

    ts = [threading.Thread(target=run, args=(i,)) for i in range(a.n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def login(a):
    out = {"latencies": [], "failed": 0}
    for _ in range(a.count):
        t0 = time.monotonic()
        err, _ = sasl_plain(a, a.password)
        out["latencies"].append(round(time.monotonic() - t0, 4))
        out["failed"] += err != 0
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["oversized", "idle", "trickle", "http", "guess", "login"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", default="127.0.0.2")
    p.add_argument("-n", type=int, default=10)
    p.add_argument("--size", type=int, default=100 << 20)
    p.add_argument("--send", type=int, default=16 << 20)
    p.add_argument("--hold", type=float, default=5.0)
    p.add_argument("--interval", type=float, default=0.2)
    p.add_argument("--user", default="alice")
    p.add_argument("--password", default="")
    p.add_argument("--count", type=int, default=5)
    a = p.parse_args()
    print(json.dumps(globals()[a.mode](a)), flush=True)


if __name__ == "__main__":
    main()
