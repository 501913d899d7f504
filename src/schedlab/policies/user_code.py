"""Errors raised by a user's policy (a plugin), reported in one line naming the place.

schedlab's own policies are trusted: an exception from them is schedlab's bug and its traceback
is what to report. A plugin's exception — while being compiled, checked, initialised or deciding
— becomes one :class:`~schedlab.errors.PolicyError` line: the policy, the innermost place in the
user's code and the error's first line (Numba adds the compiled function's file and line to the
traceback of what it raises).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab.errors import PolicyError, SchedlabError

_SCHEDLAB = Path(__file__).resolve().parents[1]  # schedlab's package: not the user's code


def is_built_in(function: Any) -> bool:
    """``function`` (plain or compiled) belongs to schedlab."""
    return getattr(function, "py_func", function).__module__.startswith("schedlab.")


def policy_raised(name: str, function: Any, exc: Exception) -> PolicyError:
    """The one line for ``exc``, raised by policy ``name``'s ``function``."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not Path(f.filename).resolve().is_relative_to(_SCHEDLAB)
        and "numba" not in Path(f.filename).parts
    ]
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else _source_file(function)
    text = (str(exc).strip().splitlines() or [""])[0]
    return PolicyError(
        f"policy '{name}' ({where}) raised {type(exc).__name__}: {text}".rstrip(": ")
    )


def call_policy(name: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``; a plugin's exception becomes :func:`policy_raised`."""
    try:
        return function(*args, **kwargs)
    except (SchedlabError, MemoryError):
        raise
    except Exception as exc:
        if is_built_in(function):
            raise
        raise policy_raised(name, function, exc) from None


def _source_file(function: Any) -> str:
    return inspect.getsourcefile(getattr(function, "py_func", function)) or "?"
