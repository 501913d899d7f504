"""Cost per event against the machine size k of every policy ``schedlab compare`` runs on a log
(issue 43 item 1): which ones grow with k.

For each k of ``KS``, a synthetic log of ``JOBS`` jobs (bench_compare_logs.write_curie_like: job
sizes over powers of two capped at k, heavy-tailed run times, offered load 0.65) is converted
and replayed at its own load by each policy compare runs on it (``compare.plan``), each run in a
fresh process (its compiled code loaded from the cache first, warmed on a short run; the loop's
time is measured inside). A run longer than ``TIMEOUT_S`` is stopped and recorded as at least that
(``"timeout"``); a policy whose run took more than ``STOP_S`` seconds is not run at the larger k
(null). Prints and records
(``results/bench_policy_k.json``) microseconds per event per policy and k, and the growth from
the smallest to the largest k measured::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_policy_k.py [--jobs 2000] [--ks 256,93312]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_compare_logs import write_curie_like  # noqa: E402

RESULTS = HERE / "results" / "bench_policy_k.json"
KS = (256, 1152, 9216, 93312)
JOBS = 2000
STOP_S = 30.0
TIMEOUT_S = 120.0
CHILD = """
import sys, time
from schedlab.experiments.compare import plan, workload_base
from schedlab.model.compile import compile_model
from schedlab.simulation.simulate import simulate_model
base, _, _ = workload_base(__import__("pathlib").Path(sys.argv[1]), servers=None, arrivals=None,
                           seed=1)
p = plan("k", base, "pooled", [], [sys.argv[2]], native=True, all_policies=True)
model = compile_model(p.spec(sys.argv[2], p.native))
t0 = time.perf_counter()
result = simulate_model(model)
print(time.perf_counter() - t0, result.events)
"""


def _table(folder: Path, jobs: int, k: int) -> Path:
    from schedlab.workloads.traces.pipeline import convert

    swf = folder / f"k{k}-{jobs}.swf"
    write_curie_like(swf, jobs=jobs, k=k)
    out = swf.with_suffix(".parquet")
    convert([swf], "swf", out)
    return out


def _runs(table: Path) -> tuple[list[str], object]:
    from schedlab.experiments.compare import plan, workload_base

    base, _, _ = workload_base(table, servers=None, arrivals=None, seed=1)
    return plan("k", base, "pooled", [], None, native=True, all_policies=True), base


def _measure(table: Path, policy: str) -> tuple[float | str, float]:
    """µs per event of ``policy`` replaying ``table`` in a fresh process (or "timeout"), and its
    loop's wall seconds."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(table), policy],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return "timeout", TIMEOUT_S
    wall, events = done.stdout.split()[-2:]
    return 1e6 * float(wall) / max(int(events), 1), float(wall)


def run(jobs: int = JOBS, ks: tuple[int, ...] = KS, only: list[str] | None = None) -> list[dict]:
    """One record per policy and k: µs per event (or "timeout"), the loop's wall seconds."""
    records: list[dict] = []
    stopped: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="bench-policy-k-") as tmp:
        folder = Path(tmp)
        warm_table = _table(folder, 100, ks[0])
        warm, _ = _runs(warm_table)
        for policy in warm.policies:  # compile (or load the cache) outside the timings
            _measure(warm_table, policy)
        for k in ks:
            table = _table(folder, jobs, k)
            the_plan, _ = _runs(table)
            for policy in only or the_plan.policies:
                if policy in stopped or policy not in the_plan.policies:
                    continue
                cost, wall = _measure(table, policy)
                records.append(
                    {"name": f"{policy} k={k}", "policy": policy, "k": k, "jobs": jobs}
                    | {"us_per_event": cost, "wall_s": wall}
                )
                shown = cost if isinstance(cost, str) else f"{cost:10.2f} µs/event"
                print(f"k = {k:>6,} {policy:24s} {shown}", flush=True)
                if wall > STOP_S:
                    stopped.add(policy)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    parser.add_argument("--only", default=None, help="comma-separated policies")
    args = parser.parse_args()
    ks = tuple(int(x) for x in args.ks.split(","))
    records = run(args.jobs, ks, args.only.split(",") if args.only else None)
    growth = {}
    for policy in dict.fromkeys(r["policy"] for r in records):
        measured = [r for r in records if r["policy"] == policy]
        costs = [r for r in measured if isinstance(r["us_per_event"], float)]
        growth[policy] = {
            "from_k": costs[0]["k"],
            "to_k": costs[-1]["k"],
            "factor": costs[-1]["us_per_event"] / costs[0]["us_per_event"],
            "timeout_at_k": next(
                (r["k"] for r in measured if isinstance(r["us_per_event"], str)), None
            ),
        }
        g = growth[policy]
        print(f"{policy:24s} x{g['factor']:.3g} from k = {g['from_k']:,} to {g['to_k']:,}")
    record = {
        "records": records,
        "growth": growth,
        "command": "PYTHONPATH=src .venv/bin/python benchmarks/bench_policy_k.py "
        + " ".join(sys.argv[1:]),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    print(f"record: {RESULTS}")


if __name__ == "__main__":
    main()
