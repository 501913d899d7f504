"""Tell a simulation spec from an experiment (sweep) spec, so that giving one where the other is
expected says which command takes it instead of "missing required field".

A simulation spec has the tables ``[cluster]``, ``[workload]``, ``[policy]`` (``schedlab simulate``,
:func:`schedlab.simulate`); an experiment spec has ``name`` and ``base`` with optional ``[sweep]``
and ``[[variants]]`` (``schedlab run``, :func:`schedlab.sweep`).
"""

from __future__ import annotations

from typing import Any, Literal

from schedlab.errors import SpecError

Kind = Literal["simulation", "experiment"]

SIMULATION_KEYS = frozenset({"cluster", "workload", "model", "policy", "run"})
EXPERIMENT_KEYS = frozenset({"name", "base", "sweep", "variants", "replications", "outputs"})

WHO_TAKES = {
    "simulation": "`schedlab simulate FILE` or schedlab.simulate()",
    "experiment": "`schedlab run FILE` or schedlab.sweep()",
}


def kind_of(data: dict[str, Any]) -> Kind | None:
    """The kind of spec ``data`` is, by its top-level keys; None when it is neither clearly."""
    keys = set(data)
    sim = len(keys & SIMULATION_KEYS)
    exp = len(keys & (EXPERIMENT_KEYS - {"replications"}))
    if "base" in keys or ({"name", "sweep"} <= keys) or ({"name", "variants"} <= keys):
        return "experiment" if exp >= sim else None
    if sim and not exp:
        return "simulation"
    return None


def expect_kind(data: dict[str, Any], expected: Kind, file: str | None = None) -> None:
    """Raise a one-line SpecError when ``data`` is clearly the other kind of spec."""
    found = kind_of(data)
    if found is None or found == expected:
        return
    article = {"simulation": "a", "experiment": "an"}
    raise SpecError(
        f"this is {article[found]} {found} spec, not {article[expected]} {expected} spec: "
        f"run it with {WHO_TAKES[found]}",
        file=file,
    )
