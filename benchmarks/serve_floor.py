"""The HTTP floor under ``schedlab serve``: uvicorn (httptools, uvloop, no access log, one
worker, as the service runs it) serving an ASGI app that answers every request with a fixed
body, driven by a minimal keep-alive client over 1, 8 and 32 connections. It prints requests/s
and the server's processor time per request (user + system, /proc): what any request costs
before schedlab's own code (docs/online.md, "Performance").

    PYTHONPATH=src .venv/bin/python benchmarks/serve_floor.py [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time

import uvloop

from bench_serve import SERVER, processor_times

BODY = b'{"actions":[]}'
PAYLOAD = b'{"at": 1.0, "id": "a", "need": 1.0}'
REQUEST = (
    b"POST /jobs HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(PAYLOAD), PAYLOAD)
)


async def app(scope, receive, send) -> None:
    """Reads the request's body and answers BODY."""
    if scope["type"] != "http":
        return
    await receive()
    headers = [(b"content-length", str(len(BODY)).encode()), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


async def connection(port: int, n: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(n):
        writer.write(REQUEST)
        head = await reader.readuntil(b"\r\n\r\n")
        start = head.lower().find(b"content-length:") + len(b"content-length:")
        await reader.readexactly(int(head[start : head.find(b"\r\n", start)]))
    writer.close()


async def measure(port: int, requests: int, connections: int) -> str:
    await asyncio.gather(*(connection(port, 100) for _ in range(connections)))  # warm up
    cpu, begin = processor_times()[1], time.perf_counter()
    await asyncio.gather(*(connection(port, requests // connections) for _ in range(connections)))
    wall, cpu = time.perf_counter() - begin, processor_times()[1] - cpu
    return (
        f"{connections:>2} connections: {requests / wall:,.0f} requests/s, server "
        f"{1e6 * cpu / requests:.0f} µs of processor per request"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "uvicorn", "serve_floor:app", "--port", str(port)]
    argv += ["--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"]
    here = os.path.dirname(os.path.abspath(__file__))
    server = subprocess.Popen(argv, cwd=here)
    SERVER[:] = [server.pid]
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.1)
        for connections in (1, 8, 32):
            print(uvloop.run(measure(port, args.requests, connections)))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
