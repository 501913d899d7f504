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
    plugin: PluginOption = None,
    all_policies: Annotated[
        bool,
        typer.Option(
            "--all-policies",
            help="On a trace, rank every policy together (default: only what a batch cluster "
            "can run, non-preemptive without exact sizes; the others apart, as bounds and "
            "idealized policies).",
        ),
    ] = False,
) -> None:
    """Run every applicable policy (built-in, and the --plugin files' own) on a workload over a
    range of loads, with the analytic bounds that apply; write the ranked summary, figures and
    report to a directory."""
    from schedlab.experiments.compare import default_family, parse_loads, plan, workload_base
    from schedlab.experiments.runner import check_cluster_address, run_tasks
    from schedlab.experiments.store import ResultStore
    from schedlab.report.html import write_report
    from schedlab.report.ranking import IDEALIZED, best_policy, figures, rank, summary
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
    name = f"compare-{stem}"
    the_plan = plan(name, base, fam, parse_loads(loads), policy, all_policies)
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
    for warning in the_plan.warnings:
        err.print(f"note: {escape(warning)}", highlight=False)
    with runs_progress() as progress:
        run_tasks(tasks, store, workers=workers, cluster=cluster, progress=progress)
    rows = store.read(sorted({t.hash for t in tasks}))
    ranked = rank(rows, idealized=frozenset(the_plan.idealized))
    fcfs_stable = any(r.policy == "fcfs" and r.stable for r in ranked)
    findings = summary(ranked, the_plan.limits, "fcfs" if fcfs_stable else None)
    reference = best_policy(ranked)
    paths = figures(target, name, rows, the_plan.bounds, the_plan.limits, reference)
    notes = [f"skipped {s.policy}: {s.reason}" for s in the_plan.skipped] + the_plan.warnings
    notes += the_plan.notes
    notes += [f"{b.name}: {b.meaning}" for b in the_plan.bounds]
    if the_plan.idealized:
        notes.append(
            f"ranked apart as {IDEALIZED} (they preempt or need exact sizes: no batch cluster "
            f"runs them; --all-policies ranks them with the others): "
            + ", ".join(the_plan.idealized)
        )
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
    _print(ranked, fmt)
    if fmt == "table":
        for line in findings:
            out.print(escape(line), highlight=False)
        out.print(f"report: {page}", highlight=False)


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _print(ranked, fmt: str) -> None:
    from schedlab.policies.registry import get_policy, needs
    from schedlab.report.labels import label

    traits = {p: get_policy(p).traits() for p in {r.policy for r in ranked}}
    fields = ["load", "rank", "policy", "mean_response_time", "lo", "hi", "stable", "reliable"]
    fields += ["bound", "ratio_to_best", "group", "preemptive", "size_knowledge", "migrates"]
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
            "group": r.group,
            "preemptive": traits[r.policy].preemptive,
            "size_knowledge": traits[r.policy].size_knowledge,
            "migrates": traits[r.policy].migrates,
        }
        for r in ranked
    ]
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
        "needs",
    ):
        table.add_column(escape(col), justify="left" if col in ("policy", "needs") else "right")
    for i, r in enumerate(ranked):
        if r.group and (i == 0 or not ranked[i - 1].group or ranked[i - 1].load != r.load):
            table.add_row("", "", f"[bold]{escape(r.group)}[/]", "", "", "")
        if not r.stable:
            cell, ratio = "[red]unstable[/]", ""
        else:
            cell = escape(
                f"{r.mean:.4g} [{r.lo:.4g}, {r.hi:.4g}]" if math.isfinite(r.lo) else f"{r.mean:.4g}"
            )
            ratio = f"{r.ratio_to_best:.3g}" if math.isfinite(r.ratio_to_best) else ""
        rank_cell = "bound" if r.bound else (str(r.rank) if r.rank else "-")
        table.add_row(
            f"{r.load:g}", rank_cell, escape(r.policy), cell, ratio, needs(traits[r.policy])
        )
    print_table(table)
