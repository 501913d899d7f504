"""Peak memory of `schedlab simulate` against the run length (issue 12, decision 0003).

Each measurement runs `schedlab simulate --spec SPEC --arrivals N --json` as the only child of a
small wrapper process, which reports the child's peak resident set size
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``). The default spec is grosof2023's Fig. 2
setting with ServerFilling at rho = 0.9 (src/schedlab/examples/quickstart.toml). A streaming run
holds only the jobs present, so the peak should not grow with N beyond noise.

    PYTHONPATH=src python benchmarks/bench_memory.py                      # 1e5, 1e6, 1e7
    PYTHONPATH=src python benchmarks/bench_memory.py --arrivals 1e5 --arrivals 1e8
    PYTHONPATH=src python benchmarks/bench_memory.py --large              # adds 1e8 and 1e9
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

DEFAULT = (10**5, 10**6, 10**7)
LARGE = (10**8, 10**9)

WRAPPER = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": done.returncode, "peak_kb": peak_kb, "out": done.stdout,
                  "err": done.stderr[-2000:]}))
"""


def measure(spec: Path, arrivals: int, extra: list[str]) -> dict:
    """Peak RSS (MB), wall time and mean response time of one `schedlab simulate` run."""
    command = [sys.executable, "-m", "schedlab.cli", "simulate", "--spec", str(spec)]
    command += ["--arrivals", str(arrivals), "--json", *extra]
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - t0
    report = json.loads(done.stdout)
    if report["rc"] != 0:
        raise SystemExit(f"schedlab simulate failed at {arrivals:g} arrivals: {report['err']}")
    result = json.loads(report["out"])
    mean = result["metrics"]["mean_response_time"]["mean"]
    return {
        "arrivals": arrivals,
        "peak_rss_mb": report["peak_kb"] / 1024.0,
        "wall_s": wall,
        "events": result["events"],
        "mean_response_time": mean,
        "peak_job_slots": result["counters"].get("peak_job_slots"),
    }


def default_spec() -> Path:
    return Path(str(resources.files("schedlab.examples") / "quickstart.toml"))


def run() -> list[dict]:
    """`make bench` (benchmarks/run_all.py): the default run lengths on the default spec."""
    spec = default_spec()
    measure(spec, 1000, [])  # compile (or load the cache) first
    rows = [measure(spec, n, []) for n in DEFAULT]
    return [
        {"name": f"{row['arrivals']:.0e} arrivals, peak RSS {row['peak_rss_mb']:.1f} MB", **row}
        for row in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", type=Path, default=default_spec())
    parser.add_argument("--arrivals", type=float, action="append", help="run lengths (repeat)")
    parser.add_argument("--large", action="store_true", help="also 1e8 and 1e9 arrivals")
    parser.add_argument("--no-check", action="store_true", help="skip action validation")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args()
    lengths = [int(a) for a in args.arrivals] if args.arrivals else list(DEFAULT)
    if args.large:
        lengths += list(LARGE)
    extra = ["--no-check"] if args.no_check else []
    rows = []
    measure(args.spec, 1000, extra)  # compile (or load the cache) first: not part of a run's peak
    print(f"spec: {args.spec}")
    print(f"{'arrivals':>14} {'peak RSS MB':>12} {'vs first':>10} {'wall s':>9} {'slots':>7}")
    for n in lengths:
        row = measure(args.spec, n, extra)
        rows.append(row)
        delta = row["peak_rss_mb"] - rows[0]["peak_rss_mb"]
        print(
            f"{n:>14,} {row['peak_rss_mb']:>12.1f} {delta:>+10.1f} {row['wall_s']:>9.1f} "
            f"{row['peak_job_slots'] or 0:>7}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
