"""``schedlab compare WORKLOAD``: every applicable policy and bound on your workload, ranked."""

from __future__ import annotations

import csv
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from schedlab.cli_support import (
    PluginOption,
    err,
    escape,
    fail,
    load_plugins,
    out,
    print_table,
    runs_progress,
    user_errors,
)


def register(app: typer.Typer) -> None:
    app.command(name="compare")(compare)


@user_errors
def compare(
    workload: Annotated[
        Path,
        typer.Argument(
            help="A simulation spec (TOML: its cluster, workload and model) or a canonical "
            "trace table (Parquet, from `schedlab trace convert`).",
            show_default=False,
        ),
    ],
    family: Annotated[
        str | None,
        typer.Option(
            help="Model family: pooled, packing or loss (default: the spec's model family, else "
            "its policy's family, else pooled)."
        ),
    ] = None,
    loads: Annotated[
        str, typer.Option(help="Loads: START:STOP:STEP (stop included) or a list 0.5,0.8.")
    ] = "0.5:0.9:0.1",
    arrivals: Annotated[
        int | None,
        typer.Option(help="Arrivals per run (default: the spec's; a trace: all).", min=1),
    ] = None,
    replications: Annotated[int, typer.Option(help="Replications per point.", min=1)] = 2,
    policy: Annotated[
        list[str] | None, typer.Option(help="Only these policies (repeatable; default: all).")
    ] = None,
    servers: Annotated[
        int | None, typer.Option(help="Servers k (default: the spec's, or the table's).", min=1)
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the job sequences.", min=0)] = 1,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes (default: all cores).", min=1)
    ] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786.")
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Result directory (default: out/compare-NAME).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    jobs_format: Annotated[
        str | None,
        typer.Option(
            help="Write each run's per-job table to OUT/jobs/POLICY-loadX: parquet, evalys (the "
            "CSV evalys's JobSet.from_csv reads) or swf (pooled family)."
        ),
    ] = None,
    plugin: PluginOption = None,
) -> None:
    """Run every applicable policy (built-in, and the --plugin files' own) on a workload over a
    range of loads, with the analytic bounds that apply; write the ranked summary, figures and
    report to a directory."""
    from schedlab.experiments.compare import default_family, parse_loads, plan, workload_base
    from schedlab.experiments.runner import check_cluster_address, run_tasks
    from schedlab.experiments.store import ResultStore
    from schedlab.report.html import write_report
    from schedlab.report.jobs_formats import check_format
    from schedlab.report.ranking import best_policy, figures, rank, summary
    from schedlab.report.record import ExperimentRecord, provenance, relative_figures, write_record
    from schedlab.report.sweep import swept_axes

    if fmt not in ("table", "csv", "json"):
        fail(f"--format must be table, csv or json, not '{fmt}'")
    load_plugins(plugin)  # their policies join the candidates; workers import the same files
    if cluster is not None:
        check_cluster_address(cluster)
    started = datetime.datetime.now(datetime.UTC)
    base, stem, named = workload_base(workload, servers=servers, arrivals=arrivals, seed=seed)
    fam = family or default_family(base, named)
    if jobs_format is not None:  # each run writes OUT/jobs/<run hash>.parquet (runner.jobs_target)
        check_format(jobs_format, fam)
        base["run"]["jobs"] = "jobs"
    name = f"compare-{stem}"
    the_plan = plan(name, base, fam, parse_loads(loads), policy)
    target = out_dir or Path("out") / name
    store = ResultStore(target)
    store.ensure_writable()
    tasks = the_plan.tasks(replications)
    where = f"Dask cluster {cluster}" if cluster else f"{workers or 'all'} local worker(s)"
    err.print(
        f"{escape(name)}: {len(the_plan.policies)} {fam}-family policies x "
        f"{len(the_plan.loads)} loads x {replications} replications = {len(tasks)} runs on "
        f"{where} -> {escape(str(target))}",
        highlight=False,
    )
    for skipped in the_plan.skipped:
        err.print(f"skipped {skipped.policy}: {escape(skipped.reason)}", highlight=False)
    with runs_progress() as progress:
        run_tasks(tasks, store, workers=workers, cluster=cluster, progress=progress)
    rows = store.read(sorted({t.hash for t in tasks}))
    ranked = rank(rows)
    fcfs_stable = any(r.policy == "fcfs" and r.stable for r in ranked)
    findings = summary(ranked, the_plan.limits, "fcfs" if fcfs_stable else None)
    reference = best_policy(ranked)
    paths = figures(target, name, rows, the_plan.bounds, the_plan.limits, reference)
    if jobs_format is not None:
        _named_jobs(target, tasks, jobs_format, int(base["cluster"].get("servers") or 0))
    log_rows: list[dict] = []
    if workload.suffix == ".parquet" and fam == "pooled":
        lines, views, log_rows = _log_check(base, workload, ranked, target, name)
        findings += lines
        paths += views
    notes = [f"skipped {s.policy}: {s.reason}" for s in the_plan.skipped] + the_plan.notes
    notes += [f"{b.name}: {b.meaning}" for b in the_plan.bounds]
    record = ExperimentRecord(
        name=name,
        kind="compare",
        title=f"every applicable {fam}-family policy on {workload.name}",
        scale=f"{replications} replication(s) per point",
        axes=swept_axes(rows),
        reference=reference,
        figures=relative_figures(target, paths),
        summary=findings,
        notes=notes,
        provenance=provenance(
            started, (datetime.datetime.now(datetime.UTC) - started).total_seconds()
        ),
    )
    write_record(target, record)
    page = write_report(target)
    _print(ranked, fmt, log_rows)
    if fmt == "table":
        for line in findings:
            out.print(escape(line), highlight=False)
        out.print(f"report: {page}", highlight=False)


