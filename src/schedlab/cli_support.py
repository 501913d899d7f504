"""Helpers shared by the CLI's command modules: consoles, one-line errors, output formats.

Conventions every command follows (docs/guide.md, "Scripting"):

* ``--format table|csv|json`` on every command that prints results; CSV and JSON are written to
  stdout directly (never through rich), tables through rich.
* Output to a pipe or a file is never cut to the terminal's width: the consoles are as wide as the
  content when stdout/stderr is not a terminal.
* A spec file is a positional argument; errors name the file, line and field in one line (exit 2).
* ``--plugin FILE.py`` (repeatable) on every command that runs simulations.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from schedlab.errors import SchedlabError, unknown_name

# Piped output is never wrapped by rich (a long path or message stays one line) ...
UNLIMITED_WIDTH = 100_000
# ... but a table fits this many columns when piped (cells wrap, long words fold, nothing is cut;
# `schedlab --wide` prints its natural width). On a terminal a table fits the terminal.
TABLE_WIDTH = 100


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    return Console(stderr=stderr, width=None if is_tty else UNLIMITED_WIDTH)


out = _console(stderr=False)
err = _console(stderr=True)


@contextmanager
def runs_progress(description: str = "runs") -> Iterator[Callable[[int, int], None]]:
    """A transient progress bar on stderr, fed with (runs done, total runs). It redraws when fed,
    from the caller's thread: no refresh thread, so a sweep may fork its workers (decision
    0009)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        auto_refresh=False,
    ) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total, refresh=True)


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        case_sensitive=False,
        help="table (for people), csv or json (for scripts: written without any styling).",
    ),
]

PluginOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--plugin",
        help="A Python file that registers policies (repeatable); see docs/writing-policies.md.",
        show_default=False,
    ),
]


@contextmanager
def ctrl_c_stops() -> Iterator[None]:
    """Ctrl-C ends the process at once (SIGINT's default action) while the block runs, in the
    main thread: Python raises KeyboardInterrupt only between bytecodes, so a compiled loop
    that never returns (a plugin's) ignored Ctrl-C. Process-wide, so used by commands only,
    never by the library (a notebook's interrupt must stay a KeyboardInterrupt)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def fail(message: str, code: int = 2) -> None:
    """Print one error line on stderr and exit (code 2: bad input)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True, markup=True)
    raise typer.Exit(code)


@dataclass
class GlobalOptions:
    """The options given before the command (``schedlab --debug --wide COMMAND ...``)."""

    debug: bool = False  # an error prints its traceback before its one line
    wide: bool = False  # every table at its natural width (never fitted to 100 columns)


GLOBAL = GlobalOptions()


