"""Speed against the plain C reference (issue 12 item 4): grosof2023 Fig. 2 setting, same run.

k = 8 servers, needs 1, 2, 4, 8 with probability 1/4 each, durations exponential with mean
proportional to 1/need, Poisson arrivals (reproduce/grosof2023.py `spec`; the C program
../shared/bench/ref_msj.c simulates the same model with its own random numbers). Each
measurement runs in its own child process (a small wrapper reports the child's peak resident set
size), schedlab and C one after the other in the same invocation, so the ratio is measured on the
same machine under the same load; each case runs ``--rounds`` times (3) and the median round is
reported with the range of the per-round ratios (a shared host's speed drifts by +-20%).
Events = arrivals + completions for both (the C program's count; schedlab's engine counts the
same events for these policies). The schedlab child compiles
(or loads the cache) and warms up on 10^4 arrivals before the timed run; the time reported is
the compiled loop's (``Result.loop_s``), job generation included, compilation excluded, and the
wall time ``simulate`` reports (``Result.wall_s``: the loop, the job source's window, the
metrics), with the ratio to C of each.

    PYTHONPATH=src python benchmarks/bench_reference.py                   # 10^7 arrivals
    PYTHONPATH=src python benchmarks/bench_reference.py --arrivals 1e6    # quicker
    PYTHONPATH=src python benchmarks/bench_reference.py --policy server-filling-srpt  # one case
    SCHEDLAB_REF_C=path/to/ref_msj.c ...                                  # another C source

Targets (issue 12): ServerFilling >= 0.5 x C, ServerFilling-SRPT >= 0.75 x C, MaxWeight >= 1.5 M
events/s. Writes benchmarks/results/bench_reference.json (also through `make bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from schedlab.datasets import default_data_dir

ARRIVALS = 10_000_000
ROUNDS = 3  # rounds per case; the median round is reported
# $SCHEDLAB_REF_C, else shared/bench beside the git checkout (where shared/data is found)
C_SOURCE = Path(
    os.environ.get("SCHEDLAB_REF_C") or default_data_dir().parent / "bench" / "ref_msj.c"
)
# (schedlab policy, C policy or None, load, target: ratio to C, or M events/s without C)
CASES = (
    ("server-filling", "sf", 0.9, 0.5),
    ("server-filling-srpt", "sfsrpt", 0.99, 0.75),
    ("max-weight", None, 0.9, 1.5),
)

WRAPPER = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": done.returncode, "peak_kb": peak_kb, "out": done.stdout[-4000:],
                  "err": done.stderr[-2000:]}))
"""

SCHEDLAB = """
import json, sys
from schedlab.model.compile import compile_model
from schedlab.reproduce.grosof2023 import spec
from schedlab.simulation.simulate import run_model
policy, load, arrivals = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
run_model(compile_model(spec(policy, load, 10_000, "exponential")))
result = run_model(compile_model(spec(policy, load, arrivals, "exponential")))
print(json.dumps({"events": result.events, "loop_s": result.loop_s, "wall_s": result.wall_s,
                  "mean_response_time": result["mean_response_time"].mean}))
"""


