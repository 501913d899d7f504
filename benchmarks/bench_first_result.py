"""Time to a first result (issue 33 item 1): `schedlab simulate` of the quickstart with 1,000
arrivals as a whole process, against `python -c "import numpy, numba"` on the same machine in the
same run.

Each is run ``ROUNDS`` times in a fresh interpreter, alternating, after one untimed run that fills
Numba's disk cache and after compiling schedlab's modules to bytecode (as an installed package has
them: with ``PYTHONDONTWRITEBYTECODE`` set, every run would compile its sources again); the
record gives the median wall time of each, their ratio (target <= 2.5) and the peak RSS of the
simulate process (target <= 200 MB, from ``resource.getrusage`` of the children: the largest
resident set of any one child). Also the time of ``import schedlab`` alone.

    .venv/bin/python benchmarks/bench_first_result.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parents[1] / "src/schedlab/examples/quickstart.toml"
SIMULATE = [sys.executable, "-m", "schedlab.cli", "simulate", str(QUICKSTART)]
SIMULATE += ["--arrivals", "1000"]
BASELINE = [sys.executable, "-c", "import numpy, numba"]
IMPORT = [sys.executable, "-c", "import schedlab"]
ROUNDS = 5


def _timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    pid = os.spawnv(os.P_NOWAIT, command[0], command)  # no shell, output to ours
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {status}")
    return wall, usage.ru_maxrss / 1024


def _bytecode() -> None:
    """Write the bytecode of the schedlab package the children import (``compileall`` writes it
    whatever ``PYTHONDONTWRITEBYTECODE`` says)."""
    package = importlib.util.find_spec("schedlab").submodule_search_locations
    subprocess.run([sys.executable, "-m", "compileall", "-q", *package], check=True)


def run(rounds: int = ROUNDS) -> list[dict]:
    _bytecode()
    subprocess.run(SIMULATE, check=True, capture_output=True)  # fill the disk cache
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)  # the children's tables are not the benchmark's output
    try:
        samples = {"baseline": [], "simulate": [], "import": []}
        peak = []
        for _ in range(rounds):
            samples["baseline"].append(_timed(BASELINE)[0])
            wall, rss = _timed(SIMULATE)
            samples["simulate"].append(wall)
            peak.append(rss)
            samples["import"].append(_timed(IMPORT)[0])
    finally:
        os.dup2(saved, 1)
        os.close(devnull)
    base = statistics.median(samples["baseline"])
    sim = statistics.median(samples["simulate"])
    return [
        {"name": "python -c 'import numpy, numba'", "wall_s": base, "rounds": samples["baseline"]},
        {"name": "python -c 'import schedlab'", "wall_s": statistics.median(samples["import"])},
        {
            "name": "schedlab simulate quickstart --arrivals 1000",
            "wall_s": sim,
            "rounds": samples["simulate"],
            "ratio_to_numpy_numba": sim / base,
            "ratio_target": 2.5,
            "peak_rss_mb": max(peak),
            "peak_rss_target_mb": 200,
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    for record in run(parser.parse_args().rounds):
        extra = ""
        if "ratio_to_numpy_numba" in record:
            extra = (
                f"  {record['ratio_to_numpy_numba']:.2f}x numpy+numba (target <= 2.5x), "
                f"peak RSS {record['peak_rss_mb']:.0f} MB (target <= 200 MB)"
            )
        print(f"{record['name']:<48} {record['wall_s']:7.3f} s{extra}")


if __name__ == "__main__":
    main()
