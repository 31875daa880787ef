#!/usr/bin/env python3
"""A store that lies (issue 31, `tarn probe`): an HTTP proxy, Python stdlib
only, in front of an S3 server (radosgw in the tests), that misbehaves the
way some real S3-compatible stores do, so that the probe can be shown to
catch it:
  ignore-inm    a create-only PUT (If-None-Match: *) of a name that exists is
                answered 200 OK, as a store that ignores the header does (the
                request is forwarded unchanged, so its signature holds; the
                server's 412 is what is hidden)
  shuffle-list  ListObjectsV2 answers list their keys in reverse order, as S3
                Express directory buckets do not promise byte order
  honest        forwards everything unchanged
usage: lying_s3_proxy.py MODE UPSTREAM-URL PORT-FILE
Listens on 127.0.0.1, an ephemeral port written to PORT-FILE."""
import http.client, http.server, re, sys, urllib.parse

mode, upstream, port_file = sys.argv[1], urllib.parse.urlsplit(sys.argv[2]), sys.argv[3]
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-connection"}

def reverse_contents(body):
    parts = re.split(rb"(<Contents>.*?</Contents>)", body, flags=re.S)
    idx = [i for i, p in enumerate(parts) if p.startswith(b"<Contents>")]
    items = [parts[i] for i in idx][::-1]
    for i, it in zip(idx, items):
        parts[i] = it
    return b"".join(parts)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def relay(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection(upstream.hostname, upstream.port or 80, timeout=60)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        c.request(self.command, self.path, body=body, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        status, reason = r.status, r.reason
        out = [(k, v) for k, v in r.getheaders() if k.lower() not in HOP | {"content-length"}]
        if (mode == "ignore-inm" and self.command == "PUT" and status == 412
                and self.headers.get("If-None-Match") == "*"):
            status, reason, data = 200, "OK", b""
            out = [(k, v) for k, v in out if k.lower() != "content-type"]
        if (mode == "shuffle-list" and self.command == "GET" and status == 200
                and "list-type=2" in self.path):
            data = reverse_contents(data)
        c.close()
        self.send_response(status, reason)
        for k, v in out:
            self.send_header(k, v)
        # a HEAD answer has no body: its Content-Length is the object's
        length = r.getheader("Content-Length", "0") if self.command == "HEAD" else len(data)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
