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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["oversized", "idle", "trickle", "http"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", default="127.0.0.2")
    p.add_argument("-n", type=int, default=10)
    p.add_argument("--size", type=int, default=100 << 20)
    p.add_argument("--send", type=int, default=16 << 20)
    p.add_argument("--hold", type=float, default=5.0)
    p.add_argument("--interval", type=float, default=0.2)
    a = p.parse_args()
    print(json.dumps(globals()[a.mode](a)), flush=True)


if __name__ == "__main__":
    main()
