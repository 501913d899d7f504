"""``schedlab reproduce NAME [--quick]``: run a paper figure and check its claims."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from schedlab.cli_support import (
    FormatOption,
    OutputFormat,
    PluginOption,
    emit_rows,
    err,
    escape,
    fail,
    load_plugins,
    out,
    runs_progress,
    user_errors,
)


def register(app: typer.Typer) -> None:
    app.command(name="reproduce")(reproduce)


@user_errors
def reproduce(
    name: Annotated[str | None, typer.Argument(help="Reproduction name (see --list).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small, fast variant.")] = False,
    scale: Annotated[
        str,
        typer.Option(
            "--scale",
            help="paper (default) or authors: the authors' own run lengths, where a reproduction "
            "has them (grosof2023-fig3/fig4); its plan prints first.",
        ),
    ] = "paper",
    plan_only: Annotated[
        bool, typer.Option("--plan-only", help="With --scale authors: print the plan, run nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --scale authors: run without asking.")
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions.")] = False,
    audit: Annotated[
        bool,
        typer.Option(
            "--audit",
            help="Claims audit: re-evaluate each claim on mutated copies of the results and "
            "report whether some mutation makes it FAIL (exit 1 if a claim cannot fail).",
        ),
    ] = False,
    all_: Annotated[bool, typer.Option("--all", help="With --audit: every reproduction.")] = False,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Output directory (default: out/reproduce/NAME[-quick])."),
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Local worker processes.", min=1)] = None,
    cluster: Annotated[str | None, typer.Option(help="Dask scheduler address.")] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Shared data folder (real traces); default $SCHEDLAB_DATA, else shared/data "
            "beside the git checkout.",
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    plugin: PluginOption = None,
) -> None:
    """Reproduce a paper figure: run it, write the figure and CSV, check the paper's claims.

    With --plugin, the plugin's policies join the figure's policy sweeps of a family they run in
    as extra series (the claims judge the built-in policies only; a note says where they were
    added and where they did not apply)."""
    from schedlab.datasets import data_dir, data_dir_origin, use_data_dir
    from schedlab.reproduce.registry import (
        AUTHORS,
        Context,
        all_reproductions,
        get_reproduction,
        run_reproduction,
    )

    use_data_dir(data)
    if list_:
        rows = []
        for r in all_reproductions():
            found = all((data_dir() / f).is_file() for f in r.data)
            needs = f"{', '.join(r.data)} ({'found' if found else 'MISSING'})" if r.data else "-"
            rows.append(
                {
                    "name": r.name,
                    "paper": r.paper,
                    "figure": r.figure,
                    "title": r.title,
                    "data": needs,
                }
            )
        emit_rows(rows, fmt, columns=["name", "paper", "figure", "title", "data"])
        if fmt is OutputFormat.table:
            err.print(
                f"data folder: {escape(str(data_dir()))} ({escape(data_dir_origin())}; set it "
                "with --data-dir DIR or SCHEDLAB_DATA=DIR)",
                highlight=False,
            )
        return
    if all_ and not audit:
        fail("--all goes with --audit: schedlab reproduce --audit --all [--quick]")
    if plugin and audit:
        fail("--plugin does not go with --audit: the audit judges the built-in policies' claims")
    extra = tuple(load_plugins(plugin))
    if audit:
        if scale != "paper" or plan_only or yes:
            fail("--audit runs the paper scale (or --quick): leave out --scale, --plan-only, --yes")
        if (name is None) == (not all_):
            fail("give a reproduction NAME or --all to --audit")
        entries = all_reproductions() if all_ else [get_reproduction(name)]
        results = [_audit(e, quick, None if all_ else out_dir, workers, cluster) for e in entries]
        if not all(results):
            raise typer.Exit(1)
        return
    if name is None:
        fail("give a reproduction NAME or --list")
    entry = get_reproduction(name)
    authors = _authors_scale(entry, scale, quick, plan_only or yes)
    target = _target(entry, quick, out_dir, authors)
    out.print(
        f"[bold]{escape(entry.name)}[/]: {escape(entry.title)} "
        f"({entry.paper}, {entry.figure}){' — quick variant' if quick else ''}"
        + (" — authors' scale" if authors else "")
    )
    if authors:
        ctx = Context(quick=False, out=target, workers=workers, cluster=cluster, scale=AUTHORS)
        out.print("calibrating (a short run per policy)...", highlight=False)
        for line in entry.authors.plan(ctx):
            out.print(escape(line), highlight=False)
        if plan_only:
            return
        if not yes:
            typer.confirm("run it?", abort=True)
    started = datetime.datetime.now(datetime.UTC)
    with runs_progress() as progress:
        outcome = run_reproduction(
            entry,
            Context(
                quick=quick,
                out=target,
                workers=workers,
                cluster=cluster,
                progress=progress,
                scale=AUTHORS if authors else "",
                extra=extra,
            ),
        )
    record_outcome(entry, outcome, target, quick, started, entry.authors if authors else None)
    for claim in outcome.claims:
        out.print(f"{_badge(claim.verdict)} {escape(claim.text)}\n      {escape(claim.evidence)}")
    for note in outcome.notes:
        out.print(f"[dim]note:[/] {escape(note)}")
    for path in outcome.figures:
        out.print(f"figure: {path}")
    from schedlab.report.html import write_report

    out.print(f"report: {write_report(target)}", highlight=False)
    if not outcome.passed:
        raise typer.Exit(1)


def _authors_scale(entry: Any, scale: str, quick: bool, authors_flags: bool) -> bool:
    """Whether ``--scale`` asks for the authors' scale (one-line errors for what does not fit)."""
    from schedlab.reproduce.registry import AUTHORS, all_reproductions

    if scale not in ("paper", AUTHORS):
        fail(f"--scale {scale}: expected paper or {AUTHORS}")
    if scale != AUTHORS:
        if authors_flags:
            fail("--plan-only and --yes go with --scale authors")
        return False
    if quick:
        fail("--scale authors and --quick exclude each other")
    if entry.authors is None:
        having = ", ".join(r.name for r in all_reproductions() if r.authors is not None)
        fail(f"{entry.name} has no authors' scale (these have: {having})")
    return True


