"""``schedlab compare WORKLOAD``: every applicable policy and bound on your workload, ranked."""

from __future__ import annotations

import contextlib
import csv
import datetime
import json
import math
import resource
import sys
import time
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
    table_fits,
    user_errors,
)

# The policy a log's replay is checked with: EASY backfilling with the users' requested times,
# the scheduler closest to what the logged machines ran (Mu'alem & Feitelson 2001).
VALIDATION_POLICY = {"name": "easy-backfill", "durations": "estimate"}
VALIDATION_DESCRIBED = "EASY with requested times (easy-backfill, durations = estimate)"


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
        str | None,
        typer.Option(
            help="Loads: START:STOP:STEP (stop included), a list 0.5,0.8, or 'native' (a trace "
            "at its own arrival times; may be listed: native,0.9). Default: native for a trace, "
            "0.5:0.9:0.1 for a spec.",
            show_default=False,
        ),
    ] = None,
    arrivals: Annotated[
        int | None,
        typer.Option(help="Arrivals per run (default: the spec's; a trace: all).", min=1),
    ] = None,
    replications: Annotated[
        int | None,
        typer.Option(
            help="Replications per point (default 2; a trace replays once: its intervals are "
            "batch means within the replay).",
            min=1,
            show_default=False,
        ),
    ] = None,
    metric: Annotated[
        str,
        typer.Option(
            help="Rank by this metric: mean_waiting_time, p50/p95/p99_waiting_time, "
            "mean_bounded_slowdown, p95_bounded_slowdown, mean_response_time, utilization; "
            "a trace: utilization_over_makespan, loss_of_capacity, makespan."
        ),
    ] = "mean_response_time",
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
    memory_budget: Annotated[
        float | None,
        typer.Option(
            help="GiB the comparison may hold at once (its worker processes and itself); a log "
            "whose replay needs more is refused before any run. Default: the memory budget of "
            "every run ($SCHEDLAB_MEMORY_BUDGET, else 80% of the memory available).",
            min=0.0,
            show_default=False,
        ),
    ] = None,
    all_policies: Annotated[
        bool,
        typer.Option(
            "--all-policies",
            help="On a trace, rank every policy together (default: only what a batch cluster "
            "can run, non-preemptive without exact sizes; the others apart, as bounds and "
            "idealized policies).",
        ),
    ] = False,
    calibrated: Annotated[
        bool,
        typer.Option(
            "--calibrated",
            help="On an SWF-derived table: rank under the context `schedlab trace calibrate` "
            "fits on the log's first half (usable capacity; per-user running limit and queue "
            "order where a policy takes them), with its validation on the second half.",
        ),
    ] = False,
    downtime: Annotated[
        float | None,
        typer.Option(
            help="With --calibrated: hold the log's downtime (intervals at least this many "
            "seconds long in which the logged schedule ran no job while a job waited) in the "
            "calibration and, at the log's own load, in every policy that takes a capacity "
            "schedule.",
            min=0.0,
            show_default=False,
        ),
    ] = None,
    capacity_window: Annotated[
        float | None,
        typer.Option(
            help="With --calibrated: hold the log's capacity profile in windows of this many "
            "seconds (`schedlab trace calibrate --capacity-window`) in the calibration and in "
            "every policy that takes a capacity schedule.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run every applicable policy (built-in, and the --plugin files' own) on a workload over a
    range of loads, with the analytic bounds that apply; write the ranked summary, figures and
    report to a directory."""
    from schedlab.experiments.compare import (
        check_memory,
        default_family,
        is_trace,
        jobs_covered,
        parse_loads,
        plan,
        split_native,
        workload_base,
    )
    from schedlab.experiments.runner import check_cluster_address, default_workers, run_tasks
    from schedlab.experiments.store import ResultStore
    from schedlab.report.experiment_record import (
        ExperimentRecord,
        provenance,
        relative_figures,
        write_record,
    )
    from schedlab.report.html import write_report
    from schedlab.report.jobs_formats import check_format
    from schedlab.report.labels import HPC_METRICS, Units
    from schedlab.report.ranking import IDEALIZED, best_policy, figures, rank, summary
    from schedlab.report.sweep import swept_axes

    if fmt not in ("table", "csv", "json"):
        fail(f"--format must be table, csv or json, not '{fmt}'")
    if metric not in HPC_METRICS and not metric.startswith("utilization["):
        fail(f"--metric must be one of {', '.join(HPC_METRICS)}, not '{metric}'")
    load_plugins(plugin)  # their policies join the candidates; workers import the same files
    if cluster is not None:
        check_cluster_address(cluster)
    started = datetime.datetime.now(datetime.UTC)
    base, stem, named = workload_base(workload, servers=servers, arrivals=arrivals, seed=seed)
    calibration_lines: list[str] = []
    context: dict = {}
    if downtime is not None and not calibrated:
        fail("--downtime: only with --calibrated (the log's downtime is part of its context)")
    if capacity_window is not None and not calibrated:
        fail("--capacity-window: only with --calibrated (the log's profile is part of its context)")
    if calibrated:
        target = out_dir or Path("out") / f"compare-{stem}"
        workload, calibration_lines, context = _calibrated(
            workload, base, target, seed, downtime, capacity_window
        )
        base, _, named = workload_base(workload, servers=None, arrivals=arrivals, seed=seed)
    trace = is_trace(base)
    covers = jobs_covered(base)  # said by every table and figure (issue 43 item 4)
    if trace and replications is not None and replications > 1:
        fail(
            "--replications: a trace replay is the same every time (the log fixes every job); "
            "its intervals come from batch means within the one replay"
        )
    replications = replications or (1 if trace else 2)
    native, numbers = split_native(loads or ("native" if trace else "0.5:0.9:0.1"))
    if metric in ("makespan", "utilization_over_makespan", "loss_of_capacity") and not trace:
        fail(f"--metric {metric}: only a finite log replay has a makespan")
    fam = family or default_family(base, named)
    if jobs_format is not None:  # each run writes OUT/jobs/<run hash>.parquet (runner.jobs_target)
        check_format(jobs_format, fam)
        base["run"]["jobs"] = "jobs"
    name = f"compare-{stem}"
    log_check = workload.suffix == ".parquet" and fam == "pooled"
    the_plan = plan(
        name,
        base,
        fam,
        parse_loads(numbers) if numbers else [],
        policy,
        native=native,
        all_policies=all_policies,
        native_jobs=log_check,
        context=context,
    )
    target = out_dir or Path("out") / name
    store = ResultStore(target)
    store.ensure_writable()
    tasks = the_plan.tasks(replications)
    local = 0 if cluster else min(workers or default_workers(), len(tasks))
    check_memory(the_plan, local, memory_budget, workload)
    where = f"Dask cluster {cluster}" if cluster else f"{workers or 'all'} local worker(s)"
    err.print(
        f"{escape(name)}: {len(the_plan.policies)} {fam}-family policies x "
        f"{len(the_plan.loads)} loads x {replications} replications = {len(tasks)} runs on "
        f"{where} -> {escape(str(target))}",
        highlight=False,
    )
    if the_plan.left_out:
        err.print(escape(the_plan.left_out_line()), highlight=False)
    for skipped in the_plan.skipped:
        err.print(f"skipped {skipped.policy}: {escape(skipped.reason)}", highlight=False)
    for warning in the_plan.warnings:
        err.print(f"note: {escape(warning)}", highlight=False)
    stored = len(store.done() & {t.hash for t in tasks})
    if stored:
        err.print(
            f"resuming: {stored} of {len({t.hash for t in tasks})} runs already in "
            f"{escape(str(target))} (not run again)",
            highlight=False,
        )
    phases = Phases()
    with phases.phase("runs") as progress:
        run_tasks(tasks, store, workers=workers, cluster=cluster, progress=progress)
    rows = store.read(sorted({t.hash for t in tasks}))
    shown = _shown(rows)
    if metric == "utilization":
        metric = next((m for m in shown if m.startswith("utilization")), metric)
    if metric not in shown:
        fail(f"--metric {metric}: no run measured it (measured: {', '.join(shown)})")
    units = Units.of(rows)
    ranked = rank(rows, metric, tuple(shown), frozenset(the_plan.idealized))
    fcfs_stable = any(r.policy == "fcfs" and r.stable for r in ranked)
    findings = summary(
        ranked,
        the_plan.limits,
        "fcfs" if fcfs_stable else None,
        metric,
        units=units,
        native=the_plan.native,
    )
    reference = best_policy(ranked)
    paths = []
    ordered = [metric, *(x for x in shown if x != metric)]  # the ranked metric's figures first
    with phases.phase("figures") as progress:
        for i, m in enumerate(ordered):
            progress(i, len(ordered))
            bounds = the_plan.bounds if m == "mean_response_time" else []
            ratio_to = reference if m == metric else None  # the ratio figure of the ranked metric
            paths += figures(
                target,
                name,
                rows,
                bounds,
                the_plan.limits,
                ratio_to,
                m,
                units,
                the_plan.idealized,
                covers=covers,
            )
    if jobs_format is not None:
        with phases.phase("jobs output") as progress:
            _named_jobs(target, tasks, jobs_format, the_plan.k, progress)
    log_rows: list[dict] = []
    if log_check:
        with phases.phase("log check") as progress:
            lines, views, log_rows = _log_check(
                the_plan, workload, ranked, target, tasks, store, workers, progress, covers
            )
        findings += lines
        paths += views
    if calibrated:
        calibration_lines.append(the_plan.context_line())
    findings = calibration_lines + findings
    notes = [f"skipped {s.policy}: {s.reason}" for s in the_plan.skipped] + the_plan.warnings
    if the_plan.left_out:
        notes.append(the_plan.left_out_line())
    notes += the_plan.notes
    notes += [f"{b.name}: {b.meaning}" for b in the_plan.bounds]
    if the_plan.idealized:
        notes.append(
            f"ranked apart as {IDEALIZED} (they preempt or need exact sizes: no batch cluster "
            f"runs them; --all-policies ranks them with the others): "
            + ", ".join(the_plan.idealized)
        )
    notes.append(_units_note(units, trace, the_plan.native, covers))
    record = ExperimentRecord(
        name=name,
        kind="compare",
        title=f"every applicable {fam}-family policy on {workload.name}: {covers}",
        scale=f"{replications} replication(s) per point; {covers}",
        axes=swept_axes(rows),
        metrics=[metric, *(x for x in shown if x != metric)],
        reference=reference,
        figures=relative_figures(target, paths),
        summary=findings,
        notes=notes,
        provenance=provenance(
            started, (datetime.datetime.now(datetime.UTC) - started).total_seconds()
        ),
    )
    with phases.phase("report") as progress:
        progress(0, 2)
        write_record(target, record)
        progress(1, 2)
        page = write_report(target)
    phases.write(target)
    _print(ranked, fmt, metric, shown, units, the_plan.native, log_rows)
    if fmt == "table":
        out.print(escape(notes[-1]), highlight=False)
        for line in findings:
            out.print(escape(line), highlight=False)
        out.print(f"report: {page}", highlight=False)


def _named_jobs(target: Path, tasks: list, fmt: str, k: int, progress) -> None:
    """Each run's per-job table (``OUT/jobs/<run hash>.parquet``) as
    ``OUT/jobs/POLICY-loadX[.replicationR].<fmt's suffix>`` (one table in memory at a time)."""
    import pyarrow.parquet as pq

    from schedlab.experiments.runner import jobs_target
    from schedlab.measurement.jobs_output import jobs_path
    from schedlab.report.jobs_formats import SUFFIX, write_jobs

    for i, task in enumerate(tasks):
        progress(i, len(tasks))
        source = jobs_path(str(jobs_target(target, task)), task.replication)
        run = f"{task.axes['policy']}-load{task.axes['workload.load']:g}"
        if task.replication:
            run += f".replication{task.replication}"
        write_jobs(pq.read_table(source), source.with_name(run + SUFFIX[fmt]), fmt, k=k, note=run)


def _calibrated(
    workload: Path,
    base: dict,
    target: Path,
    seed: int,
    downtime: float | None,
    capacity_window: float | None = None,
) -> tuple[Path, list[str], dict]:
    """``--calibrated``: the table on the usable capacity fitted on the log's first half
    (:mod:`schedlab.experiments.calibrate`), written under ``target``; the report's lines: the
    validation on the second half in numbers and in words; and the rest of the fitted context
    as policy options offered to every policy (user limit, queue order, the logged downtime as
    a capacity schedule, with the capacity profile when ``capacity_window`` is given)."""
    import pyarrow.parquet as pq

    from schedlab import outputs
    from schedlab.commands.trace_calibrate import validation_table
    from schedlab.experiments.calibrate import (
        calibrate,
        clocked,
        replay_steps,
        servers_of,
        verdict,
        with_capacity,
    )

    if workload.suffix != ".parquet" or "trace_wait" not in pq.read_schema(workload).names:
        fail(f"--calibrated: {escape(str(workload))} is not a table converted from an SWF log")
    table = pq.read_table(workload)
    k = int(base["cluster"]["servers"])
    err.print(f"calibrating the context of {workload.name} ...", highlight=False)
    result = calibrate(
        table, str(workload), k, VALIDATION_POLICY, seed, downtime, capacity_window=capacity_window
    )
    servers = servers_of(result.fitted_capacity, result.profile)
    derived, _ = with_capacity(table, servers)
    held = [(d["start"], d["end"]) for d in result.downtime]
    steps = replay_steps(table, held, result.fitted_capacity, result.profile)
    context = {
        **clocked(table, result.fitted.options()),
        **({"capacity_schedule": steps} if steps else {}),
    }
    outputs.make_dirs(target)
    path = target / f"{workload.stem}-calibrated.parquet"
    with outputs.atomic(path, parquet=True) as tmp:
        pq.write_table(derived, tmp)
    print_table(validation_table(result.record()))
    lines = verdict(result)
    if result.profile is not None:
        lines.append(
            f"with the capacity profile the table is on all {servers} processors (MaxProcs), "
            f"the profile (capped at the fitted {result.fitted_capacity}) its capacity "
            "schedule: a policy that does not take one ran on all of them"
        )
    if result.fitted.partitions:
        lines.append(
            f"the calibration split the log into partitions ({result.fitted.described()}); "
            f"compare runs one pool per policy: the ranking ran on one pool of the fitted "
            f"{result.fitted_capacity} processors, not on the partitions"
        )
    return path, lines, context


def _log_check(
    the_plan,
    workload: Path,
    ranked: list,
    target: Path,
    tasks: list,
    store,
    workers,
    progress,
    covers: str,
) -> tuple[list[str], list[Path], list[dict]]:
    """The log itself (a line and a row of the table) and the validation line (an SWF-derived
    trace: it keeps the logged waits), with the report's Gantt chart and time series at the
    log's own load, read from the runs' per-job tables at that load (experiments/log_check.py):
    the validation replays the log only when compare made no EASY run at the log's own load
    (those replays are stored too: a rerun does not make them again)."""
    import pyarrow.parquet as pq

    from schedlab.experiments.log_check import (
        logged_waits,
        series_from_jobs,
        top_policies,
        validation_of,
    )
    from schedlab.experiments.runner import Task, jobs_target, run_tasks
    from schedlab.measurement.jobs_output import jobs_path
    from schedlab.model.compile import compile_model
    from schedlab.policies.registry import get_policy
    from schedlab.report.trace_figures import gantt_figure, series_figure

    base, name, k = the_plan.base, the_plan.name, the_plan.k
    tau = float(base["run"].get("slowdown_threshold", 10.0))
    logged = logged_waits(workload, tau, base["run"].get("arrivals"))
    if logged is None:
        return [], [], []
    load = the_plan.native
    choices = [r for r in ranked if not get_policy(r.policy).traits_at().preemptive]
    top = top_policies(choices, load if load is not None else ranked[0].load)
    steps = 3 + len(top)
    progress(0, steps)
    native = {t.axes["policy"]: t for t in tasks if t.axes["workload.load"] == load}
    missing = [p for p in dict.fromkeys([VALIDATION_POLICY["name"], *top]) if p not in native]
    if missing:  # no run at the log's own load (--loads without native): replayed once, stored
        err.print(
            f"replaying the log at its own load: {', '.join(missing)} (for the log check)",
            highlight=False,
        )
        for p in missing:
            native[p] = Task.of(the_plan.spec(p, None), experiment=name, axes={"policy": p})
        run_tasks([native[p] for p in missing], store, workers=workers)
    check = native[VALIDATION_POLICY["name"]]
    progress(1, steps)
    if load is None:
        load = float(compile_model(the_plan.spec(VALIDATION_POLICY["name"], None)).load)

    def table(task, columns=None):
        return pq.read_table(jobs_path(str(jobs_target(target, task)), 0), columns=columns)

    jobs = table(check)
    validation = validation_of(jobs, workload, VALIDATION_DESCRIBED, load)
    progress(2, steps)
    folder = target / "figures"
    title = f"EASY with requested times at the log's own load {load:.3g} ({covers})"
    paths = gantt_figure(jobs, k, folder / f"{name}-gantt", title)
    del jobs
    progress(3, steps)
    if top:
        series = {}
        for i, p in enumerate(top):
            columns = ["arrival", "start", "finish", "demand[servers]"]
            series[p] = series_from_jobs(table(native[p], columns), k)
            progress(4 + i, steps)
        paths += series_figure(
            series,
            folder / f"{name}-over-time",
            f"the top {len(top)} choices replaying the log at its own load {load:.3g} ({covers})",
        )
    return [logged.line(), validation.line()], paths, [logged.record(load)]


class Phases:
    """Each phase of a comparison with a progress bar and its ETA (stderr), and its wall time
    and peak memory, written to ``OUT/phases.json`` (benchmarks/bench_compare_logs.py reads it):
    ``peak_rss_bytes`` is this process's peak resident memory during the phase (Linux: the peak
    is reset at the phase's start through /proc/self/clear_refs; elsewhere the peak so far),
    ``workers_peak_rss_bytes`` the largest peak of a finished worker process so far."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    @contextlib.contextmanager
    def phase(self, name: str):
        _reset_peak_rss()
        t0 = time.perf_counter()
        with runs_progress(name) as progress:
            yield progress
        self.records.append(
            {
                "phase": name,
                "wall_s": round(time.perf_counter() - t0, 3),
                "peak_rss_bytes": _peak_rss(),
                "workers_peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                * 1024,
            }
        )

    def write(self, target: Path) -> None:
        from schedlab import outputs

        with outputs.atomic(target / "phases.json") as tmp:
            Path(tmp).write_text(json.dumps(self.records, indent=1) + "\n")


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _shown(rows: list[dict]) -> list[str]:
    """The metrics HPC operators read (labels.HPC_METRICS) that the runs measured, in order."""
    from schedlab.report.labels import HPC_METRICS

    measured = {k for r in rows for k, v in r.items() if v is not None} if rows else set()
    out: list[str] = []
    for name in HPC_METRICS:
        if name == "utilization" and "utilization_over_makespan" in measured:
            continue  # a finite replay: over its arrivals it is the offered load (docs/statistics)
        if name == "utilization":
            out += sorted(m for m in measured if m.startswith("utilization[") and m.endswith("]"))
        elif name in measured:
            out.append(name)
    return out


def _units_note(units, trace: bool, native: float | None, covers: str) -> str:
    """One line: the time unit, tau, the jobs covered, the log's own load (of those jobs) and
    how the ratio to the best is read."""
    where = "the log's time unit" if trace else "the model's time unit"
    text = (
        f"times in {units.time} ({where}); bounded slowdown max(T / max(size, tau), 1) with "
        f"tau = {units.tau:g} {units.time} (run.slowdown_threshold)"
    )
    text += f"; jobs: {covers}"
    if native is not None:
        text += f"; the log's own load is {native:.4g} (of these jobs, at their own arrival times)"
    return text + (
        "; x best: the ratio to the best with its paired 95% interval (the same jobs, batch by "
        "batch: docs/statistics.md), ≈ where it holds 1 (not told apart from the best)"
    )


def _ratio_cell(r) -> str:
    """The ratio to the best with its paired 95% interval, ``≈`` when the interval holds 1
    (indistinguishable from the best)."""
    if not math.isfinite(r.ratio_to_best):
        return ""
    text = f"{r.ratio_to_best:.3g}"
    if r.told_apart is not None:
        bounded = math.isfinite(r.ratio_lo) and math.isfinite(r.ratio_hi)
        text += f" [{r.ratio_lo:.3g}, {r.ratio_hi:.3g}]" if bounded else " [unbounded]"
        text += "" if r.told_apart else " ≈"
    return escape(text)


def _cell(mean: float) -> str:
    return f"{mean:.4g}" if math.isfinite(mean) else "–"


def _print(
    ranked, fmt: str, metric: str, shown: list[str], units, native, log_rows: list[dict]
) -> None:
    from schedlab.policies.registry import get_policy

    others = [m for m in shown if m != metric]
    traits = {p: get_policy(p).traits_at() for p in {r.policy for r in ranked}}
    records = [
        {
            "load": r.load,
            "rank": r.rank,
            "policy": r.policy,
            "metric": metric,
            "mean": _num(r.mean),
            "lo": _num(r.lo),
            "hi": _num(r.hi),
            "stable": r.stable,
            "reliable": r.reliable,
            "bound": r.bound,
            "ratio_to_best": _num(r.ratio_to_best),
            "ratio_lo": _num(r.ratio_lo),
            "ratio_hi": _num(r.ratio_hi),
            "told_apart_from_best": r.told_apart,
            "native": native is not None and r.load == native,
            **{m: _num(r.values.get(m, math.nan)) for m in shown},
            "backlog": r.note,
            "group": r.group,
            "preemptive": traits[r.policy].preemptive,
            "size_knowledge": traits[r.policy].size_knowledge,
            "migrates": traits[r.policy].migrates,
        }
        for r in ranked
    ]
    keys = list(records[0]) if records else []
    for log in log_rows:  # the log's own row: the ranked metric where the log has it, no rank
        row = log | {"metric": metric, "mean": log.get(metric)}
        records.append({k: row.get(k) for k in keys})
    if fmt == "json":
        sys.stdout.write(json.dumps(records) + "\n")
        return
    if fmt == "csv":
        w = csv.DictWriter(sys.stdout, fieldnames=list(records[0]) if records else ["load"])
        w.writeheader()
        w.writerows(records)
        return
    table = _ranked_table(ranked, metric, others, units, native, log_rows)
    if others and not table_fits(table):  # the other metrics with `schedlab --wide` (or CSV)
        table = _ranked_table(ranked, metric, [], units, native, log_rows)
        err.print(
            f"[dim]{len(others)} more metric columns ({escape(', '.join(others))}): "
            "`schedlab --wide compare ...` shows them, --format csv lists them[/]",
            highlight=False,
        )
    print_table(table)


def _ranked_table(ranked, metric: str, others: list[str], units, native, log_rows: list[dict]):
    """The ranked rows as a rich table: load, rank, policy, the metric with its interval, the
    ratio to the best, what the policy needs, then the ``others`` metrics."""
    from schedlab.measurement.metrics import BACKLOG
    from schedlab.policies.registry import get_policy, needs
    from schedlab.report.labels import label, terse

    traits = {p: get_policy(p).traits_at() for p in {r.policy for r in ranked}}
    table = Table(show_header=True, header_style="bold")

    columns = [label("load"), "rank", "policy", terse(metric, units) + " 95% CI", "x best (paired)"]
    columns += ["needs", *(terse(m, units) for m in others)]
    for col in columns:
        table.add_column(escape(col), justify="left" if col in ("policy", "needs") else "right")
    notes = any(r.note for r in ranked)
    if notes:
        table.add_column("note", justify="left")
    width = len(columns) + int(notes)
    for i, r in enumerate(ranked):
        if r.group and (i == 0 or not ranked[i - 1].group or ranked[i - 1].load != r.load):
            table.add_row("", "", f"[bold]{escape(r.group)}[/]", *[""] * (width - 3))
        if not r.stable:
            cell, ratio = "[red]unstable[/]", ""
        else:
            cell = escape(
                f"{r.mean:.4g} [{r.lo:.4g}, {r.hi:.4g}]" if math.isfinite(r.lo) else f"{r.mean:.4g}"
            )
            ratio = _ratio_cell(r)
        rank_cell = "bound" if r.bound else (str(r.rank) if r.rank else "-")
        load = f"{r.load:.4g} (log's own)" if native is not None and r.load == native else ""
        row = [load or f"{r.load:g}", rank_cell, escape(r.policy), cell, ratio]
        row += [needs(traits[r.policy]), *(_cell(r.values.get(m, math.nan)) for m in others)]
        if notes:
            row.append(BACKLOG if r.note else "")
        table.add_row(*row)
    for log in log_rows:  # the log as the machine ran it, at its own load (never ranked)
        row = [
            f"{log['load']:.4g}",
            "log",
            escape(log["policy"]),
            _cell(log.get(metric) or math.nan),
        ]
        row += ["", "as logged", *(_cell(log.get(m) or math.nan) for m in others)]
        table.add_row(*row, *([""] if notes else []))
    return table