def _traceback(exc: BaseException) -> None:
    """The full traceback of ``exc`` on stderr, with the error it replaced (a plugin's error is
    raised ``from None`` as one line: its original is the context)."""
    import traceback

    shown = exc.__context__ if exc.__suppress_context__ and exc.__context__ else exc
    sys.stderr.write("".join(traceback.format_exception(shown)))


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn schedlab's own errors into one line on stderr and exit code 2 (after the full
    traceback with ``schedlab --debug``)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SchedlabError as exc:
            if GLOBAL.debug:
                _traceback(exc)
            fail(escape(str(exc)), code=exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted", code=130)

    return wrapper


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def unknown(kind: str, name: str, known: Iterable[str], option: str | None = None) -> None:
    """Exit 2 with ``unknown metric 'p99' (did you mean 'p99_response_time'?); known: ...``."""
    prefix = f"{option}: " if option else ""
    fail(escape(prefix + unknown_name(kind, name, known)))


def spec_argument(positional: Path | None, option: Path | None) -> Path:  # type: ignore[return]
    """The spec file, given as the positional argument or with ``--spec`` (an alias)."""
    if positional is not None and option is not None and positional != option:
        fail("give the spec once: as the argument SPEC or with --spec, not both")
    spec = positional or option
    if spec is None:
        fail("missing the simulation spec: give SPEC.toml")
    return spec


def load_plugins(paths: Sequence[Path] | None) -> list[str]:
    """Import each ``--plugin`` file so that its policies are registered; their names."""
    if not paths:
        return []
    from schedlab.plugins import load_plugin

    return [name for path in paths for name in load_plugin(path)]


def _plain(value: Any) -> Any:
    """JSON/CSV value: non-finite floats become null/empty (an unstable mean is no number)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def format_number(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}" if math.isfinite(x) else "-"
    return str(x)


def emit_rows(
    rows: Sequence[dict[str, Any]],
    fmt: OutputFormat,
    *,
    columns: Sequence[str] | None = None,
    cells: Callable[[dict[str, Any]], Sequence[str]] | None = None,
    headers: Sequence[str] | None = None,
    wide: bool = False,
) -> None:
    """Print rows as a rich table, CSV or JSON (a list of objects) on stdout.

    ``columns`` fixes the fields and their order (default: the first row's keys). For the table
    only, ``cells(row)`` may render a row with markup and ``headers`` name the displayed columns;
    the table fits :data:`TABLE_WIDTH` columns unless ``wide`` (:func:`print_table`).
    """
    columns = list(columns if columns is not None else (rows[0].keys() if rows else []))
    if fmt is OutputFormat.json:
        data = [{c: _plain(r.get(c)) for c in columns} for r in rows]
        sys.stdout.write(json.dumps(data, default=str) + "\n")
    elif fmt is OutputFormat.csv:
        if any(isinstance(v, dict | list | tuple) for r in rows for v in r.values()):
            rows = [_flatten({c: r.get(c) for c in columns}) for r in rows]
            columns = list(rows[0])
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow(["" if _plain(r.get(c)) is None else r.get(c) for c in columns])
    else:
        from rich.table import Table

        table = Table(show_header=True, header_style="bold")
        for h in headers or columns:
            table.add_column(escape(h), overflow="fold")
        for r in rows:
            table.add_row(
                *(cells(r) if cells else [escape(format_number(r.get(c))) for c in columns])
            )
        print_table(table, wide=wide)


def print_table(table: Any, *, wide: bool = False) -> None:
    """Print a rich table on stdout within :data:`TABLE_WIDTH` columns when piped (the
    terminal's width on a terminal): cells wrap and over-long words fold, so nothing is cut.
    ``wide`` (or ``schedlab --wide``): the table's natural width."""
    for column in table.columns:
        if column.overflow == "ellipsis" and not column.no_wrap:
            column.overflow = "fold"
    out.print(table, width=None if wide else output_width())


def output_width() -> int | None:
    """The width of what :func:`print_table` prints, and of notes under a table: TABLE_WIDTH
    when piped, the terminal's on a terminal (None), None with ``schedlab --wide``."""
    return None if GLOBAL.wide or out.is_terminal else TABLE_WIDTH


def table_fits(table: Any) -> bool:
    """Whether ``table`` prints at its natural width within the width :func:`print_table` gives
    it (always with ``schedlab --wide``)."""
    if GLOBAL.wide:
        return True
    width = out.width if out.is_terminal else TABLE_WIDTH
    return Console(width=UNLIMITED_WIDTH).measure(table).maximum <= width


def emit_object(data: dict[str, Any], fmt: OutputFormat, show_table: Callable[[], None]) -> None:
    """One result object: JSON as is, CSV as ``key,value`` lines, the table by ``show_table``."""
    if fmt is OutputFormat.table:
        show_table()
    elif fmt is OutputFormat.json:
        sys.stdout.write(json.dumps(data, default=str) + "\n")
    else:
        flat = _flatten(data)
        emit_rows([{"field": k, "value": v} for k, v in flat.items()], fmt)


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            if all(not isinstance(v, dict | list | tuple) for v in value):
                flat.update({f"{name}[{i}]": v for i, v in enumerate(value)})
            else:
                flat[name] = json.dumps(value, default=str)
        else:
            flat[name] = value
    return flat
