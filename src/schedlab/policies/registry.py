"""Looking policies up: every registered policy by name, and the table of docs/policies.md.

Policy modules declare and register themselves through :mod:`schedlab.policies.contract`; every
module under ``schedlab.policies`` is imported on first lookup.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil

from schedlab.errors import SpecError
from schedlab.policies.contract import _REGISTRY, Policy

_LOADED = False


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
    fields = policy.config.model_fields
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


def source_file(policy: Policy) -> str:
    """The module that implements a policy, as a path under src/ (e.g.
    ``schedlab/policies/packing/fifo_ff.py``)."""
    function = getattr(policy.runner, "py_func", policy.runner)
    return function.__module__.replace(".", "/") + ".py"


def policies_markdown() -> str:
    """Every registered policy as a Markdown table (the one in docs/policies.md)."""
    rows = [
        "| name | family | paper | section | file (under src/) | what it does | parameters |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in sorted(all_policies(), key=lambda p: (p.family, p.name)):
        cells = [
            f"`{p.name}`",
            "/".join(p.families),
            p.paper,
            p.section,
            f"`{source_file(p)}`",
            p.summary,
            _parameters(p),
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"
