"""The HTTP application of ``schedlab serve`` alone, in-process (no socket, no uvicorn): processor
time per request of POST /advance (a later time each) on a 4-server FCFS cluster without an event
log, beside the validation, decision and encoding alone (what the application adds is the
difference). Run it with the tree to measure first on the path (docs/online.md, "The event
endpoints on the public API"):

    PYTHONPATH=src .venv/bin/python benchmarks/serve_app.py [--requests 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import uvloop

from schedlab.service.app import create_app, json_bytes
from schedlab.service.schemas import AtRequest
from schedlab.service.server import start

SPEC = """
[cluster]
servers = 4
[workload]
load = 0.5
[[workload.classes]]
need = 1
duration = { dist = "exponential", mean = 1.0 }
[policy]
name = "fcfs"
[run]
arrivals = 1000
"""


def scope(body: bytes) -> dict:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/advance", "raw_path": b"/advance", "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }  # fmt: skip


async def measure(requests: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "spec.toml"
        spec.write_text(SPEC)
        service = start(spec, None, None).service
    app, sent, now = create_app(service, None), [], 0.0

    async def send(message: dict) -> None:
        sent.append(message.get("status"))

    async def through_app(body: bytes) -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope(body), receive, send)

    async def decision_alone(body: bytes) -> None:
        json_bytes(
            {"actions": await service.handle("advance", AtRequest.model_validate_json(body))}
        )

    for label, call in (("the application", through_app), ("the decision alone", decision_alone)):
        per_request = []
        for _ in range(rounds):
            begin = time.process_time()
            for _ in range(requests):
                now += 1.0
                await call(json.dumps({"at": now}).encode())
            per_request.append((time.process_time() - begin) / requests * 1e6)
        print(f"{label}: {min(per_request):.1f} µs of processor per request (min of {rounds})")
    assert set(sent) <= {200, None}, set(sent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    uvloop.run(measure(args.requests, args.rounds))


if __name__ == "__main__":
    main()
