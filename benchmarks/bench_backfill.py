"""The backfilling family replaying the whole HPC2N log (202,876 jobs, 240 processors).

Issue 30's target: a whole-log replay of conservative backfilling on HPC2N under 10 s. The log
(../shared/data, or $SCHEDLAB_DATA) is converted once into a temporary table; each policy then
replays it at its own arrival times on k = 240 (the log's processors), with users' requested
times. ``wall_s`` is the engine loop, ``total_s`` what ``schedlab.simulate`` costs after the first
compilation (reading the table, the loop, the metrics), ``cpu_s`` the process CPU time of that
(which does not depend on the other processes of a shared machine). ``cli_s`` (conservative
backfilling only) is a whole ``schedlab simulate SPEC`` in a fresh process: start-up, loading the
compiled code from the cache, the replay and the output.

Run: ``.venv/bin/python benchmarks/run_all.py bench_backfill``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import schedlab
from schedlab.datasets import DataMissing, data_file

HPC2N = "swf/HPC2N-2002-2.1-cln.swf.gz"
CASES = (
    ("easy-backfill", {}),
    ("conservative-backfill", {}),
    ("sjbf", {}),
    ("conservative-backfill", {"walltime_kill": True}),
)


def spec(table: Path, policy: str, settings: dict, **run) -> dict:
    return {
        "cluster": {"servers": 240},
        "workload": {"arrivals": {"process": "trace", "path": str(table)}},
        "policy": {"name": policy, **settings},
        "run": {"timeseries": 0, "check": False, "allow_unstable": True, "warmup": 0.0, **run},
    }


def measure(table: Path, policy: str, settings: dict) -> dict:
    schedlab.simulate(spec(table, policy, settings, arrivals=2000))  # compile or load the cache
    t0 = time.perf_counter()
    c0 = time.process_time()
    result = schedlab.simulate(spec(table, policy, settings))
    cpu = time.process_time() - c0
    total = time.perf_counter() - t0
    label = " ".join([policy, *(f"{k}={v}" for k, v in settings.items())])
    return {
        "name": f"HPC2N whole log, {label}",
        "policy": policy,
        "settings": settings,
        "arrivals": result.counters["arrivals"],
        "events": result.counters["events"],
        "wall_s": result.loop_s,
        "total_s": total,
        "cpu_s": cpu,
        "events_per_s": result.counters["events"] / result.loop_s,
        "walltime_kills": result.counters.get("walltime_kills", 0.0),
        "load_average_1min": os.getloadavg()[0],
    }


def whole_command(table: Path, directory: Path) -> dict:
    """``schedlab simulate`` of conservative backfilling in a fresh process."""
    path = directory / "conservative.toml"
    path.write_text(
        f'[cluster]\nservers = 240\n[workload.arrivals]\nprocess = "trace"\npath = "{table}"\n'
        '[policy]\nname = "conservative-backfill"\n'
        "[run]\ntimeseries = 0\ncheck = false\nallow_unstable = true\nwarmup = 0.0\n"
    )
    command = [sys.executable, "-m", "schedlab.cli", "simulate", str(path), "--json"]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return {
        "name": "HPC2N whole log, `schedlab simulate` conservative-backfill (fresh process)",
        "cli_s": time.perf_counter() - t0,
        "wall_s": time.perf_counter() - t0,
        "load_average_1min": os.getloadavg()[0],
    }


def run() -> list[dict]:
    try:
        log = data_file(HPC2N, "the HPC2N SWF log")
    except DataMissing as exc:
        print(f"   skipped: {exc}")
        return []
    from schedlab.workloads.traces import convert

    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "hpc2n.parquet"
        convert(log, "swf", table)
        records = [measure(table, policy, settings) for policy, settings in CASES]
        records.append(whole_command(table, Path(tmp)))
    return records
