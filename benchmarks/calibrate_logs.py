"""``schedlab trace calibrate`` on every SWF log of a folder: issue 47's targets judged log by
log (calibrated EASY mean wait within 25% of the logged and per-job Spearman >= 0.5 on the
second half; the calibrated replay closer to the log than the plain one).

The logs: every ``*.swf`` / ``*.swf.gz`` in ``--logs`` (default: the data folder's ``swf/``,
``$SCHEDLAB_DATA``; the shipped KTH-SP2, HPC2N and LLNL-Thunder, and any Parallel Workloads
Archive log a user adds there). Each runs in a fresh process, one after another; a log without
logged waits is listed with the command's one-line refusal. *Closer* means the calibrated mean
wait ratio is nearer 1 on a log scale and its Spearman is at least the plain one's. The record
(``results/calibrate_logs.json``) keeps every log's validation, context and wall time; a Markdown
table is printed for docs/traces.md::

    PYTHONPATH=src .venv/bin/python benchmarks/calibrate_logs.py [--logs DIR] [--downtime 600]
        [--capacity-window 3600] [--record FILE]

With ``--capacity-window`` each record keeps the profile's window and the steps replayed, not
its per-window bounds (``calibration.json`` of ``trace calibrate`` has them).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_compare_logs import write_record

RESULTS = Path(__file__).resolve().parent / "results" / "calibrate_logs.json"
GOOD_MEAN, GOOD_SPEARMAN = 0.25, 0.5  # issue 47's targets (experiments/calibrate.py)


def calibrate_one(log: Path, out: Path, downtime: float, window: float | None = None) -> dict:
    """One log through ``schedlab trace calibrate`` in a fresh process: its record or its
    one-line refusal, and the wall time."""
    cli = "from schedlab.cli import main; main()"
    command = [sys.executable, "-c", cli, "trace", "calibrate", str(log), "-o", str(out)]
    command += ["--downtime", f"{downtime:g}"] if downtime > 0 else []
    command += ["--capacity-window", f"{window:g}"] if window is not None else []
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        refused = lines[-1].replace(str(log), log.name) if lines else "failed"
        return {"log": log.name, "wall_s": wall, "refused": refused}
    record = json.loads((out / "calibration.json").read_text())
    record["log"] = log.name  # not the folder of this machine
    if record.get("profile"):
        record["profile"] = {"window": record["profile"]["window"]}
    return {"log": log.name, "wall_s": wall, "calibration": record}


def _distance(ratio: float | None) -> float:
    return abs(math.log(ratio)) if ratio and ratio > 0 else math.inf


def verdict(record: dict) -> dict:
    """Targets met, and whether the calibrated replay is closer to the log than the plain one."""
    plain, cal = record["plain"], record["calibrated"]
    spearman = cal["spearman"] if cal["spearman"] is not None else -math.inf
    return {
        "mean_within_25pct": abs(cal["mean_ratio"] - 1) <= GOOD_MEAN,
        "spearman_at_least_half": spearman >= GOOD_SPEARMAN,
        "closer_than_plain": _distance(cal["mean_ratio"]) <= _distance(plain["mean_ratio"])
        and spearman >= (plain["spearman"] if plain["spearman"] is not None else -math.inf),
    }


def markdown(rows: list[dict]) -> str:
    """The table for docs/traces.md."""
    head = (
        "| log | plain: mean / logged, Spearman | calibrated: mean / logged, Spearman | "
        "context fitted | targets met | closer than plain | wall |\n|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for row in rows:
        if "refused" in row:
            lines.append(f"| {row['log']} | {row['refused']} | | | | | {row['wall_s']:.0f} s |")
            continue
        c = row["calibration"]
        plain, cal, v = c["plain"], c["calibrated"], row["verdict"]
        fitted = c["fitted"]
        order = " > ".join(map(str, fitted.get("queue_order") or [])) or "arrival"
        wait = fitted.get("queue_rank_wait") or 0.0  # seconds one queue rank is worth (0: strict)
        order += f", a rank worth {wait / 3600:g} h of waiting" if wait else ""
        prime = c.get("fitted_prime_time")  # jobs over max_request held in weekday hours
        held = (
            f", jobs over {prime['max_request'] / 3600:g} h held weekdays "
            f"{prime['hours'][0]:02.0f}-{prime['hours'][1]:02.0f} h"
            if prime
            else ""
        )
        context = (
            f"{c['fitted_capacity']} of {c['max_procs']} processors, user limit "
            f"{fitted.get('user_limit') or 'none'}, queue order {order}{held}"
        )
        met = (
            "both"
            if v["mean_within_25pct"] and v["spearman_at_least_half"]
            else (
                "mean"
                if v["mean_within_25pct"]
                else "Spearman"
                if v["spearman_at_least_half"]
                else "no"
            )
        )
        lines.append(
            f"| {row['log']} | x{plain['mean_ratio']:.3g}, {plain['spearman']:.3f} | "
            f"x{cal['mean_ratio']:.3g}, {cal['spearman']:.3f} | {context} | {met} | "
            f"{'yes' if v['closer_than_plain'] else 'no'} | {row['wall_s']:.0f} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, default=None, help="folder of SWF logs")
    parser.add_argument("--downtime", type=float, default=600.0, help="0: no downtime held")
    parser.add_argument(
        "--capacity-window", type=float, default=None, help="hold the log's capacity profile"
    )
    parser.add_argument(
        "--record", type=Path, default=RESULTS, help=f"the JSON record (default {RESULTS.name})"
    )
    args = parser.parse_args()
    if args.logs is None:
        from schedlab.datasets import data_dir

        args.logs = data_dir() / "swf"
    logs = sorted(p for p in args.logs.iterdir() if p.name.endswith((".swf", ".swf.gz")))
    if not logs:
        raise SystemExit(f"{args.logs}: no *.swf or *.swf.gz log")
    rows = []
    with tempfile.TemporaryDirectory(prefix="calibrate-logs-") as tmp:
        for log in logs:
            row = calibrate_one(log, Path(tmp) / log.name, args.downtime, args.capacity_window)
            if "calibration" in row:
                row["verdict"] = verdict(row["calibration"])
            print(f"{log.name}: {row['wall_s']:.0f} s", flush=True)
            rows.append(row)
    table = markdown(rows)
    print(table)
    judged = [r for r in rows if "verdict" in r]
    summary = {
        "logs": len(rows),
        "judged": len(judged),
        "both_targets": sum(
            r["verdict"]["mean_within_25pct"] and r["verdict"]["spearman_at_least_half"]
            for r in judged
        ),
        "closer_than_plain": sum(r["verdict"]["closer_than_plain"] for r in judged),
    }
    print(json.dumps(summary))
    write_record(
        args.record,
        {
            "summary": summary,
            "downtime": args.downtime,
            "capacity_window": args.capacity_window,
            "rows": rows,
            "table": table,
        },
    )


if __name__ == "__main__":
    main()
