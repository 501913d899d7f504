"""``schedlab report DIR [DIR ...] [--index]``: self-contained HTML pages of result directories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from schedlab import outputs
from schedlab.cli_support import fail, out, user_errors


def register(app: typer.Typer) -> None:
    app.command(name="report")(report)


@user_errors
def report(
    directories: Annotated[
        list[Path],
        typer.Argument(
            help="Result directories (of `schedlab run`, `reproduce`, `compare`).",
            show_default=False,
        ),
    ],
    index: Annotated[
        bool,
        typer.Option("--index", help="Also write one page linking the reports of all DIRs."),
    ] = False,
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="HTML file: the report of the one DIR (default DIR/report.html), or with "
            "--index the index page (default index.html beside the DIRs).",
        ),
    ] = None,
) -> None:
    """Write one HTML page per result directory: figures, tables per point, claims, provenance."""
    from schedlab.report.html import build_index, write_report

    for directory in directories:
        if not directory.is_dir():
            fail(f"{directory}: no such result directory")
    if out_file is not None and len(directories) > 1 and not index:
        fail("--out names one file: give one DIR, or --index for the index page")
    pages = [
        (d, write_report(d, out_file if not index and len(directories) == 1 else None))
        for d in directories
    ]
    for _, page in pages:
        out.print(str(page))
    if index:
        parent = Path(*_common_parts([d.resolve() for d in directories]))
        target = outputs.check_target(out_file or parent / "index.html")
        outputs.write_text(target, build_index(pages, target))
        out.print(str(target))


def _common_parts(paths: list[Path]) -> tuple[str, ...]:
    """The parts of the deepest directory that holds every path (a DIR's parent for one DIR)."""
    common = paths[0].parent.parts
    for p in paths[1:]:
        n = 0
        while n < min(len(common), len(p.parts)) and common[n] == p.parts[n]:
            n += 1
        common = common[:n]
    return common