def _named_jobs(target: Path, tasks: list, fmt: str, k: int) -> None:
    """Each run's per-job table (``OUT/jobs/<run hash>.parquet``) as
    ``OUT/jobs/POLICY-loadX[.replicationR].<fmt's suffix>``."""
    import pyarrow.parquet as pq

    from schedlab.engine.jobs_output import jobs_path
    from schedlab.experiments.runner import jobs_target
    from schedlab.report.jobs_formats import SUFFIX, write_jobs

    for task in tasks:
        source = jobs_path(str(jobs_target(target, task)), task.replication)
        run = f"{task.axes['policy']}-load{task.axes['workload.load']:g}"
        if task.replication:
            run += f".replication{task.replication}"
        write_jobs(pq.read_table(source), source.with_name(run + SUFFIX[fmt]), fmt, k=k, note=run)


def _log_check(
    base: dict, workload: Path, ranked: list, target: Path, name: str
) -> tuple[list[str], list[Path], list[dict]]:
    """The log itself (a line and a row of the table) and the validation line (an SWF-derived
    trace: it keeps the logged waits), with the report's Gantt chart and time series at the
    log's own load."""
    from schedlab.experiments.log_check import (
        logged_waits,
        series_at_native_load,
        top_policies,
        validate,
    )
    from schedlab.report.trace_figures import gantt_figure, series_figure

    tau = float(base["run"].get("slowdown_threshold", 10.0))
    logged = logged_waits(workload, tau, base["run"].get("arrivals"))
    if logged is None:
        return [], [], []
    err.print(
        "replaying the log at its own load: EASY with requested times, top three", highlight=False
    )
    validation, result = validate(base, workload)
    k = int(base["cluster"]["servers"])
    folder = target / "figures"
    paths = gantt_figure(
        result.jobs,
        k,
        folder / f"{name}-gantt",
        f"EASY with requested times at the log's own load {validation.load:.3g}",
    )
    top = top_policies(ranked, validation.load)
    if top:
        paths += series_figure(
            series_at_native_load(base, top),
            folder / f"{name}-over-time",
            f"the top {len(top)} policies replaying the log at its own load {validation.load:.3g}",
        )
    return [logged.line(), validation.line()], paths, [logged.record(validation.load)]


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _print(ranked, fmt: str, log_rows: list[dict]) -> None:
    from schedlab.report.labels import label

    fields = ["load", "rank", "policy", "mean_response_time", "lo", "hi", "stable", "reliable"]
    fields += ["bound", "ratio_to_best"]
    records = [
        {
            "load": r.load,
            "rank": r.rank,
            "policy": r.policy,
            "mean_response_time": _num(r.mean),
            "lo": _num(r.lo),
            "hi": _num(r.hi),
            "stable": r.stable,
            "reliable": r.reliable,
            "bound": r.bound,
            "ratio_to_best": _num(r.ratio_to_best),
        }
        for r in ranked
    ]
    records += log_rows
    if fmt == "json":
        sys.stdout.write(json.dumps(records) + "\n")
        return
    if fmt == "csv":
        w = csv.DictWriter(sys.stdout, fieldnames=fields)
        w.writeheader()
        w.writerows(records)
        return
    table = Table(show_header=True, header_style="bold")
    for col in (
        label("load"),
        "rank",
        "policy",
        label("mean_response_time") + " (95% CI)",
        "x best",
    ):
        table.add_column(escape(col), justify="left" if col == "policy" else "right")
    for r in ranked:
        if not r.stable:
            cell, ratio = "[red]unstable[/]", ""
        else:
            cell = escape(
                f"{r.mean:.4g} [{r.lo:.4g}, {r.hi:.4g}]" if math.isfinite(r.lo) else f"{r.mean:.4g}"
            )
            ratio = f"{r.ratio_to_best:.3g}" if math.isfinite(r.ratio_to_best) else ""
        rank_cell = "bound" if r.bound else (str(r.rank) if r.rank else "-")
        table.add_row(f"{r.load:g}", rank_cell, escape(r.policy), cell, ratio)
    for row in log_rows:  # the log as the machine ran it, at its own load (never ranked)
        table.add_row(
            f"{row['load']:.3g}", "log", row["policy"], f"{row['mean_response_time']:.4g}", ""
        )
    print_table(table)
