#!/usr/bin/env python3
"""A TCP proxy on loopback to AWS_ENDPOINT_URL (radosgw), for CLI tests that take a
bucket (or a WAL root) away: kill it (SIGKILL) for an outage, start it again on the
same port. tcp_proxy.py PORT_FILE PORT (0: any): the port it listens on goes to
PORT_FILE once it does."""
import os, socket, sys, threading
from urllib.parse import urlsplit
port_file, port = sys.argv[1], int(sys.argv[2])
up = urlsplit(os.environ.get("AWS_ENDPOINT_URL", ""))
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(128)
with open(port_file + ".tmp", "w") as f:
    print(ls.getsockname()[1], file=f)
os.rename(port_file + ".tmp", port_file)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve(c):
    try:
        u = socket.create_connection((up.hostname, up.port or 80))
    except OSError:
        c.close()
        return
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    pump(u, c)
    c.close(), u.close()
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
