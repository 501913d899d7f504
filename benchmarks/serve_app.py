"""The HTTP application of ``schedlab serve`` alone, in-process (no socket, no uvicorn): processor
time per request of POST /advance (a later time each) on a 4-server FCFS cluster without an event
log, beside the validation, decision and encoding alone (what the application adds is the
difference), and the routes alone (the service answering at once, without a decision). Run
it with the tree to measure first on the path (docs/online.md, "The event
endpoints on the public API"):

    PYTHONPATH=src .venv/bin/python benchmarks/serve_app.py [--requests 3000] [--rounds 5]

``--event-log``: the service writes (and fsyncs) its event log in a temporary folder;
``--in-flight N``: N requests at once (handed to the decision thread in one loop pass), each
round's requests in groups of N. The processor time is the process's: the event loop's, the
decision thread's and the event log thread's (decision 0036).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

from schedlab.commands.online import SWITCH_INTERVAL
from schedlab.service.app import Answer, create_app, json_bytes
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


async def measure(requests: int, rounds: int, folder: Path, logged: bool, in_flight: int) -> None:
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    service = start(spec, None, folder / "events.jsonl" if logged else None).service
    app, sent, now = create_app(service, None), [], 0.0
    fsyncs = [0]  # of the event log: how many requests share one
    if service.log is not None:
        sync = service.log.sync

        def counted() -> None:
            fsyncs[0] += 1
            sync()

        service.log.sync = counted  # type: ignore[method-assign]

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

    async def routes_alone(body: bytes) -> None:
        service.handle = answer_at_once  # type: ignore[method-assign]
        try:
            await through_app(body)
        finally:
            del service.handle

    cases = [
        ("the application", through_app),
        ("the decision alone", decision_alone),
        ("the routes alone (the service answering at once)", routes_alone),
    ]
    for label, call in cases:
        per_request, switches, synced = [], [], fsyncs[0]
        for _ in range(rounds):
            begin, switched = time.process_time(), context_switches()
            for _ in range(requests // in_flight):
                bodies = []
                for _ in range(in_flight):
                    now += 1.0
                    bodies.append(json.dumps({"at": now}).encode())
                await asyncio.gather(*(call(body) for body in bodies))
            per_request.append((time.process_time() - begin) / requests * 1e6)
            switches.append((context_switches() - switched) / requests)
        print(
            f"{label}: {min(per_request):.1f} µs of processor per request (min of {rounds}; "
            f"median {statistics.median(per_request):.1f}), {statistics.median(switches):.2f} "
            "voluntary context switches of its threads per request (median)"
            + (
                f", {(fsyncs[0] - synced) / (rounds * requests):.3f} fsyncs per request"
                if logged
                else ""
            )
        )
    service.close(grace=10)
    assert set(sent) <= {200, None}, set(sent)


def context_switches() -> int:
    """The voluntary context switches of this process's threads so far (Linux's /proc; 0
    elsewhere): each is a thread that blocked (a hand-over, a wait for the interpreter lock or
    the disk), a cost that a loaded host does not blur as it does processor time."""
    total = 0
    for status in Path("/proc/self/task").glob("*/status"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            for line in status.read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


async def answer_at_once(*_: Any) -> Answer:
    """An event's answer without a decision: what the routes cost is measured alone."""
    return Answer(b"[]", 0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--event-log", action="store_true", help="with the event log (fsync)")
    parser.add_argument("--in-flight", type=int, default=1, help="requests at once")
    args = parser.parse_args()
    gc.freeze()  # as ``schedlab serve`` sets its process (commands/online.py)
    sys.setswitchinterval(SWITCH_INTERVAL)
    with tempfile.TemporaryDirectory() as name:
        uvloop.run(measure(args.requests, args.rounds, Path(name), args.event_log, args.in_flight))


if __name__ == "__main__":
    main()