def _child(command: list[str]) -> tuple[str, float]:
    """Run ``command`` under the wrapper: (its stdout, its peak RSS in MB)."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    if report["rc"] != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed: {report['err']}")
    return report["out"], report["peak_kb"] / 1024.0


def build_reference(folder: Path) -> Path | None:
    """Compile the C reference (cc -O2, as its header says), or None when it cannot be."""
    compiler = shutil.which("cc")
    if compiler is None or not C_SOURCE.exists():
        return None
    binary = folder / "ref_msj"
    subprocess.run(
        [compiler, "-O2", "-o", str(binary), str(C_SOURCE), "-lm"], check=True, capture_output=True
    )
    return binary


def measure_c(binary: Path, policy: str, load: float, arrivals: int) -> dict:
    out, rss = _child([str(binary), policy, str(load), str(arrivals), "1"])
    mean, events, wall, rate = out.split()
    return {
        "events": int(events),
        "wall_s": float(wall),
        "events_per_s": float(rate),
        "peak_rss_mb": rss,
        "mean_response_time": float(mean),
    }


def measure_schedlab(policy: str, load: float, arrivals: int) -> dict:
    out, rss = _child([sys.executable, "-c", SCHEDLAB, policy, str(load), str(arrivals)])
    data = json.loads(out)
    return {
        "events": data["events"],
        "loop_s": data["loop_s"],
        "wall_s": data["wall_s"],
        "events_per_s": data["events"] / data["loop_s"],
        "wall_events_per_s": data["events"] / data["wall_s"],
        "peak_rss_mb": rss,
        "mean_response_time": data["mean_response_time"],
    }


def _median_round(rounds: list[dict], key: str) -> dict:
    """The round with the median ``key`` (the upper one of the middle two)."""
    return sorted(rounds, key=lambda r: r[key])[len(rounds) // 2]


def run(
    arrivals: int = ARRIVALS, rounds: int = ROUNDS, policies: tuple[str, ...] = ()
) -> list[dict]:
    """Each case ``rounds`` times, schedlab then C back to back in each round (the machine's
    speed drifts by +-20% over seconds on a shared host: a ratio is only meaningful between
    two runs next to each other). Reports the median round's figures and the range of the
    per-round ratios. ``policies``: only these cases (all when empty)."""
    records = []
    with tempfile.TemporaryDirectory() as folder:
        binary = build_reference(Path(folder))
        for policy, c_policy, load, target in CASES:
            if policies and policy not in policies:
                continue
            measured = []
            for _ in range(rounds):
                ours = measure_schedlab(policy, load, arrivals)
                if c_policy is not None and binary is not None:
                    ours["c"] = measure_c(binary, c_policy, load, arrivals)
                    ours["ratio_to_c"] = ours["events_per_s"] / ours["c"]["events_per_s"]
                    c_rate = ours["c"]["events_per_s"]
                    ours["wall_ratio_to_c"] = ours["wall_events_per_s"] / c_rate
                measured.append(ours)
            key = "ratio_to_c" if "ratio_to_c" in measured[0] else "events_per_s"
            record = {
                "name": f"{policy}, k=8, rho={load}, {arrivals:.0e} arrivals",
                "policy": policy,
                "load": load,
                "arrivals": arrivals,
                "rounds": rounds,
                **_median_round(measured, key),
                f"{key}_per_round": [r[key] for r in measured],
            }
            if key == "ratio_to_c":
                record.update({"target_ratio": target, "met": record["ratio_to_c"] >= target})
            elif c_policy is None:
                met = record["events_per_s"] >= target * 1e6
                record.update({"target_m_events_per_s": target, "met": met})
            records.append(record)
    return records


def _print(records: list[dict]) -> None:
    """The table: the loop's rate and ratio to C, and the ratio on the wall time ``simulate``
    reports (Result.wall_s: the job source's window, the loop, the metrics; compilation
    excluded) with that wall time and the loop's."""
    print(
        f"{'run':<48} {'M ev/s':>8} {'C M ev/s':>9} {'ratio':>6} {'wall r':>6} {'wall s':>7} "
        f"{'loop s':>7} {'RSS MB':>7}"
    )
    for r in records:
        c = r.get("c")
        c_rate = f"{c['events_per_s'] / 1e6:9.2f}" if c else f"{'-':>9}"
        ratio = f"{r['ratio_to_c']:6.2f}" if c else f"{'-':>6}"
        wall_ratio = f"{r['wall_ratio_to_c']:6.2f}" if c else f"{'-':>6}"
        spread = r.get("ratio_to_c_per_round") or [x / 1e6 for x in r["events_per_s_per_round"]]
        print(
            f"{r['name']:<48} {r['events_per_s'] / 1e6:8.2f} {c_rate} {ratio} {wall_ratio} "
            f"{r['wall_s']:7.2f} {r['loop_s']:7.2f} {r['peak_rss_mb']:7.0f}  target "
            f"{'met' if r['met'] else 'MISSED'}  (rounds {min(spread):.2f}-{max(spread):.2f})"
        )
        if c:
            print(
                f"{'  C reference':<48} {'':>8} {'':>9} {'':>6} {c['wall_s']:7.2f} "
                f"{c['peak_rss_mb']:7.0f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrivals", type=float, default=ARRIVALS)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="median of this many rounds")
    parser.add_argument(
        "--policy",
        action="append",
        choices=[case[0] for case in CASES],
        help="only this case (repeatable); the results file is written only when all run",
    )
    args = parser.parse_args()
    records = run(int(args.arrivals), args.rounds, tuple(args.policy or ()))
    _print(records)
    if args.policy:
        return
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from run_all import RESULTS

    RESULTS.mkdir(exist_ok=True)
    payload = {"module": "bench_reference", "records": records}
    (RESULTS / "bench_reference.json").write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
