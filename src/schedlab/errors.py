"""Errors raised at schedlab's boundaries (specs, traces, CLI) and by the engine's checks."""

from __future__ import annotations

from collections.abc import Iterable


def shown(value: object) -> str:
    """A value as a message shows it: numbers as people write them (NumPy scalars included, so
    never ``np.float64(inf)``), anything else quoted."""
    import numbers

    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):g}" if not float(value).is_integer() else f"{value}"
    return repr(value)


class SchedlabError(Exception):
    """Base class of every error schedlab raises on purpose (the CLI exits with ``exit_code``)."""

    exit_code = 2


_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(32), 127)}


def _escape_controls(text: str) -> str:
    """``text`` on one line: a user's value with a newline or another control character (a name
    in a spec, say) is shown escaped, as ``\\n``."""
    return text.translate(_CONTROLS)


class SpecError(SchedlabError):
    """A simulation or experiment spec is invalid.

    ``where`` names the place: a file (and line when known) and/or a dotted field path, so the CLI
    can print one line such as ``spec.toml:12: workload.classes[1].duration.mean: must be > 0``.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.field = field
        self.file = file
        self.line = line
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.file:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [p for p in (where, self.field) if p]
        return _escape_controls(": ".join([*parts, self.message]))

    def located(self, file: str | None, line: int | None) -> SpecError:
        """The same error with a file (and line) attached."""
        return SpecError(
            self.message,
            field=self.field,
            file=file or self.file,
            line=line if line is not None else self.line,
        )


class InvariantViolation(SchedlabError):
    """A policy asked the engine for an action that breaks the model (capacity, preemption...)."""


def did_you_mean(name: str, known: Iterable[str], *, cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``name`` (difflib), or ''."""
    import difflib

    guess = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return f" (did you mean '{guess[0]}'?)" if guess else ""


def unknown_name(kind: str, name: str, known: object) -> str:
    """``unknown metric 'p99' (did you mean 'p99_response_time'?); known: a, b, c``."""
    choices = sorted({str(k) for k in known})  # type: ignore[attr-defined]
    containing = [c for c in choices if name.lower() in c.lower()]  # 'p99' -> 'p99_response_time'
    hint = did_you_mean(name, containing or choices, cutoff=0.0 if containing else 0.6)
    return f"unknown {kind} '{name}'{hint}; known: {', '.join(choices) or 'none'}"


class PolicyError(SchedlabError):
    """A user's policy (a plugin) raised while deciding; the message names it and where."""


class PluginError(SchedlabError):
    """A plugin file or entry point could not be loaded; the message names it."""


class OutOfMemoryError(SchedlabError):
    """A run needs more memory than the machine has (said in one line, never a traceback)."""