def _target(entry: Any, quick: bool, out_dir: Path | None, authors: bool = False) -> Path:
    suffix = "-authors" if authors else "-quick" if quick else ""
    return out_dir or Path("out") / "reproduce" / (entry.name + suffix)


def _audit(
    entry: Any, quick: bool, out_dir: Path | None, workers: int | None, cluster: str | None
) -> bool:
    """Run (or read back) ``entry``'s results, audit its claims (schedlab.reproduce.audit) and
    print one line per claim; False when a claim cannot fail."""
    from schedlab.reproduce.audit import CANNOT_FAIL, audit
    from schedlab.reproduce.registry import Context, run_reproduction

    target = _target(entry, quick, out_dir)
    out.print(f"[bold]audit {escape(entry.name)}[/]{' (quick)' if quick else ''}: {target}")
    with runs_progress() as progress:
        outcome = run_reproduction(
            entry,
            Context(quick=quick, out=target, workers=workers, cluster=cluster, progress=progress),
        )
    if outcome.judge is None:
        for claim in outcome.claims:
            out.print(
                f"  [red]{CANNOT_FAIL}[/] [{claim.verdict}] {escape(claim.text)}\n"
                "      not auditable: this reproduction's claims are not a function of its rows"
            )
        return not outcome.claims
    ok = True
    for a in audit(outcome.rows, outcome.judge):
        color = {CANNOT_FAIL: "red"}.get(a.status, "green" if a.failing else "yellow")
        shown = ", ".join(a.failing[:3]) + (
            f" (+{len(a.failing) - 3} more)" if len(a.failing) > 3 else ""
        )
        out.print(
            f"  [{color}]{a.status}[/] [{a.verdict}] {escape(a.text)}"
            + (f"\n      FAILs under: {escape(shown)}" if a.failing else "")
        )
        ok &= a.status != CANNOT_FAIL
    return ok


def _badge(verdict: str) -> str:
    color = {"PASS": "green", "FAIL": "red"}.get(verdict, "yellow")
    return f"[{color}]{verdict}[/]"


def record_outcome(
    entry: Any,
    outcome: Any,
    target: Path,
    quick: bool,
    started: datetime.datetime,
    authors: Any = None,
) -> Path:
    """Write ``experiment.json`` beside the runs: the reproduction's axes (as its stored runs
    show them), claims with their evidence, figures, notes, scale and provenance. ``authors``:
    the reproduction's AuthorsScale when it ran at that scale."""
    from schedlab.experiments.store import ResultStore
    from schedlab.report.experiment_record import (
        ExperimentRecord,
        claims_of,
        provenance,
        relative_figures,
        write_record,
    )
    from schedlab.report.sweep import swept_axes
    from schedlab.reproduce.registry import QUICK

    wall = (datetime.datetime.now(datetime.UTC) - started).total_seconds()
    record = ExperimentRecord(
        name=entry.name,
        kind="reproduction",
        title=entry.title + (f" ({QUICK})" if quick else ""),
        paper=entry.paper,
        figure=entry.figure,
        scale=f"authors' scale: {authors.text}"
        if authors is not None
        else ("quick variant; paper scale: " if quick else "paper scale: ") + entry.scale,
        axes=swept_axes(ResultStore(target).read()),
        claims=claims_of(outcome.claims),
        figures=relative_figures(target, outcome.figures),
        notes=[_relative(note, target) for note in outcome.notes],
        provenance=provenance(started, wall),
    )
    return write_record(target, record)


def _relative(text: str, directory: Path) -> str:
    """A note with the result directory's path left out (reports never show local paths)."""
    for prefix in {str(directory.resolve()), str(directory)}:
        text = text.replace(prefix + "/", "")
    return text
