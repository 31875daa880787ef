#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 proxy for tests (issue 31, "Stores that lie"):
it sits between tarn and etcd's JSON gateway, or between tarn and radosgw, and
injects transport faults on command.

    faultproxy.py --upstream HOST:PORT [--listen 127.0.0.1:0] --ports FILE
    faultproxy.py --ctl FILE COMMAND...        (sends one command, prints the answer)

--ports FILE gets "PORT CONTROL_PORT" once both listen. A command is one line
of words: a rule name, then key=value options. Rules fire on the requests they
match, in the order they were added, count= times (default 1; 0 = forever):

    drop      forward the request, then close the client's connection at once
              (with a reset) without its answer: the request may or may not apply
    lose      forward the request, wait for upstream's answer (so it applied),
              then reset the client's connection (fin=1: close it in order, so
              the client reads end of file): the answer is lost. On a reused
              connection, fin=1 makes libcurl send the request again on a
              fresh connection by itself
    delay     hold upstream's answer ms= milliseconds, then deliver it
    status    answer code= (503, 429, ...) without forwarding; body=etcd-timeout
              gives etcd's JSON "request timed out", body=etcd-ok (with code=200)
              an empty etcd success: a store that says it did what it did not
              (path=/v3/lease/revoke: a revoked session's records live on),
              else an S3 XML SlowDown
    timeout   answer etcd's "request timed out" (503, code 14) at once and hold
              the request; apply it upstream just before the after=N-th request
              that follows (any connection; default 1): a put that etcd applies
              after it said it timed out
    reset     reset a connection when a request arrives on it, before forwarding
    slow      delay every answer by ms= (use count=0)
    clear     remove every rule;  stats  prints counters as JSON

Options of every rule: path=PREFIX (match the request's path), method=M,
has=STRING (the body holds STRING; etcd's sequenced put: has=LESS),
reused=1 (only a request that is not the first on its client connection: a
reused keep-alive connection), after_fault=1 (dormant until another rule
fired after this one was added), refuse_ms=MS (after the fault, stop listening for
MS ms, so that a reconnect is refused).

Streams (etcd's /v3/watch) are relayed as raw bytes
after their first request and take no faults.
"""
import argparse
import asyncio
import json
import socket
import struct
import sys

STREAM_PATHS = ("/v3/watch",)
ETCD_TIMEOUT = json.dumps({"error": "etcdserver: request timed out", "code": 14,
                           "message": "etcdserver: request timed out"}).encode()
ETCD_OK = json.dumps({"header": {}}).encode()  # a success that did nothing
S3_SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
               b"<Message>Please reduce your request rate.</Message></Error>")


class Rule:
    def __init__(self, words):
        self.kind = words[0]
        self.opt = {}
        for w in words[1:]:
            k, _, v = w.partition("=")
            self.opt[k] = v
        self.count = int(self.opt.get("count", "1"))
        self.fired = 0

    def matches(self, method, path, reused, body=b""):
        if "has" in self.opt and self.opt["has"].encode() not in body:
            return False
        if "path" in self.opt and not path.startswith(self.opt["path"]):
            return False
        if "method" in self.opt and method != self.opt["method"]:
            return False
        if self.opt.get("reused") == "1" and not reused:
            return False
        if self.opt.get("after_fault") == "1" and self.proxy.stats["faults"] <= self.faults_before:
            return False
        return self.count == 0 or self.fired < self.count


class Proxy:
    def __init__(self, upstream, listen):
        self.uhost, self.uport = upstream
        self.lhost, self.lport = listen
        self.rules = []
        self.server = None
        self.held = []  # [requests to go, raw request bytes]
        self.log = False
        self.stats = {"requests": 0, "faults": 0, "held_applied": 0, "connections": 0}

    # ---- control -------------------------------------------------------------
    async def control(self, reader, writer):
        line = (await reader.readline()).decode().split()
        out = "ok"
        if not line:
            out = "error: empty command"
        elif line[0] == "clear":
            self.rules.clear()
        elif line[0] == "stats":
            out = json.dumps(dict(self.stats, held=len(self.held), rules=len(self.rules)))
        elif line[0] in ("drop", "lose", "delay", "status", "timeout", "reset", "slow"):
            r = Rule(line)
            r.faults_before = self.stats["faults"]
            r.proxy = self
            self.rules.append(r)
        else:
            out = "error: unknown command " + line[0]
        writer.write((out + "\n").encode())
        await writer.drain()
        writer.close()

    def pick(self, method, path, reused, body):
        for r in self.rules:
            if r.kind != "slow" and r.matches(method, path, reused, body):
                r.fired += 1
                self.stats["faults"] += 1
                return r
        return None

    def slow_ms(self, method, path, reused):
        return sum(int(r.opt.get("ms", "0")) for r in self.rules
                   if r.kind == "slow" and r.matches(method, path, reused))

    async def refuse(self, ms):
        """Stops listening for ms milliseconds: reconnects are refused."""
        if ms <= 0 or self.server is None:
            return
        self.server.close()
        self.server = None
        await asyncio.sleep(ms / 1000)
        await self.listen()

    async def listen(self):
        self.server = await asyncio.start_server(self.client, self.lhost, self.lport,
                                                 reuse_address=True)
        self.lport = self.server.sockets[0].getsockname()[1]

    # ---- HTTP ------------------------------------------------------------------
    @staticmethod
    def parse_head(head):
        """The start line's words, the header lines to forward (without
        Expect, answered here: upstream gets the whole request) and what
        framing needs: content-length (None: absent), chunked, close, expect."""
        lines = head.decode("latin-1").split("\r\n")
        keep = [lines[0]]
        f = {"length": None, "chunked": False, "close": False, "expect": False}
        for h in lines[1:]:
            if not h:
                continue
            k, _, v = h.partition(":")
            lk, lv = k.strip().lower(), v.strip().lower()
            if lk == "content-length":
                f["length"] = int(lv)
            elif lk == "transfer-encoding" and "chunked" in lv:
                f["chunked"] = True
            elif lk == "connection" and "close" in lv:
                f["close"] = True
            elif lk == "expect":
                f["expect"] = True
                continue
            keep.append(h)
        return lines[0].split(" "), keep, f

    async def read_request(self, reader):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        words, keep, f = self.parse_head(head)
        return words[0], words[1], keep, f["length"] or 0, f["chunked"], f["expect"], b""

    @staticmethod
    async def read_chunked(reader):
        out = b""
        while True:
            line = await reader.readuntil(b"\r\n")
            out += line
            n = int(line.split(b";")[0].strip(), 16)
            data = await reader.readexactly(n + 2)
            out += data
            if n == 0:
                # trailers end with an empty line; data held the first CRLF
                while data != b"\r\n":
                    data = await reader.readuntil(b"\r\n")
                    out += data
                return out

    async def read_response(self, reader, method):
        head = await reader.readuntil(b"\r\n\r\n")
        words, _, f = self.parse_head(head)
        status = int(words[1])
        length, chunked, close = f["length"], f["chunked"], f["close"]
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return head, close
        if chunked:
            return head + await self.read_chunked(reader), close
        if length is not None:
            return head + await reader.readexactly(length), close
        return head + await reader.read(), True

    def fake(self, rule):
        code = int(rule.opt.get("code", "503"))
        body = ETCD_TIMEOUT if rule.opt.get("body") == "etcd-timeout" or rule.kind == "timeout" \
            else ETCD_OK if rule.opt.get("body") == "etcd-ok" else S3_SLOWDOWN
        reason = {200: "OK", 503: "Service Unavailable", 429: "Too Many Requests"}.get(code, "Error")
        return (f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    async def apply_held(self):
        """Applies held requests whose turn has come (before this request)."""
        due = []
        for h in self.held:
            h[0] -= 1
            if h[0] <= 0:
                due.append(h)
        for h in due:
            self.held.remove(h)
            r, w = await asyncio.open_connection(self.uhost, self.uport)
            w.write(h[1])
            await w.drain()
            await self.read_response(r, h[2])
            w.close()
            self.stats["held_applied"] += 1
            if self.log:
                print("held request applied", file=sys.stderr, flush=True)

    @staticmethod
    def abort(writer):
        sock = writer.get_extra_info("socket")
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        writer.transport.abort()

    async def pipe(self, r, w):
        try:
            while True:
                data = await r.read(65536)
                if not data:
                    break
                w.write(data)
                await w.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            w.close()

    async def client(self, creader, cwriter):
        self.stats["connections"] += 1
        cid = self.stats["connections"]
        ureader = uwriter = None
        nreq = 0
        try:
            while True:
                req = await self.read_request(creader)
                if req is None:
                    break
                method, path, keep, length, chunked, expect, _ = req
                if expect:
                    cwriter.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    await cwriter.drain()
                if chunked:
                    body = await self.read_chunked(creader)
                else:
                    body = await creader.readexactly(length) if length else b""
                raw = ("\r\n".join(keep) + "\r\n\r\n").encode("latin-1") + body
                nreq += 1
                reused = nreq > 1
                self.stats["requests"] += 1
                await self.apply_held()
                rule = self.pick(method, path, reused, body)
                kind = rule.kind if rule else None
                if self.log:
                    print(f"conn {cid} req {nreq} {method} {path} {len(body)} B {body[:60]!r}"
                          f"{' fault ' + kind if kind else ''}", file=sys.stderr, flush=True)
                if kind == "reset":
                    self.abort(cwriter)
                    await self.refuse(int(rule.opt.get("refuse_ms", "0")))
                    return
                if kind in ("status", "timeout"):
                    if kind == "timeout":
                        self.held.append([int(rule.opt.get("after", "1")), raw, method])
                    cwriter.write(self.fake(rule))
                    await cwriter.drain()
                    continue
                if ureader is None:
                    ureader, uwriter = await asyncio.open_connection(self.uhost, self.uport)
                uwriter.write(raw)
                await uwriter.drain()
                if path.startswith(STREAM_PATHS):
                    await asyncio.gather(self.pipe(ureader, cwriter), self.pipe(creader, uwriter))
                    return
                if kind == "drop":
                    await asyncio.sleep(0.05)  # let it reach upstream
                    self.abort(cwriter)
                    await self.refuse(int(rule.opt.get("refuse_ms", "0")))
                    return
                resp, close = await self.read_response(ureader, method)
                if kind == "lose":
                    if rule.opt.get("fin") == "1":
                        cwriter.close()  # an orderly close: end of file, no answer
                    else:
                        self.abort(cwriter)
                    await self.refuse(int(rule.opt.get("refuse_ms", "0")))
                    return
                wait = self.slow_ms(method, path, reused)
                if kind == "delay":
                    wait += int(rule.opt.get("ms", "0"))
                if wait:
                    await asyncio.sleep(wait / 1000)
                cwriter.write(resp)
                await cwriter.drain()
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, IndexError):
            pass
        finally:
            for w in (cwriter, uwriter):
                if w is not None:
                    w.close()


async def serve(args):
    uh, _, up = args.upstream.rpartition(":")
    lh, _, lp = args.listen.rpartition(":")
    p = Proxy((uh, int(up)), (lh, int(lp)))
    p.log = args.verbose
    await p.listen()
    ctl = await asyncio.start_server(p.control, "127.0.0.1", 0)
    with open(args.ports + ".tmp", "w") as f:
        f.write(f"{p.lport} {ctl.sockets[0].getsockname()[1]}\n")
    import os
    os.replace(args.ports + ".tmp", args.ports)
    await asyncio.Event().wait()


def ctl(ports, words):
    port = int(open(ports).read().split()[1])
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall((" ".join(words) + "\n").encode())
        data = b""
        while True:
            d = s.recv(4096)
            if not d:
                break
            data += d
    out = data.decode().strip()
    print(out)
    return 0 if not out.startswith("error") else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--ports")
    ap.add_argument("--ctl", metavar="PORTS_FILE")
    ap.add_argument("--verbose", action="store_true", help="log every request on stderr")
    ap.add_argument("command", nargs="*")
    a = ap.parse_args()
    if a.ctl:
        return ctl(a.ctl, a.command)
    if not a.upstream or not a.ports:
        ap.error("--upstream and --ports are needed")
    asyncio.run(serve(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
