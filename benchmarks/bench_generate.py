"""Job generation cost (issue 12 item 4): ns per job of ``JobSource.units()`` on grosof2023's
Fig. 2 setting (ServerFilling, k = 8, needs 1/2/4/8, exponential sizes, load 0.9), with the
compiled generation units (``schedlab.simulation.compiled_units``) and with the NumPy path
(``compiled=False``). Both give the same jobs bit for bit (tests/simulation/test_compiled_units.py).

Each path is timed over ``--passes`` passes; the first compiled pass includes loading Numba's
disk cache, so the last pass is the one to quote. Wall and CPU time are both printed (the CPU
time is steadier on a shared machine).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_generate.py --arrivals 2000000
"""

from __future__ import annotations

import argparse
import time

from schedlab.model.compile import compile_model
from schedlab.reproduce.grosof2023 import spec
from schedlab.simulation.generate import JobSource


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrivals", type=int, default=2_000_000)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    model = compile_model(spec("server-filling", 0.9, args.arrivals, "exponential"))
    for compiled in (True, False):
        for p in range(args.passes):
            wall, cpu, n = time.perf_counter(), time.process_time(), 0
            for unit in JobSource(model, 1, compiled=compiled).units():
                n += len(unit)
            wall = (time.perf_counter() - wall) / n * 1e9
            cpu = (time.process_time() - cpu) / n * 1e9
            path = "compiled" if compiled else "numpy"
            print(f"{path:8s} pass {p + 1}: {wall:6.1f} ns/job wall, {cpu:6.1f} ns/job CPU")


if __name__ == "__main__":
    main()
