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
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from schedlab.datasets import data_file

HPC2N = "swf/HPC2N-2002-2.1-cln.swf.gz"  # in the data folder (--data-dir / $SCHEDLAB_DATA)
ROWS = int(os.environ.get("SCHEDLAB_BENCH_ROWS", "10000000"))

# 2011 event codes
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)


def synthetic_task_events(path: Path, rows: int, seed: int = 1) -> int:
    """Write about ``rows`` task_events rows (gzip level 1) in the 2011 format, time-ordered.

    Tasks arrive as a Poisson process over ~1.5 days; 80% are scheduled and finish, the rest are
    killed, fail, are evicted (and resubmitted), or are still running at the end; 5% get an
    UPDATE_RUNNING. Returns the number of rows written.
    """
    rng = np.random.default_rng(seed)
    n = int(rows / 3.05)
    t0 = 600_000_000 + np.sort(rng.uniform(0, 1.3e11, n)).astype(np.int64)
    wait = rng.exponential(2e6, n).astype(np.int64)
    dur = (rng.lognormal(17.5, 1.6, n)).astype(np.int64) + 1
    u = rng.random(n)
    job = 6_000_000_000 + (np.arange(n) // 16).astype(np.int64)
    index = (np.arange(n) % 16).astype(np.int64)
    cpu = np.round(rng.choice([0.0625, 0.125, 0.25, 0.03125, 0.5], n), 5)
    mem = np.round(rng.uniform(0.001, 0.3, n), 5)
    ev_t, ev_i, ev_c = [t0], [np.arange(n)], [np.full(n, SUBMIT)]
    ev_t.append(t0 + wait)
    ev_i.append(np.arange(n))
    ev_c.append(np.full(n, SCHEDULE))
    end = t0 + wait + dur
    outcome = np.select(
        [u < 0.80, u < 0.88, u < 0.93, u < 0.97],
        [FINISH, KILL, FAIL, EVICT],
        default=-1,  # still running at the end
    )
    has_end = outcome >= 0
    ev_t.append(end[has_end])
    ev_i.append(np.flatnonzero(has_end))
    ev_c.append(outcome[has_end])
    ev_t.append(t0 + wait + dur // 2)
    upd = np.flatnonzero(rng.random(n) < 0.05)
    ev_t[-1] = ev_t[-1][upd]
    ev_i.append(upd)
    ev_c.append(np.full(upd.size, UPDATE_RUNNING))
    evicted = np.flatnonzero(outcome == EVICT)
    for code, delay in ((SUBMIT, 1), (SCHEDULE, 1_000_000), (FINISH, 1_000_000 + dur)):
        ev_t.append(end[evicted] + (delay if np.isscalar(delay) else delay[evicted]))
        ev_i.append(evicted)
        ev_c.append(np.full(evicted.size, code))
    t = np.concatenate(ev_t)
    i = np.concatenate(ev_i)
    c = np.concatenate(ev_c).astype(np.int64)
    order = np.argsort(t, kind="stable")
    t, i, c = t[order], i[order], c[order]
    users = np.array([f"u{k:03d}" + "x" * 40 + "=" for k in range(500)], dtype=object)
    table = pa.table(
        {
            "time": t,
            "missing": pa.nulls(t.size, pa.int64()),
            "job": job[i],
            "index": index[i],
            "machine": 1_000_000 + (i % 12_000),
            "code": c,
            "user": pa.array(users[job[i] % 500], pa.string()),
            "cls": (i % 4),
            "prio": (i % 12),
            "cpu": cpu[i],
            "mem": mem[i],
            "disk": np.full(t.size, 0.0004244),
            "diff": np.zeros(t.size, np.int64),
        }
    )
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as f:
        for start in range(0, table.num_rows, 1_000_000):
            sink = pa.BufferOutputStream()
            pacsv.write_csv(
                table.slice(start, 1_000_000),
                sink,
                pacsv.WriteOptions(include_header=False, quoting_style="none"),
            )
            f.write(comp.compress(sink.getvalue().to_pybytes()))
        f.write(comp.flush())
    return table.num_rows


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
