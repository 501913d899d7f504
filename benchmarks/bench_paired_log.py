"""Paired against unpaired intervals on a whole log (issue 43 item 2's done-when on KTH-SP2).

The four batch policies (FCFS, EASY, SJBF, conservative backfilling) replay the whole KTH-SP2 log
(28,490 jobs kept as 27,992 by the cleaning; ../shared/data or $SCHEDLAB_DATA) at its own
arrival times, as ``schedlab compare`` runs them. For each ranked metric, each policy's ratio to
the best (and FCFS's to EASY's) gets the paired batch-means interval (Fieller,
experiments/stats.py) and the interval that the two runs' own intervals give as if independent
(the delta method, what compare printed before). A record per (metric, policy): both intervals
and their widths, ``excludes_1`` of the paired one; and one per policy with its loss of capacity
and utilization over the makespan, and the seconds of its run.

Run: ``.venv/bin/python benchmarks/run_all.py bench_paired_log``.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

from schedlab.datasets import DataMissing, data_file

KTH = "swf/KTH-SP2-1996-2.1-cln.swf.gz"
POLICIES = ("fcfs", "easy-backfill", "sjbf", "conservative-backfill")
METRICS = ("mean_response_time", "mean_waiting_time", "mean_bounded_slowdown", "p95_waiting_time")


def run() -> list[dict]:
    from schedlab.experiments.compare import plan, workload_base
    from schedlab.experiments.runner import run_tasks
    from schedlab.experiments.stats import pair_of_runs, unpaired
    from schedlab.experiments.store import ResultStore
    from schedlab.workloads.traces import convert

    try:
        log = data_file(KTH, "the KTH-SP2 log")
    except DataMissing as exc:
        print(f"   skipped: {exc}")
        return []
    records: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "kth.parquet"
        convert(log, "swf", table)
        base, _, _ = workload_base(table, servers=None, arrivals=None, seed=1)
        the_plan = plan("kth", base, "pooled", [], list(POLICIES), native=True)
        store = ResultStore(Path(tmp) / "store")
        tasks = the_plan.tasks(1)
        start = time.perf_counter()
        run_tasks(tasks, store, workers=1)
        wall = time.perf_counter() - start
        rows = {r["policy"]: r for r in store.read(sorted({t.hash for t in tasks}))}
    for policy, row in rows.items():
        records.append(
            {
                "name": f"kth {policy}: loss of capacity, utilization over the makespan",
                "wall_s": row["wall_s"],
                "loss_of_capacity": row["loss_of_capacity"],
                "utilization_over_makespan": row["utilization_over_makespan"],
                "utilization_over_arrivals": row["utilization[servers]"],
                "load": row["load"],
            }
        )
    for metric in METRICS:
        best = min(rows, key=lambda p: rows[p][metric])
        pairs = [(policy, best) for policy in sorted(set(rows) - {best})]
        pairs += [("fcfs", "easy-backfill")]  # the done-when, whichever is best
        for policy, best in pairs:
            paired = pair_of_runs(rows[policy], rows[best], metric, ratio=True)
            loose = unpaired(rows[policy], rows[best], metric, ratio=True)
            records.append(
                {
                    "name": f"kth {metric} {policy} / {best}",
                    "ratio": paired.mean,
                    "paired": [paired.lo, paired.hi],
                    "unpaired": [loose.lo, loose.hi],
                    "paired_width": paired.hi - paired.lo,
                    "unpaired_width": loose.hi - loose.lo,
                    "excludes_1": not paired.lo <= 1 <= paired.hi,
                }
            )
            print(
                f"   {metric:<22} {policy:<22} / {best:<14} {paired.mean:8.4g} "
                f"paired [{paired.lo:.4g}, {paired.hi:.4g}]  unpaired [{loose.lo:.4g}, "
                f"{loose.hi:.4g}]",
                flush=True,
            )
    records.append(
        {
            "name": "kth: the four runs",
            "wall_s": wall,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )
    return records
