"""``schedlab run``, ``schedlab results`` and ``schedlab plot``: sweeps and their results."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from schedlab import outputs
from schedlab.cli_support import (
    FormatOption,
    OutputFormat,
    PluginOption,
    emit_rows,
    err,
    escape,
    fail,
    format_number,
    load_plugins,
    out,
    runs_progress,
    unknown,
    user_errors,
)


def register(app: typer.Typer) -> None:
    app.command(name="run")(run)
    app.command(name="results")(results)
    app.command(name="plot")(plot)


def _fmt(x: float) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.5g}"


def _cell(row: dict[str, Any], metric: str) -> str:
    if not row["stable"]:
        return "[red]unstable[/]"
    reliable = row.get(f"{metric}_reliable", True)
    mean, lo, hi = row[metric], row[f"{metric}_lo"], row[f"{metric}_hi"]
    if not reliable:  # never an interval that cannot be right (docs/guarantees.md)
        return f"[yellow]unreliable[/] ({_fmt(mean)}; {escape(row.get(f'{metric}_note', ''))})"
    if lo is None or not math.isfinite(lo):
        return _fmt(mean)
    return escape(f"{_fmt(mean)} [{_fmt(lo)}, {_fmt(hi)}]")


@user_errors
def run(
    experiment: Annotated[Path, typer.Argument(help="Experiment spec (TOML).")],
    workers: Annotated[
        int | None,
        typer.Option(help="Local worker processes (default: the number of cores).", min=1),
    ] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786.")
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Result directory (default: out/<experiment name>)."),
    ] = None,
    cluster_security: Annotated[
        Path | None,
        typer.Option(
            help="TOML or YAML file with tls_ca_file, tls_client_cert, tls_client_key for a "
            "TLS Dask cluster (docs/guarantees.md#dask)."
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    jobs_format: Annotated[
        str | None,
        typer.Option(
            help="Also write each run's per-job table (runs whose spec sets run.jobs to a path: "
            "DIR/jobs/<run hash>.parquet) beside it as evalys (the CSV evalys's JobSet.from_csv "
            "reads) or swf (pooled family)."
        ),
    ] = None,
    plugin: PluginOption = None,
) -> None:
    """Run a sweep; finished runs are stored as they end, stored runs are never rerun.

    Longest runs start first. The per-point summary goes to stdout in --format; progress and
    the run counts go to stderr."""

    from schedlab.api import run_experiment
    from schedlab.experiments.runner import check_cluster_address
    from schedlab.experiments.security import load_security
    from schedlab.experiments.spec import load_experiment

    load_plugins(plugin)
    if cluster_security is not None and cluster is None:
        fail("--cluster-security needs --cluster")
    security = load_security(cluster_security) if cluster_security is not None else None
    if cluster is not None:
        check_cluster_address(cluster, security)
    started = datetime.datetime.now(datetime.UTC)
    exp = load_experiment(experiment)
    target = out_dir or Path("out") / exp.spec.name
    if jobs_format is not None:
        _check_jobs_format(exp.tasks(), jobs_format, experiment)
    n_runs = len(exp.tasks())
    where = f"Dask cluster {cluster}" if cluster else f"{workers or 'all'} local worker(s)"
    err.print(
        f"experiment [bold]{escape(exp.spec.name)}[/]: {n_runs} runs "
        f"({n_runs // exp.spec.replications} points x {exp.spec.replications} "
        f"replications) on {where} -> {escape(str(target))}",
        soft_wrap=True,
    )
    with runs_progress() as progress:
        res = run_experiment(
            exp, target, workers=workers, client=cluster, security=security, progress=progress
        )
    by_other = f", {res.elsewhere} stored by another sweep" if res.elsewhere else ""
    err.print(f"{res.ran} runs done, {res.cached} already stored{by_other}")
    _record_sweep(target, exp.spec, res.rows, started)
    if jobs_format is not None and jobs_format != "parquet":
        from schedlab.report.jobs_formats import sweep_jobs

        written = sweep_jobs(target, exp.tasks(), jobs_format)
        err.print(f"{len(written)} per-job tables written as {jobs_format} in {target / 'jobs'}")
    print_summary(res.rows, res.metrics, fmt, option=f"{experiment}: outputs.metrics")


def _check_jobs_format(tasks: list[Any], fmt: str, experiment: Path) -> None:
    """--jobs-format: a known format that every run's family can take, and runs that write
    their per-job table (one line otherwise, before anything runs)."""
    import json

    from schedlab.model.spec import parse_spec
    from schedlab.report.jobs_formats import check_format, run_family

    check_format(fmt)
    specs = [parse_spec(json.loads(s)) for s in {t.spec_json for t in tasks}]
    for spec in specs:
        check_format(fmt, run_family(spec))
    if not any(isinstance(s.run.jobs, str) for s in specs):
        fail(
            f"--jobs-format: the runs of {experiment} write no per-job table; set run.jobs to a "
            'path (e.g. "jobs.parquet") in its spec'
        )


def _record_sweep(
    target: Path, spec: Any, rows: list[dict[str, Any]], started: datetime.datetime
) -> None:
    """experiment.json beside the runs (axes, metrics, provenance) for `schedlab report`."""
    from schedlab.report.experiment_record import ExperimentRecord, provenance, write_record
    from schedlab.report.sweep import swept_axes

    wall = (datetime.datetime.now(datetime.UTC) - started).total_seconds()
    write_record(
        target,
        ExperimentRecord(
            name=spec.name,
            kind="sweep",
            scale=f"{spec.replications} replication(s) per point",
            axes=swept_axes(rows),
            metrics=list(spec.outputs.metrics),
            provenance=provenance(started, wall),
        ),
    )


def print_summary(
    rows: list[dict[str, Any]], metrics: list[str], fmt: OutputFormat, option: str = "--metric"
) -> None:
    """The per-point summary of stored runs (schedlab.api.point_summary) in a format."""
    from schedlab.api import axes_of, known_metrics, point_summary

    for m in metrics:
        if rows and m not in known_metrics(rows):
            unknown("metric", m, known_metrics(rows), option)
    if not rows:
        if fmt is OutputFormat.table:
            out.print("no stored runs")
        else:
            emit_rows([], fmt)
        return
    summary = point_summary(rows, metrics)
    if fmt is not OutputFormat.table:
        emit_rows(summary, fmt)
        return
    by = ["experiment", *axes_of(rows)]
    shown = [c for c in by if len({repr(r.get(c)) for r in rows}) > 1] or by[:1]
    emit_rows(
        summary,
        fmt,
        headers=[*shown, "runs", *(f"{m} (95% CI)" for m in metrics)],
        cells=lambda r: [
            *(escape(str(r[c])) for c in shown),
            str(r["runs"]),
            *(_cell(r, m) for m in metrics),
        ],
    )


@user_errors
def results(
    directory: Annotated[Path, typer.Argument(help="Result directory of `schedlab run`.")],
    query: Annotated[
        str | None,
        typer.Option(
            help='SQL over the view `runs` (one row per run), e.g. "select policy, load, '
            'mean_response_time from runs".'
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(help="Metric(s) for the summary (default mean_response_time)."),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Summarize stored runs per point, or query them with DuckDB SQL."""
    from schedlab.experiments.store import ResultStore

    if not directory.is_dir():
        fail(f"{directory}: no such result directory")
    store = ResultStore(directory)
    if query is None:
        print_summary(store.read(), metric or ["mean_response_time"], fmt)
        return
    import duckdb

    con = store.connect()
    try:
        rel = con.execute(query)
    except duckdb.Error as exc:
        fail(escape(f"query failed: {str(exc).splitlines()[0]}"))
    columns = [d[0] for d in rel.description]
    rows = [dict(zip(columns, r, strict=True)) for r in rel.fetchall()]
    emit_rows(
        rows,
        fmt,
        columns=columns,
        cells=lambda r: [escape(format_number(r[c])) for c in columns],
    )


