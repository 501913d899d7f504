"""``schedlab trace calibrate LOG``: the usable capacity, per-user running limit and queue order
of an SWF log fitted on its first half by time and judged on its second, plain replay against
calibrated (issue 47; see
:mod:`schedlab.experiments.calibrate` and docs/traces.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from schedlab.cli_support import err, out, print_table, user_errors

VALIDATION_COLUMNS = (
    ("replay", "replay"),
    ("capacity", "procs"),
    ("user_limit", "user limit"),
    ("queue_order", "queue order"),
    ("queue_rank_wait", "rank worth"),
    ("partitions", "partitions"),
    ("prime_time", "prime time"),
    ("mean_ratio", "mean wait / logged"),
    ("p95_ratio", "p95 wait / logged"),
    ("pearson", "Pearson"),
    ("spearman", "Spearman"),
    ("kendall_start", "Kendall tau (starts)"),
)


def validation_table(record: dict) -> Table:
    """The plain and calibrated judgements of a calibration record as a table."""
    from schedlab.experiments.calibrate import wait_words

    table = Table(box=box.SIMPLE_HEAD, title=f"second half of {Path(record['log']).name}")
    for _, label in VALIDATION_COLUMNS:
        left = label == "replay"
        table.add_column(label, justify="left" if left else "right", no_wrap=left)
    for name in ("plain", "calibrated", "hindsight"):
        row = record[name]
        wait = row["queue_rank_wait"]  # seconds of waiting a queue rank is worth (0: strict)
        worth = (wait_words(wait) if wait else "strict") if row["queue_order"] else "none"
        table.add_row(
            *(
                worth if key == "queue_rank_wait" else cell(key, row[key])
                for key, _ in VALIDATION_COLUMNS
            )
        )
    return table


def cell(key: str, value: object) -> str:
    """A validation table's cell: ratios and correlations to 3 digits, no user limit and no
    queue order as "none", partitions as id:processors (one pool: "none"), a prime time as
    ">4 h 08-17" (the jobs asking more than 4 h held on weekdays 08:00-17:00; none: "none")."""
    if isinstance(value, float):
        return f"{value:.3g}"
    if key == "user_limit" and not value:
        return "none"
    if key == "queue_order":
        return " > ".join(map(str, value)) if value else "none"
    if key == "partitions":
        return " ".join(f"{p['id']}:{p['processors']}" for p in value) if value else "none"
    if key == "prime_time":
        if not value:
            return "none"
        start, end = value["hours"]
        return f">{value['max_request'] / 3600:g} h {start:02.0f}-{end:02.0f}"
    return str(value)


def holds_downtime(policy: str) -> bool:
    """Whether the policy's settings have a ``capacity_schedule``, through which a replay
    holds the logged downtime (an unknown name is a one-line error)."""
    from schedlab.policies.registry import get_policy

    return "capacity_schedule" in get_policy(policy).kernels.config.model_fields


def add_command(trace_app: typer.Typer) -> None:
    """``schedlab trace calibrate`` (called by :func:`.trace.register`)."""
    trace_app.command("calibrate")(calibrate_cmd)


@user_errors
def calibrate_cmd(
    log: Annotated[Path, typer.Argument(help="An SWF log (gzip'd or not).")],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for calibration.json and the figure.")
    ] = Path("calibration"),
    policy: Annotated[
        str, typer.Option(help="The replayed policy (pooled family).")
    ] = "easy-backfill",
    seed: Annotated[int, typer.Option(help="Recorded seed of the replays.")] = 1,
    downtime: Annotated[
        float | None,
        typer.Option(
            help="Hold the log's downtime in the calibrated replay: intervals at least this many "
            "seconds long in which the logged schedule ran no job while a job waited "
            "(a policy with a capacity schedule: every backfilling policy, fcfs)."
        ),
    ] = None,
    capacity_window: Annotated[
        float | None,
        typer.Option(
            help="Hold the log's usable capacity over time in the calibrated replay: per window "
            "of this many seconds, the most processors a work-conserving scheduler could have "
            "had while jobs waited as logged, capped at the fitted capacity but never below "
            "the most the log ran in it (a policy with a capacity schedule)."
        ),
    ] = None,
) -> None:
    """Fit the log's usable capacity, per-user running limit (among none and the limits the
    logged schedule shows) and queue-priority order (read from the logged overtaking) on its
    first half by time and judge plain against
    calibrated replay on the second half: mean and p95 wait ratio to the logged, per-job
    Pearson and Spearman of waits, Kendall's tau of start times; a table, a figure (logged
    against replayed wait per job, log axes) and OUT/calibration.json."""
    from schedlab import outputs
    from schedlab.errors import SchedlabError
    from schedlab.experiments.calibrate import calibrate, prime_words, queue_words, verdict
    from schedlab.report.calibration_figure import Waits, calibration_figure
    from schedlab.workloads.traces import get_meta, read
    from schedlab.workloads.traces.swf_context import read_context

    if downtime is not None and (downtime <= 0 or not holds_downtime(policy)):
        raise SchedlabError(
            f"--downtime {downtime:g}: needs a positive number of seconds and a policy with a "
            f"capacity schedule (every backfilling policy, fcfs; not {policy})"
        )
    if capacity_window is not None and (capacity_window <= 0 or not holds_downtime(policy)):
        raise SchedlabError(
            f"--capacity-window {capacity_window:g}: needs a positive number of seconds and a "
            f"policy with a capacity schedule (every backfilling policy, fcfs; not {policy})"
        )
    table = read(log, "swf")
    if table.num_rows == 0:
        raise SchedlabError(
            f"{log}: no job rows (an SWF row is a line of 18 numbers after the ';' header): "
            "nothing to calibrate"
        )
    k = int(get_meta(table).get("k") or 0)
    context = read_context(log, table, k)
    for line in context.lines():
        err.print(line, highlight=False, markup=False)
    err.print(f"calibrating {log.name} ({table.num_rows:,} jobs) ...", highlight=False)
    policy_spec = {"name": policy}
    if policy.endswith("backfill"):
        policy_spec["durations"] = "estimate"
    declared = {g.id: g.declared for g in context.partitions if g.declared is not None}
    result = calibrate(table, str(log), k, policy_spec, seed, downtime, declared, capacity_window)
    record = {**result.record(), "context": context.record(), "seed": seed}
    outputs.make_dirs(out_dir)
    with outputs.atomic(out_dir / "calibration.json") as tmp:
        tmp.write_text(json.dumps(record, indent=1, default=_plain) + "\n")
    held = f", capacity profile in windows of {capacity_window:g} s" if result.profile else ""
    figure = calibration_figure(
        {
            f"plain ({result.plain.capacity} processors)": Waits(
                result.plain.logged, result.plain.waits
            ),
            f"calibrated ({result.fitted.described()}{held})": Waits(
                result.calibrated.logged, result.calibrated.waits
            ),
        },
        out_dir / "calibration",
        f"{log.name}, {policy}: jobs submitted in the second half ({result.plain.jobs:,})",
    )
    print_table(validation_table(record))
    for line in verdict(result):
        out.print(line, highlight=False)
    out.print(
        f"fitted on the first half ({result.fit_jobs:,} jobs): usable capacity "
        f"{result.fitted_capacity} of {k} processors, user limit "
        f"{result.fitted.user_limit or 'none'}, queue order "
        f"{queue_words(result.fitted.queue_order, result.fitted.queue_rank_wait)}, partitions "
        f"{cell('partitions', result.record()['fitted_partitions'])}, "
        f"{prime_words(result.fitted.prime_time)}, {len(result.downtime)} "
        f"logged downtime "
        f"intervals held ({result.clipped:,} wider jobs replayed on "
        f"all of it); written: {out_dir / 'calibration.json'}, "
        + ", ".join(str(p) for p in figure),
        highlight=False,
    )


def _plain(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)
