"""The policy registry: every policy by name, with its family, paper reference and runner.

A policy module defines a compiled ``decide(st, ps)`` (reads the state, acts through
:mod:`schedlab.engine.actions`), a cached runner ``run(st, ps, max_events)`` that calls
:func:`schedlab.engine.loop.run_engine` with that ``decide``, a ``make_state`` that allocates the
policy's own arrays ``ps``, and registers one :class:`Policy` per name it is known by. One
implementation may serve several names (e.g. FIFO first-fit is FCFS in the pooled family).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from schedlab.errors import SpecError


class NoParams(BaseModel):
    """A policy without parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _no_check(model: Any, params: BaseModel) -> None:
    return None


@dataclass(frozen=True)
class Policy:
    name: str
    family: str  # the family this name belongs to
    title: str
    reference: str  # paper and section, e.g. "Grosof et al. 2023 (paper 004), §3.2"
    summary: str
    runner: Any  # compiled run(st, ps, max_events)
    make_state: Callable[[Any, Any, BaseModel], tuple]  # (state, model, params) -> ps
    params: type[BaseModel] = NoParams
    preset: dict[str, Any] = field(default_factory=dict)  # parameter values fixed by this name
    check: Callable[[Any, BaseModel], None] = _no_check  # raise SpecError for unsupported models
    families: tuple[str, ...] = ()
    # Pooled family: run every job as elastic with allocation up to k (the resource-pooled
    # single server of paper 004 §3.1), on the same job sequence.
    resource_pooled: bool = False
    # Per-slot policy state (decision 0003): grow(ps, old_slots, new_slots) -> ps enlarges every
    # per-job array keeping its contents. None: the policy needs every job of the run in memory
    # (slot = arrival number, no reuse).
    grow: Callable[[Any, int, int], Any] | None = None

    def __post_init__(self) -> None:
        if not self.families:
            object.__setattr__(self, "families", (self.family,))


def grow_no_job_state(ps: Any, old: int, new: int) -> Any:
    """``Policy.grow`` of a policy without per-job arrays: its state does not change."""
    return ps


def grow_tuple(ps: tuple, old: int, new: int, fills: dict[int, float]) -> tuple:
    """``Policy.grow`` of a tuple state: the entries at the keys of ``fills`` are per-job arrays,
    enlarged to ``new`` entries (contents kept, new entries = the fill value)."""
    out = list(ps)
    for i, fill in fills.items():
        grown = np.full(new, fill, dtype=ps[i].dtype)
        grown[:old] = ps[i]
        out[i] = grown
    return tuple(out)


_REGISTRY: dict[str, Policy] = {}
_LOADED = False


def register(policy: Policy) -> Policy:
    if policy.name in _REGISTRY:
        raise ValueError(f"policy {policy.name!r} registered twice")
    _REGISTRY[policy.name] = policy
    return policy


def _load_builtins() -> None:
    """Import every module under schedlab.policies; policy modules register themselves."""
    global _LOADED
    if _LOADED:
        return
    import schedlab.policies as package

    for info in pkgutil.walk_packages(package.__path__, prefix="schedlab.policies."):
        importlib.import_module(info.name)
    _LOADED = True


def all_policies() -> list[Policy]:
    _load_builtins()
    return sorted(_REGISTRY.values(), key=lambda p: (p.family, p.name))


def get_policy(name: str) -> Policy:
    _load_builtins()
    if name in _REGISTRY:
        return _REGISTRY[name]
    guess = difflib.get_close_matches(name, list(_REGISTRY), n=1)
    hint = f" (did you mean '{guess[0]}'?)" if guess else ""
    raise SpecError(
        f"unknown policy '{name}'{hint}; `schedlab policies` lists them", field="policy.name"
    )


def _parameters(policy: Policy) -> str:
    """``name = default`` of each parameter a spec may set (presets are fixed by the name)."""
    fields = policy.params.model_fields
    shown = [
        f"`{name}` (required)"
        if field.is_required()
        else f"`{name} = {default!r}`"
        if (default := field.get_default(call_default_factory=True)) is not None
        else f"`{name}` (optional)"
        for name, field in fields.items()
        if name not in policy.preset
    ]
    return ", ".join(shown) or "—"


def policies_markdown() -> str:
    """Every registered policy as a Markdown table (the one in docs/policies.md)."""
    rows = [
        "| name | family | reference | what it does | parameters |",
        "|---|---|---|---|---|",
    ]
    for p in sorted(all_policies(), key=lambda p: (p.family, p.name)):
        cells = [f"`{p.name}`", "/".join(p.families), p.reference, p.summary, _parameters(p)]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"
