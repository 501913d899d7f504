"""Cost per event against the machine size k of every policy ``schedlab compare`` runs on a log
(issue 43 item 1): which ones grow with k.

For each k of ``KS``, a synthetic log of ``JOBS`` jobs (bench_compare_logs.write_curie_like: job
sizes over powers of two capped at k, heavy-tailed run times, offered load 0.65) is converted
and replayed at its own load by each pooled policy that accepts it (``compare.plan`` with every
one named, so that none is left out by its k), each run after a 50-job run of the same spec that
loads its compiled code; the time is the replay's loop (``Result.loop_s``). A policy whose next
run would take more than ``STOP_S`` seconds if its cost grew as k is not run at the larger k
(``"not run"``).
Prints and records (``results/bench_policy_k.json``) microseconds per event per policy and k,
and the growth from the smallest to the largest k measured::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_policy_k.py [--jobs 2000] [--ks 256,93312]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_compare_logs import write_curie_like, write_record  # noqa: E402

RESULTS = HERE / "results" / "bench_policy_k.json"
KS = (256, 1152, 9216, 93312)
JOBS = 2000
STOP_S = 30.0


def _table(folder: Path, jobs: int, k: int) -> Path:
    from schedlab.workloads.traces.pipeline import convert

    swf = folder / f"k{k}-{jobs}.swf"
    write_curie_like(swf, jobs=jobs, k=k)
    out = swf.with_suffix(".parquet")
    convert([swf], "swf", out)
    return out


def _runs(table: Path) -> tuple[list[str], object]:
    """Compare's plan of the log with every pooled policy named (none left out by its k)."""
    from schedlab.experiments.compare import plan, workload_base
    from schedlab.policies.registry import all_policies

    base, _, _ = workload_base(table, servers=None, arrivals=None, seed=1)
    every = [p.name for p in all_policies() if "pooled" in p.families]
    return plan("k", base, "pooled", [], every, native=True, all_policies=True), base


def _measure(the_plan, policy: str) -> tuple[float, float]:
    """µs per event of ``policy``'s replay (its loop, ``Result.loop_s``), after a 50-job run of
    the same spec that loads its compiled code, and the loop's seconds."""
    from schedlab.model.compile import compile_model
    from schedlab.simulation.simulate import simulate_model, with_run

    spec = the_plan.spec(policy, the_plan.native)
    simulate_model(compile_model(with_run(spec, arrivals=50)))
    result = simulate_model(compile_model(spec))
    return 1e6 * result.loop_s / max(result.events, 1), result.loop_s


def run(jobs: int = JOBS, ks: tuple[int, ...] = KS, only: list[str] | None = None) -> list[dict]:
    """One record per policy and k: µs per event (or "not run"), the loop's seconds."""
    records: list[dict] = []
    stopped: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="bench-policy-k-") as tmp:
        folder = Path(tmp)
        for i, k in enumerate(ks):
            the_plan, _ = _runs(_table(folder, jobs, k))
            for policy in only or the_plan.policies:
                if policy not in the_plan.policies:
                    continue
                if policy in stopped:
                    records.append(
                        {"name": f"{policy} k={k}", "policy": policy, "k": k, "jobs": jobs}
                        | {"us_per_event": "not run", "wall_s": None}
                    )
                    continue
                cost, wall = _measure(the_plan, policy)
                records.append(
                    {"name": f"{policy} k={k}", "policy": policy, "k": k, "jobs": jobs}
                    | {"us_per_event": cost, "wall_s": wall}
                )
                print(f"k = {k:>6,} {policy:24s} {cost:10.2f} µs/event", flush=True)
                following = ks[i + 1] if i + 1 < len(ks) else k
                if wall * following / k > STOP_S:  # the next k's run, if its cost grows as k
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
            "not_run_from_k": next(
                (r["k"] for r in measured if isinstance(r["us_per_event"], str)), None
            ),
        }
        g = growth[policy]
        print(f"{policy:24s} x{g['factor']:.3g} from k = {g['from_k']:,} to {g['to_k']:,}")
    write_record(RESULTS, {"records": records, "growth": growth})


if __name__ == "__main__":
    main()