@user_errors
def plot(
    directory: Annotated[Path, typer.Argument(help="Result directory of `schedlab run`.")],
    x: Annotated[str, typer.Option(help="Column on the x axis, e.g. load.")],
    y: Annotated[str, typer.Option(help="Metric, e.g. mean_response_time.")] = (
        "mean_response_time"
    ),
    hue: Annotated[str, typer.Option(help="Column that makes the series.")] = "policy",
    ratio_to: Annotated[
        str | None,
        typer.Option(help="Plot y relative to this hue value (paired on common random numbers)."),
    ] = None,
    logy: Annotated[bool, typer.Option("--logy", help="Logarithmic y axis.")] = False,
    where: Annotated[str | None, typer.Option(help="SQL filter on the runs.")] = None,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="Figure path without suffix (PNG, SVG and CSV are written)."),
    ] = None,
) -> None:
    """Plot a metric against a column with 95% CI bands; unstable points are marked."""
    from schedlab.experiments.store import ResultStore
    from schedlab.report.figures import line_plot, policy_colors
    from schedlab.report.labels import Units, policy_label, with_unit
    from schedlab.report.labels import label as label_of
    from schedlab.report.points import plot_points

    if not directory.is_dir():
        fail(f"{directory}: no such result directory")
    rows = select_rows(ResultStore(directory), where)
    points, label = plot_points(rows, x=x, y=y, hue=hue, ratio_to=ratio_to)
    stem = safe_name(f"{y}_vs_{x}" + (f"_ratio_to_{ratio_to}" if ratio_to else ""))
    target = out_file or outputs.inside(directory, f"figures/{stem}")
    everyone = {str(r.get(hue)) for r in ResultStore(directory).read()}
    paths = line_plot(
        points,
        target,
        x=x,
        y=label,
        hue=hue,
        logy=logy,
        ratio=ratio_to is not None,
        ylabel=with_unit(label, Units.of(rows)),  # the runs' own time unit (s for a log)
        colors=policy_colors(everyone),
        names={n: policy_label(n) for n in everyone} if hue == "policy" else None,
        title=f"{_experiment_name(rows, directory)}: {label_of(label)}",
    )
    for p in paths:
        out.print(str(p))


def _experiment_name(rows: list[dict[str, Any]], directory: Path) -> str:
    """The experiment(s) the rows come from, else the directory's name (never a path)."""
    names = sorted({str(r.get("experiment") or "") for r in rows} - {""})
    return ", ".join(names) if names else directory.resolve().name


def safe_name(text: str) -> str:
    """A file name from column names: anything but letters, digits, '-' and '_' becomes '_'."""
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")


def select_rows(store: Any, where: str | None) -> list[dict[str, Any]]:
    import duckdb

    con = store.connect()
    sql = "select * from runs" + (f" where {where}" if where else "")
    try:
        rel = con.execute(sql)
    except duckdb.Error as exc:
        fail(f"--where: {str(exc).splitlines()[0]}")
    columns = [d[0] for d in rel.description]
    rows = [dict(zip(columns, r, strict=True)) for r in rel.fetchall()]
    if not rows:
        fail("no stored runs match")
    return rows
