"""``schedlab report DIR``: a self-contained HTML page of a result directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from schedlab.cli_support import fail, out, user_errors


def register(app: typer.Typer) -> None:
    app.command(name="report")(report)


@user_errors
def report(
    directory: Annotated[Path, typer.Argument(help="Result directory of `schedlab run`.")],
    out_file: Annotated[
        Path | None, typer.Option("--out", help="HTML file (default: DIR/report.html).")
    ] = None,
) -> None:
    """Write one HTML page with tables, figures and the specs that produced them."""
    from schedlab.report.html import write_report

    if not directory.is_dir():
        fail(f"{directory}: no such result directory")
    out.print(str(write_report(directory, out_file)))
