#!/usr/bin/env python3
"""Trickling HTTP clients for tests/cli/test_serve_http_dos.sh (issue 33,
denial-of-service item 3, the HTTP endpoint's equivalent): --per connections
from each of --sources addresses (127.0.0.10, .11, ...) send a request header
one byte every --interval seconds, never finishing it; after --ask-after
seconds a well-behaved client on 127.0.0.1 asks /healthz, then a keep-alive
client asks /metrics three times --interval apart. Prints one JSON line:
  {"healthz_s": seconds for /healthz's status line (null: none in --hold),
   "status": that line, "keepalive": statuses of the three requests,
   "closed": [seconds until the server closed each trickler, null: not in --hold]}
"""
import argparse
import http.client
import json
import select
import socket
import threading
import time

HEADER = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4000


def ask(a, out):
    t0 = time.monotonic()
    try:
        c = socket.create_connection((a.host, a.port), timeout=a.hold)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            d = c.recv(4096)
            if not d:
                break
            data += d
        if data:
            out["healthz_s"] = round(time.monotonic() - t0, 2)
            out["status"] = data.split(b"\r\n")[0].decode()
        c = http.client.HTTPConnection(a.host, a.port, timeout=a.hold)
        for _ in range(3):
            c.request("GET", "/metrics")
            r = c.getresponse()
            r.read()
            out["keepalive"].append(r.status)
            time.sleep(a.interval)
    except OSError as e:
        out["error"] = repr(e)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sources", type=int, default=4)
    p.add_argument("--per", type=int, default=16)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--ask-after", type=float, default=0.5)
    p.add_argument("--hold", type=float, default=8.0)
    a = p.parse_args()
    socks = []
    for i in range(a.sources):
        for _ in range(a.per):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.%d" % (10 + i), 0))
            s.settimeout(5)
            s.connect((a.host, a.port))
            socks.append(s)
    out = {"healthz_s": None, "status": None, "keepalive": [], "closed": [None] * len(socks)}
    t0 = time.monotonic()
    asker = None
    pos, nxt = 0, t0
    while time.monotonic() - t0 < a.hold:
        now = time.monotonic()
        if asker is None and now - t0 >= a.ask_after:
            asker = threading.Thread(target=ask, args=(a, out))
            asker.start()
        for i, s in enumerate(socks):
            if out["closed"][i] is None and select.select([s], [], [], 0)[0]:
                try:
                    gone = s.recv(4096) == b""
                except OSError:
                    gone = True
                if gone:
                    out["closed"][i] = round(now - t0, 2)
        if now >= nxt:  # one more header byte on each open connection
            nxt = now + a.interval
            for i, s in enumerate(socks):
                if out["closed"][i] is None:
                    try:
                        s.send(HEADER[pos % len(HEADER) : pos % len(HEADER) + 1])
                    except OSError:
                        out["closed"][i] = round(now - t0, 2)
            pos += 1
        if asker and not asker.is_alive() and None not in out["closed"]:
            break
        time.sleep(0.02)
    if asker:
        asker.join()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
