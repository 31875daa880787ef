#!/usr/bin/env python3
"""A store that lies (issue 31, `tarn probe`): an HTTP proxy, Python stdlib
only, in front of an S3 server (radosgw in the tests), that misbehaves the
way some real S3-compatible stores do, so that the probe can be shown to
catch it. One mode, one lie; the property of `tarn probe` that must catch it
(* = a safety property: the probe exits 1 and `tarn init` refuses the store):
  ignore-inm       create_only*: a create-only PUT (If-None-Match: *) of a name
                   that exists is answered 200 OK, as a store that ignores the
                   header does (the request is forwarded unchanged, so its
                   signature holds; the server's 412 is what is hidden)
  shuffle-list     list_order*: ListObjectsV2 answers list their keys in
                   reverse order (S3 Express directory buckets do not promise
                   byte order)
  truncate-list    list_complete*: a ListObjectsV2 page that is cut short
                   (IsTruncated true) loses its last key and says it is the
                   last page, so names go missing
  ignore-if-match  if_match: a PUT whose If-Match the server refused (412) is
                   answered 200 OK
  if-match-404     if_match_missing (detail "404"): a PUT with If-Match to a
                   key no PUT through the proxy created is answered 404
                   NoSuchKey without being forwarded
  if-match-412     if_match_missing (detail "412"): the same, answered 412
  random-etag      etag: every ETag header is replaced by a fresh random one
                   (S3 Express directory buckets' ETags are not the MD5)
  503-burst        throttling_503 holds: every other request is answered 503
                   SlowDown without being forwarded (the client must retry)
  503-after-put    throttling_503 holds (it failed create_only before the s3
                   client settled a 412 after a 5xx by reading back): the
                   first attempt of each PUT is forwarded, applied, and then
                   answered 503 SlowDown, as a store that times out inside
                   after writing; the retry meets the server's 412
  honest           forwards everything unchanged
usage: lying_s3_proxy.py MODE|@MODE-FILE UPSTREAM-URL PORT-FILE
Listens on 127.0.0.1, an ephemeral port written to PORT-FILE. With @MODE-FILE
the mode is read from that file at every request, so that one proxy plays
each lie in turn (a test writes the next mode there; python's start-up, not
the lies, was most of test_probe's time)."""
import http.client, http.server, os, re, sys, threading, urllib.parse

mode_arg, upstream, port_file = sys.argv[1], urllib.parse.urlsplit(sys.argv[2]), sys.argv[3]
MODES = {"ignore-inm", "shuffle-list", "truncate-list", "ignore-if-match", "if-match-404",
         "if-match-412", "random-etag", "503-burst", "503-after-put", "honest"}

def current_mode():
    m = mode_arg
    if m.startswith("@"):
        with open(m[1:]) as f:
            m = f.read().strip()
    if m not in MODES:
        sys.exit("lying_s3_proxy.py: unknown mode %s (one of %s)" % (m, ", ".join(sorted(MODES))))
    return m

current_mode()
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-connection"}
lock = threading.Lock()
created = set()     # paths a PUT through the proxy created (if-match-404/412)
put_seen = set()    # paths whose first PUT attempt was answered 503 (503-after-put)
count = [0]         # requests so far (503-burst)

def reverse_contents(body):
    parts = re.split(rb"(<Contents>.*?</Contents>)", body, flags=re.S)
    idx = [i for i, p in enumerate(parts) if p.startswith(b"<Contents>")]
    items = [parts[i] for i in idx][::-1]
    for i, it in zip(idx, items):
        parts[i] = it
    return b"".join(parts)

def truncate(body):
    if b"<IsTruncated>true</IsTruncated>" not in body:
        return body
    last = [m for m in re.finditer(rb"<Contents>.*?</Contents>", body, flags=re.S)]
    if last:
        m = last[-1]
        body = body[:m.start()] + body[m.end():]
    body = body.replace(b"<IsTruncated>true</IsTruncated>", b"<IsTruncated>false</IsTruncated>")
    return re.sub(rb"<NextContinuationToken>.*?</NextContinuationToken>", b"", body, flags=re.S)

def s3_error(code, msg):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
            "<Message>%s</Message></Error>" % (code, msg)).encode()

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, reason, headers, data, head_length=None):
        self.send_response(status, reason)
        for k, v in headers:
            self.send_header(k, v)
        # a HEAD answer has no body: its Content-Length is the object's
        self.send_header("Content-Length", str(head_length if head_length is not None else len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def relay(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        path = urllib.parse.urlsplit(self.path).path
        is_put = self.command == "PUT" and "uploadId" not in self.path
        if_match = self.headers.get("If-Match")
        mode = current_mode()
        with lock:
            count[0] += 1
            nth = count[0]
        if mode == "503-burst" and nth % 2 == 1:
            return self.answer(503, "Slow Down", [("Content-Type", "application/xml")],
                               s3_error("SlowDown", "Please reduce your request rate."))
        if mode in ("if-match-404", "if-match-412") and is_put and if_match:
            with lock:
                known = path in created
            if not known:
                st = 404 if mode == "if-match-404" else 412
                return self.answer(st, "Not Found" if st == 404 else "Precondition Failed",
                                   [("Content-Type", "application/xml")],
                                   s3_error("NoSuchKey" if st == 404 else "PreconditionFailed",
                                            "If-Match to a missing key"))
        c = http.client.HTTPConnection(upstream.hostname, upstream.port or 80, timeout=60)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        c.request(self.command, self.path, body=body, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        c.close()
        status, reason = r.status, r.reason
        out = [(k, v) for k, v in r.getheaders() if k.lower() not in HOP | {"content-length"}]
        if is_put and 200 <= status < 300:
            with lock:
                created.add(path)
        if self.command == "DELETE":
            with lock:
                created.discard(path)
        if (mode == "ignore-inm" and self.command == "PUT" and status == 412
                and self.headers.get("If-None-Match") == "*"):
            status, reason, data = 200, "OK", b""
            out = [(k, v) for k, v in out if k.lower() != "content-type"]
        if mode == "ignore-if-match" and is_put and if_match and status == 412:
            status, reason, data = 200, "OK", b""
            out = [(k, v) for k, v in out if k.lower() != "content-type"]
        if mode == "503-after-put" and is_put:
            with lock:
                first = path not in put_seen
                put_seen.add(path)
            if first:  # applied upstream; the client is told it was not
                return self.answer(503, "Slow Down", [("Content-Type", "application/xml")],
                                   s3_error("SlowDown", "Please reduce your request rate."))
        if self.command == "GET" and status == 200 and "list-type=2" in self.path:
            if mode == "shuffle-list":
                data = reverse_contents(data)
            elif mode == "truncate-list":
                data = truncate(data)
        if mode == "random-etag":
            out = [(k, '"%s"' % os.urandom(16).hex()) if k.lower() == "etag" else (k, v)
                   for k, v in out]
        length = r.getheader("Content-Length", "0") if self.command == "HEAD" else None
        self.answer(status, reason, out, data, length)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
