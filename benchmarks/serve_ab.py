"""Two (or more) source trees of ``schedlab serve`` in turn, in the same minutes: bench_serve's
held step (EASY, k = 4,000, the event log, CONNECTIONS concurrent connections) at one offered
event rate for SUSTAIN_S seconds, on a fresh logged service per run; decisions/s and processor
time per request of the server and the client. For comparisons on a shared host, where
absolute figures drift with the load (docs/online.md, "The event endpoints on the public API"):

    PYTHONPATH=src .venv/bin/python benchmarks/serve_ab.py --rounds 3 --rate 12000 OLD_TREE NEW_TREE

``--sequential``: bench_serve's logged saturation step instead (one request at a time on one
connection, each answered after its own fsync: the lone request's cost, STEP_REQUESTS requests).

Each tree is a checkout (``git worktree add``) whose ``src`` the server runs.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import uvloop


def bench_of(tree: str, number: int) -> ModuleType:
    """That tree's benchmarks/bench_serve.py (its ``serving`` runs that tree's src)."""
    spec = importlib.util.spec_from_file_location(
        f"bench_serve_{number}", Path(tree) / "benchmarks" / "bench_serve.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OWN = bench_of(str(Path(__file__).resolve().parents[1]), -1)  # this tree's: its counters


def held(b: ModuleType, folder: Path, rate: float | None, log: Path) -> dict:
    """The held step at ``rate`` events/s offered; None: the sequential saturation step."""
    _, spec_text, jobs_of, policy = b.CASES[0]
    spec = folder / "spec.toml"
    spec.write_text(spec_text)
    jobs = jobs_of(np.random.default_rng(b.SEED))
    server, target = b.serving(spec, policy, log)
    try:
        replay = b.Replay(jobs)
        b.step(replay, target.send, warm_up=b.WARM_UP)
        before = OWN.voluntary_switches(server.pid)
        measured = held_step(b, replay, target, jobs, rate)
        switches = OWN.voluntary_switches(server.pid) - before
        return {**measured, "switches": switches / measured["requests"]}
    finally:
        b.stop(server, target)


def held_step(b: ModuleType, replay: Any, target: Any, jobs: Any, rate: float | None) -> dict:
    """The sequential step (``rate`` None), or the concurrent one at ``rate`` events/s."""
    if rate is None:
        return b.step(replay, target.send)
    port = target.socket.getpeername()[1]

    async def run() -> dict:
        targets = [await b.AsyncTarget.open(port) for _ in range(b.CONNECTIONS)]
        try:
            return await b.concurrent_step(
                replay, targets, rate, b.trace_rate_of(jobs), b.SUSTAIN_REQUESTS, b.SUSTAIN_S
            )
        finally:
            for one in targets:
                one.close()

    return uvloop.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=12_000.0, help="events/s offered")
    parser.add_argument("--sequential", action="store_true", help="one request at a time")
    args = parser.parse_args()
    rate = None if args.sequential else args.rate
    offered = "sequential" if rate is None else f"offered {rate:,.0f} events/s"
    benches = [bench_of(tree, n) for n, tree in enumerate(args.trees)]
    gc.freeze()  # the client's own collections are not the service's latency
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for round_ in range(args.rounds):
            for n, (tree, b) in enumerate(zip(args.trees, benches, strict=True)):
                r = held(b, folder, rate, folder / f"events-{round_}-{n}.jsonl")
                sent = f", sent {r['events_sent_per_s']:,.0f}/s" if rate is not None else ""
                print(
                    f"{tree}: {offered}{sent}: {r['decisions_per_s']:,.0f} decisions/s, server "
                    f"{r['server_cpu_us_per_request']:.0f} µs ({r['switches']:.2f} voluntary "
                    "context switches) and client "
                    f"{r['client_cpu_us_per_request']:.0f} µs per request, p50 {r['p50_ms']:.1f} "
                    f"ms, load average {r['load_average_1min']:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
