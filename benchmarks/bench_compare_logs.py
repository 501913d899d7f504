"""``schedlab compare LOG --workers 2`` on whole logs: wall time and peak RSS of each phase
(issue 43, Targets).

Logs:

* ``curie-like``: a synthetic CEA-Curie-sized SWF log written by :func:`write_curie_like` into a
  temporary directory (deleted afterwards): 300,000 jobs on ``MaxProcs`` 93,312, job sizes
  spread over powers of two up to 65,536 cores (many small jobs, a few huge ones), heavy-tailed
  run times (lognormal, median 10 min, capped at 24 h) and requested times (the run time times a
  factor >= 1, rounded up to a quarter hour), Poisson arrivals whose rate makes the offered load
  ``LOAD``, and a logged wait (exponential, only so that the log check has something to join).
  Its figures are the targets' stand-in for CEA-Curie, which this machine does not have;
* ``HPC2N`` (203k jobs, k = 240), always, from the data folder (``swf/``);
* ``SDSC-BLUE`` and ``CEA-Curie``, when a user puts them in the data folder's ``swf/`` (the
  Parallel Workloads Archive names: ``SDSC-BLUE-2000-4.2-cln.swf.gz``,
  ``CEA-Curie-2011-2.1-cln.swf.gz``; any ``SDSC-BLUE*.swf*`` / ``CEA-Curie*.swf*`` is taken).

Each log is converted (``schedlab trace convert``, not timed as a phase of compare) and
``schedlab compare TABLE --workers 2`` runs in a fresh process; the command writes each phase's
wall seconds and peak RSS (its own, and its workers') to ``OUT/phases.json``. The record
(``results/bench_compare_logs.json``) keeps them with the targets: Curie-sized <= 600 s and
<= 4 GB peak RSS, SDSC-BLUE <= 300 s, HPC2N <= 180 s::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_compare_logs.py [--logs curie-like,HPC2N]
    PYTHONPATH=src .venv/bin/python benchmarks/bench_compare_logs.py --write-curie-like FILE.swf
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "bench_compare_logs.json"

CURIE_K = 93_312
CURIE_JOBS = 300_000
LOAD = 0.65
TARGETS = {  # issue 43: wall seconds, peak RSS bytes (None: no target)
    "curie-like": (600.0, 4 * 2**30),
    "CEA-Curie": (600.0, 4 * 2**30),
    "SDSC-BLUE": (300.0, None),
    "HPC2N": (180.0, None),
}
REAL_LOGS = {  # name in the record -> file name pattern in the data folder's swf/
    "HPC2N": "HPC2N*.swf*",
    "SDSC-BLUE": "SDSC-BLUE*.swf*",
    "CEA-Curie": "CEA-Curie*.swf*",
}


def write_curie_like(path: Path, jobs: int = CURIE_JOBS, k: int = CURIE_K, seed: int = 43) -> None:
    """A synthetic SWF log of ``jobs`` jobs on ``k`` processors at offered load ``LOAD`` (module
    docstring)."""
    rng = np.random.default_rng(seed)
    exponent = np.arange(17)  # 1 .. 65,536 cores
    weight = 0.72**exponent  # many small jobs, a few of tens of thousands of cores
    need = 2 ** rng.choice(exponent, size=jobs, p=weight / weight.sum())
    need = np.minimum(need, k)
    run = np.minimum(np.ceil(rng.lognormal(np.log(600.0), 1.8, jobs)), 86_400.0)
    requested = np.ceil(run * rng.uniform(1.0, 6.0, jobs) / 900.0) * 900.0
    requested = np.minimum(requested, 86_400.0)
    span = float((need * run).sum()) / (LOAD * k)  # arrivals over span give the offered load
    submit = np.sort(np.floor(rng.uniform(0.0, span, jobs)))
    wait = np.floor(rng.exponential(1_800.0, jobs))
    lines = [
        "; Version: 2.2",
        "; Computer: synthetic, CEA-Curie-sized (schedlab benchmarks/bench_compare_logs.py)",
        f"; MaxJobs: {jobs}",
        f"; MaxRecords: {jobs}",
        f"; MaxProcs: {k}",
        f"; MaxNodes: {k // 16}",
    ]
    body = np.column_stack(
        [
            np.arange(1, jobs + 1),
            submit,
            wait,
            run,
            need,
            np.full(jobs, -1),
            np.full(jobs, -1),
            need,
            requested,
            np.full(jobs, -1),
            np.ones(jobs),
            rng.integers(1, 800, jobs),
            np.ones(jobs),
            np.full(jobs, -1),
            np.ones(jobs),
            np.ones(jobs),
            np.full(jobs, -1),
            np.full(jobs, -1),
        ]
    ).astype(np.int64)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
        np.savetxt(f, body, fmt="%d")


def _swf_of(name: str, folder: Path) -> Path | None:
    from schedlab.datasets import data_dir

    if name == "curie-like":
        path = folder / "curie-like.swf"
        write_curie_like(path)
        return path
    found = sorted((data_dir() / "swf").glob(REAL_LOGS[name]))
    return found[0] if found else None


def _convert(swf: Path, out: Path) -> None:
    from schedlab.workloads.traces.pipeline import convert

    convert([swf], "swf", out)


def run_compare(table: Path, out: Path, workers: int, extra: list[str]) -> dict:
    """``schedlab compare TABLE --workers N`` in a fresh process; its phases (module docstring)."""
    command = [
        sys.executable,
        "-c",
        "from schedlab.cli import main; main()",
        "compare",
        str(table),
        "--workers",
        str(workers),
        "--out",
        str(out),
        "--format",
        "json",
        *extra,
    ]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    phases = out / "phases.json"
    rows = json.loads(phases.read_text()) if phases.exists() else []
    return {
        "command": "schedlab compare TABLE --workers " + str(workers) + " " + " ".join(extra),
        "exit": done.returncode,
        "stderr_tail": done.stderr.strip().splitlines()[-3:],
        "wall_s": round(wall, 2),
        "phases": rows,
        "peak_rss_bytes": max((r["peak_rss_bytes"] for r in rows), default=None),
        "workers_peak_rss_bytes": max((r["workers_peak_rss_bytes"] for r in rows), default=None),
    }


def run(
    logs: str = "curie-like,HPC2N,SDSC-BLUE,CEA-Curie",
    workers: int = 2,
    tmp: Path | None = None,
    extra: list[str] | None = None,
) -> list[dict]:
    """One record per log (the whole command, with its phases and targets)."""
    records = []
    with tempfile.TemporaryDirectory(dir=tmp, prefix="bench-compare-logs-") as folder:
        for name in logs.split(","):
            swf = _swf_of(name, Path(folder))
            if swf is None:
                print(f"{name}: not in the data folder's swf/ ({REAL_LOGS[name]}); skipped")
                continue
            table = Path(folder) / f"{name}.parquet"
            _convert(swf, table)
            result = run_compare(table, Path(folder) / f"out-{name}", workers, extra or [])
            wall_target, rss_target = TARGETS[name]
            result |= {
                "name": name,
                "target_wall_s": wall_target,
                "target_peak_rss_bytes": rss_target,
                "met": result["exit"] == 0
                and result["wall_s"] <= wall_target
                and (rss_target is None or (result["peak_rss_bytes"] or 0) <= rss_target),
            }
            records.append(result)
            phases = ", ".join(
                f"{p['phase']} {p['wall_s']:.1f} s / {p['peak_rss_bytes'] / 2**20:.0f} MB"
                for p in result["phases"]
            )
            print(
                f"{name}: exit {result['exit']}, {result['wall_s']:.1f} s (target "
                f"{wall_target:g} s), peak RSS {(result['peak_rss_bytes'] or 0) / 2**20:.0f} MB, "
                f"workers {(result['workers_peak_rss_bytes'] or 0) / 2**20:.0f} MB; {phases}",
                flush=True,
            )
            if result["exit"]:
                print("  " + "\n  ".join(result["stderr_tail"]))
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", default="curie-like,HPC2N,SDSC-BLUE,CEA-Curie")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tmp", type=Path, default=None)
    parser.add_argument("--write-curie-like", type=Path, default=None, metavar="FILE")
    parser.add_argument("extra", nargs="*", help="more compare options (after --)")
    args = parser.parse_args()
    if args.write_curie_like is not None:
        write_curie_like(args.write_curie_like)
        print(f"wrote {args.write_curie_like}")
        return
    records = run(args.logs, args.workers, args.tmp, args.extra)
    write_record(RESULTS, {"host_cores": os.cpu_count(), "records": records})


def write_record(path: Path, record: dict) -> None:
    """``record`` with the command that made it (this script's arguments) as JSON at ``path``."""
    script = Path(sys.argv[0]).name
    command = f"PYTHONPATH=src .venv/bin/python benchmarks/{script} " + " ".join(sys.argv[1:])
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({**record, "command": command}, indent=2) + "\n")
    print(f"record: {path}")


if __name__ == "__main__":
    main()
