"""Helpers shared by the CLI's command modules: consoles, one-line errors, progress bars."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import typer
from rich.console import Console

from schedlab.errors import SchedlabError

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    """Print one error line on stderr and exit (code 2: bad input)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True, markup=True)
    raise typer.Exit(code)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn schedlab's own errors into one line on stderr and exit code 2."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SchedlabError as exc:
            fail(escape(str(exc)), code=exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted", code=130)

    return wrapper


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)
