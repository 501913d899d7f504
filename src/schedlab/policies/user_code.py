"""Errors raised by a user's policy (a plugin), reported in one line naming the place.

schedlab's own policies are trusted: an exception from them is schedlab's bug and its traceback
is what to report. A plugin's exception — while being compiled, checked, initialised or deciding
— becomes one :class:`~schedlab.errors.PolicyError` line: the policy, the innermost place in the
user's code and the error's first line (Numba adds the compiled function's file and line to the
traceback of what it raises). A Numba typing error names no frame of the user's code in its
traceback: its place is the innermost "typing of call at FILE (LINE)" of the user's code in its
message, and its reason the message's first line past Numba's "Failed in ... pipeline" headers.
An index out of range in a plugin's kernel (compiled with bounds checks, schedlab._jit.kernel)
names the line of the indexing in its message. Python's own files (``functools.py``) are never
the user's place.
"""

from __future__ import annotations

import inspect
import re
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab.errors import PolicyError, SchedlabError

_SCHEDLAB = Path(__file__).resolve().parents[1]  # schedlab's package: not the user's code
_PYTHON = {Path(sysconfig.get_path(n)).resolve() for n in ("stdlib", "platstdlib")}


def is_built_in(function: Any) -> bool:
    """``function`` (plain or compiled) belongs to schedlab."""
    return getattr(function, "py_func", function).__module__.startswith("schedlab.")


# "During: typing of call at FILE (LINE)", "... of get attribute at", "... of setitem at", ...
_TYPED_AT = re.compile(r"typing of [\w -]+? at (?P<file>.+?) \((?P<line>\d+)\)$", re.M)
_NUMBA_HEADER = re.compile(r"^Failed in \w+ mode pipeline")


def _users(path: str) -> bool:
    """``path`` is a file of the user's code: not schedlab's, Numba's or Python's own
    (``functools.py`` of a cached property is no place in a plugin)."""
    resolved = Path(path).resolve()
    return not (
        resolved.is_relative_to(_SCHEDLAB)
        or "numba" in resolved.parts
        or any(resolved.is_relative_to(p) for p in _PYTHON)
        or path.startswith("<")  # <frozen ...>, <string>
    )


# A bounds check's IndexError in a plugin's kernel (schedlab._jit._located_boundscheck)
_OUT_OF_BOUNDS = re.compile(r"index is out of bounds \((?P<file>.+):(?P<line>\d+)\)$", re.M)


def _typing_place(message: str) -> str | None:
    """The innermost place of the user's code a Numba typing error's message names, or the
    indexing a bounds check found out of range."""
    places = [
        m
        for m in (*_OUT_OF_BOUNDS.finditer(message), *_TYPED_AT.finditer(message))
        if _users(m["file"])
    ]
    return f"{places[0]['file']}:{places[0]['line']}" if places else None


def _first_line(message: str) -> str:
    """The message's first line that says something (a signature that did not match with it)."""
    lines = [x.strip() for x in message.strip().splitlines() if x.strip()]
    lines = [x for x in lines if not _NUMBA_HEADER.match(x)] or lines or [""]
    signature = lines[1] if len(lines) > 1 and lines[1].startswith(">>>") else ""
    return f"{lines[0]} {signature.removeprefix('>>> ')}".strip()


def policy_raised(name: str, function: Any, exc: Exception) -> PolicyError:
    """The one line for ``exc``, raised by policy ``name``'s ``function``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _users(f.filename)]
    where = (
        f"{frames[-1].filename}:{frames[-1].lineno}"
        if frames
        else _typing_place(str(exc)) or _source_file(function)
    )
    text = _first_line(str(exc))
    return PolicyError(
        f"policy '{name}' ({where}) raised {type(exc).__name__}: {text}".rstrip(": ")
    )


def call_policy(
    name: str,
    function: Callable[..., Any],
    *args: Any,
    via: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)``; a plugin's exception becomes :func:`policy_raised`.
    ``via``: what to call instead of ``function`` (its compiled entry point,
    schedlab._jit.without_dispatch); an exception is still the policy's, named after
    ``function``."""
    try:
        return (via or function)(*args, **kwargs)
    except (SchedlabError, MemoryError):
        raise
    except Exception as exc:
        if is_built_in(function):
            raise
        raise policy_raised(name, function, exc) from None


def _source_file(function: Any) -> str:
    return inspect.getsourcefile(getattr(function, "py_func", function)) or "?"
