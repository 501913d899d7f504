"""Loop time of a few policies on 10^5-arrival runs (before/after comparisons of a refactoring).

    PYTHONPATH=src python benchmarks/time_policies.py [--arrivals 100000] [--repeat 3] [--only P..]

Prints, per policy, the loop seconds of each repeat (compiled code already cached: one warm-up
run first) and the median in million events per second.
"""

from __future__ import annotations

import argparse
import statistics

import schedlab

POOLED = {
    "cluster": {"servers": 8},
    "workload": {
        "load": 0.9,
        "classes": [
            {"probability": 0.25, "need": n, "duration": {"dist": "exponential", "mean": 1.0 / n}}
            for n in (1, 2, 4, 8)
        ],
    },
}
PACKING = {
    "cluster": {"servers": 10, "capacity": 1.0},
    "workload": {
        "load": 0.9,
        "classes": [
            {
                "probability": 1.0,
                "demand": {"dist": "uniform", "low": 0.05, "high": 0.6},
                "duration": {"dist": "exponential", "mean": 1.0},
            }
        ],
    },
}
CASES = [("server-filling", POOLED), ("server-filling-srpt", POOLED), ("bf-js", PACKING)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arrivals", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="time only these policies")
    args = parser.parse_args()
    for name, base in CASES:
        if args.only and name not in args.only:
            continue
        spec = {**base, "policy": {"name": name}, "run": {"arrivals": args.arrivals, "seed": 3}}
        schedlab.simulate({**spec, "run": {"arrivals": 1000, "seed": 1}})  # warm-up
        loops, rates = [], []
        for r in range(args.repeat):
            result = schedlab.simulate({**spec, "run": {**spec["run"], "seed": 3 + r}})
            loops.append(result.loop_s)
            rates.append(result.events / result.loop_s / 1e6)
        print(
            f"{name:22s} loop_s {' '.join(f'{x:.3f}' for x in loops)}  "
            f"median {statistics.median(rates):.2f} M events/s",
            flush=True,
        )


if __name__ == "__main__":
    main()
