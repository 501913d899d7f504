"""Compare the loop speed of two commits on a noisy host: both run at once on one core.

A shared host's speed drifts by +-20% from one run to the next, more than most changes are
worth. Here the base commit (checked out in a temporary git worktree) and the working tree run
the same simulation at the same time, pinned to the same core, so the kernel time-shares it
between them and any drift of the host hits both alike. Each reports its own user CPU time of the
loop; the ratio new/base per pair is printed, and the pairs alternate cores. Two runs of the same
commit agree within +-2.5% this way (docs/decisions/0007).

    .venv/bin/python benchmarks/ab_compare.py HEAD~1 server-filling-srpt 0.99 --arrivals 1e6
    .venv/bin/python benchmarks/ab_compare.py ee1b362 server-filling 0.9 --pairs 6

The policy runs in grosof2023's Fig. 2 setting (reproduce/grosof2023.py `spec`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, resource, sys
from schedlab.model.compile import compile_model
from schedlab.reproduce.grosof2023 import spec
from schedlab.simulation.simulate import run_model
policy, load, arrivals = sys.argv[1], float(sys.argv[2]), int(float(sys.argv[3]))
run_model(compile_model(spec(policy, load, 10_000, "exponential")))  # compile / load the cache
model = compile_model(spec(policy, load, arrivals, "exponential"))
before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
result = run_model(model)
cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - before
print(json.dumps({"events": result.events, "cpu_s": cpu}))
"""


def _start(src: Path, core: int, args: argparse.Namespace) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, args.policy, str(args.load), str(args.arrivals)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )


def _events_per_s(process: subprocess.Popen) -> float:
    out, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit("a run failed (see its error above)")
    report = json.loads(out.strip().splitlines()[-1])
    return report["events"] / report["cpu_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="git revision to compare the working tree against")
    parser.add_argument("policy")
    parser.add_argument("load", type=float)
    parser.add_argument("--arrivals", type=float, default=1e6)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.base],
            check=True,
        )
        try:
            for src in (base / "src", ROOT / "src"):  # compile or load each commit's cache first
                warm = argparse.Namespace(**{**vars(args), "arrivals": 1e4})
                _events_per_s(_start(src, cores[0], warm))
            ratios = []
            for i in range(args.pairs):
                core = cores[i % len(cores)]
                runs = [_start(base / "src", core, args), _start(ROOT / "src", core, args)]
                old, new = (_events_per_s(p) for p in runs)
                ratios.append(new / old)
                print(
                    f"pair {i + 1}: base {old / 1e6:.3f}  new {new / 1e6:.3f} M events/s "
                    f"(CPU time)  new/base {new / old:.3f}",
                    flush=True,
                )
            print(
                f"median new/base {statistics.median(ratios):.3f} "
                f"(range {min(ratios):.3f}-{max(ratios):.3f})"
            )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True
            )


if __name__ == "__main__":
    main()
