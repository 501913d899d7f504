"""Trace conversion: the HPC2N SWF log and a synthetic 10-million-row Google task_events file.

Issue 4's targets: converting the 202,876-job HPC2N log takes under 5 s; a 10-million-row
task_events file (gzipped, in the exact clusterdata-2011 format) converts at over 1 million rows
per second with bounded memory. Each conversion runs in a fresh process so that its peak RSS
(``VmHWM`` of the child) is its own; the task_events file is converted twice, with the default
256 MB in-memory budget and with 32 MB (jobs spill to disk and DuckDB sorts them out of core), to
show that memory does not grow with the output. The machine is shared, so each record also gives
the CPU time and the load average: rows per CPU-second is the figure that does not depend on
other processes. The synthetic file is generated into a temporary
directory at bench time and deleted afterwards.

Run: ``.venv/bin/python benchmarks/run_all.py bench_traces`` (``SCHEDLAB_BENCH_ROWS`` overrides
the 10,000,000 rows).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_big_logs import synthetic_task_events  # the same generator, written in blocks
from schedlab.datasets import data_file

HPC2N = "swf/HPC2N-2002-2.1-cln.swf.gz"  # in the data folder (--data-dir / $SCHEDLAB_DATA)
ROWS = int(os.environ.get("SCHEDLAB_BENCH_ROWS", "10000000"))

CHILD = """
import json, resource, sys, time
from schedlab.workloads.traces import convert

def peak_rss():
    # VmHWM belongs to this program's address space; ru_maxrss would also count the parent's
    # pages at fork time (Linux keeps it across exec).
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

t = time.perf_counter()
c = time.process_time()
spill = int(sys.argv[-1])
result = convert(sys.argv[1:-3], format=sys.argv[-3], out=sys.argv[-2], spill_bytes=spill)
wall = time.perf_counter() - t
cpu = time.process_time() - c
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rows": result.report.rows, "jobs": result.rows,
                  "peak_rss_bytes": peak_rss()}))
"""


def _convert(inputs: list[str], fmt: str, out: Path, spill_bytes: int = 256 << 20) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *inputs, fmt, str(out), str(spill_bytes)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run() -> list[dict]:
    records = []
    with tempfile.TemporaryDirectory(prefix="schedlab-bench-traces-") as tmp:
        d = Path(tmp)
        hpc2n = str(data_file(HPC2N, "the HPC2N SWF log"))
        _convert([hpc2n], "swf", d / "warm.parquet")  # compile/cache warm-up
        r = _convert([hpc2n], "swf", d / "hpc2n.parquet")
        records.append(
            {
                "name": "convert HPC2N SWF (202,876 jobs)",
                "wall_s": r["wall_s"],
                "cpu_s": r["cpu_s"],
                "rows": r["rows"],
                "jobs": r["jobs"],
                "peak_rss_mb": r["peak_rss_bytes"] / 2**20,
                "load_average_1min": os.getloadavg()[0],
            }
        )
        warm = d / "warm-task_events.csv.gz"
        synthetic_task_events(warm, 20_000)
        _convert([str(warm)], "google2011", d / "warm-google.parquet")  # compile/cache warm-up
        src = d / "task_events-part-00000-of-00001.csv.gz"
        t = time.perf_counter()
        rows = synthetic_task_events(src, ROWS)
        gen = time.perf_counter() - t
        print(
            f"   (generated {rows:,} task_events rows, {src.stat().st_size / 2**20:.0f} MB "
            f"gzipped, in {gen:.1f} s)",
            flush=True,
        )
        for spill in (256 << 20, 32 << 20):
            r = _convert([str(src)], "google2011", d / "google.parquet", spill_bytes=spill)
            records.append(
                {
                    "name": f"convert synthetic task_events ({rows:,} rows, gzip), "
                    f"spill at {spill >> 20} MB",
                    "wall_s": r["wall_s"],
                    "cpu_s": r["cpu_s"],
                    "rows": r["rows"],
                    "jobs": r["jobs"],
                    "rows_per_s": r["rows"] / r["wall_s"],
                    "rows_per_cpu_s": r["rows"] / r["cpu_s"],
                    "peak_rss_mb": r["peak_rss_bytes"] / 2**20,
                    "input_mb_gzip": src.stat().st_size / 2**20,
                    "load_average_1min": os.getloadavg()[0],
                }
            )
    for rec in records:
        extra = f", {rec['rows_per_s'] / 1e6:.2f} M rows/s" if "rows_per_s" in rec else ""
        print(
            f"   {rec['name']}: peak RSS {rec['peak_rss_mb']:.0f} MB, CPU {rec['cpu_s']:.1f} s"
            f"{extra}",
            flush=True,
        )
    return records


if __name__ == "__main__":
    for rec in run():
        print(rec)
