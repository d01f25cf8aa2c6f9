#!/usr/bin/env python3
"""Opens 10,000 keep-alive connections to 127.0.0.1:PORT, one request each, writes OUTDIR/ready once
every answer is read, and holds them 30 s. Usage: hold_connections.py OUTDIR PORT"""
import socket, sys, time
socks = []
for _ in range(10000):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n")
    socks.append(s)
for s in socks:
    s.recv(4096)
open(sys.argv[1] + "/ready", "w").write("ok")
time.sleep(30)
