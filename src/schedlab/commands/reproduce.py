"""``schedlab reproduce NAME [--quick]``: run a paper figure and check its claims."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from schedlab.cli_support import (
    FormatOption,
    OutputFormat,
    emit_rows,
    err,
    escape,
    fail,
    out,
    user_errors,
)


def register(app: typer.Typer) -> None:
    app.command(name="reproduce")(reproduce)


@user_errors
def reproduce(
    name: Annotated[str | None, typer.Argument(help="Reproduction name (see --list).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small, fast variant.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions.")] = False,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Output directory (default: out/reproduce/NAME[-quick])."),
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Local worker processes.", min=1)] = None,
    cluster: Annotated[str | None, typer.Option(help="Dask scheduler address.")] = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Reproduce a paper figure: run it, write the figure and CSV, check the paper's claims."""
    from schedlab.reproduce.registry import Context, all_reproductions, get_reproduction

    if list_:
        rows = [
            {"name": r.name, "paper": r.paper, "figure": r.figure, "title": r.title}
            for r in all_reproductions()
        ]
        emit_rows(rows, fmt, columns=["name", "paper", "figure", "title"])
        return
    if name is None:
        fail("give a reproduction NAME or --list")
    entry = get_reproduction(name)
    target = out_dir or Path("out") / "reproduce" / (entry.name + ("-quick" if quick else ""))
    out.print(
        f"[bold]{escape(entry.name)}[/]: {escape(entry.title)} "
        f"(paper {entry.paper}, {entry.figure}){' — quick variant' if quick else ''}"
    )
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("running", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        outcome = entry.run(
            Context(quick=quick, out=target, workers=workers, cluster=cluster, progress=progress)
        )
    for claim in outcome.claims:
        status = "[green]PASS[/]" if claim.passed else "[red]FAIL[/]"
        out.print(f"{status} {escape(claim.text)}\n      {escape(claim.evidence)}")
    for note in outcome.notes:
        out.print(f"[dim]note:[/] {escape(note)}")
    for path in outcome.figures:
        out.print(f"figure: {path}")
    if not outcome.passed:
        raise typer.Exit(1)
