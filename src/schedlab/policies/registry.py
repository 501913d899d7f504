"""Looking policies up: every registered policy by name, and the table of docs/policies.md.

Policy modules declare and register themselves through :mod:`schedlab.policy_api.contract`.
Looking one built-in name up imports only the module that registers it: the index of built-in
names (:func:`built_in_index`, name -> module) is derived from the policy modules themselves, by
importing them all once and keeping the module of each registered policy's runner, and kept in
the compile cache directory of this source (:func:`schedlab._jit.cache_dir`, keyed by the hash of
the policy sources, so an edited policy module makes a new index). A run loads its own policy,
not all of them (issue 33). Listing every policy, or a name not built in, imports every module
under ``schedlab.policies`` and the installed plugins' entry points.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from schedlab.errors import PluginError, SchedlabError, SpecError, did_you_mean
from schedlab.policy_api.contract import _REGISTRY, Policy, PolicyTraits

ENTRY_POINT_GROUP = "schedlab.policies"  # installed packages' policies (docs/writing-policies.md)
PACKAGE = "schedlab.policies"
INDEX_FILE = "built_in_policies.json"
_LOADED = False


def _import_package_modules() -> None:
    """Import every module under schedlab.policies (policy modules register themselves)."""
    import schedlab.policies as package

    for info in pkgutil.walk_packages(package.__path__, prefix=f"{PACKAGE}."):
        importlib.import_module(info.name)


def _load_builtins() -> None:
    """Import every built-in policy module, then the installed plugins' ``schedlab.policies``
    entry points (schedlab.plugins)."""
    global _LOADED
    if _LOADED:
        return
    _import_package_modules()
    _LOADED = True
    load_entry_points()


def module_of(policy: Policy) -> str:
    """The module that implements (and registers) a policy: its runner's module."""
    runner = policy.kernels.runner
    return getattr(runner, "py_func", runner).__module__


def _index_path() -> Path:
    from schedlab._jit import cache_dir

    return cache_dir() / INDEX_FILE


def _derive_index() -> dict[str, str]:
    """Name -> module of every policy a module under schedlab.policies registers."""
    _import_package_modules()
    index = {n: module_of(p) for n, p in _REGISTRY.items()}
    return {n: m for n, m in sorted(index.items()) if m.startswith(f"{PACKAGE}.")}


def _write_index(path: Path, index: dict[str, str]) -> None:
    """Write the index atomically (workers may derive it at once); a cache directory that
    cannot be written only costs the next process the derivation again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=INDEX_FILE, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(index, f, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        return


@functools.cache
def built_in_index() -> dict[str, str]:
    """Every built-in policy name and the module that registers it, derived from the policy
    modules (read from the cache directory when this source derived it before)."""
    path = _index_path()
    try:
        index = json.loads(path.read_text())
        if isinstance(index, dict) and all(
            isinstance(m, str) and m.startswith(f"{PACKAGE}.") for m in index.values()
        ):
            return index
    except (OSError, ValueError):
        pass
    index = _derive_index()
    _write_index(path, index)
    return index


def registered_names() -> list[str]:
    """Names registered so far (built-in or plugin), without loading anything."""
    return list(_REGISTRY)


def all_policies() -> list[Policy]:
    _load_builtins()
    return sorted(_REGISTRY.values(), key=lambda p: (p.family, p.name))


def get_policy(name: str) -> Policy:
    if name not in _REGISTRY and name in built_in_index():
        importlib.import_module(built_in_index()[name])
    if name in _REGISTRY:
        return _REGISTRY[name]
    _load_builtins()
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise SpecError(
        f"unknown policy '{name}'{did_you_mean(name, _REGISTRY)}; `schedlab policies` lists them",
        field="policy.name",
    )


def _parameters(policy: Policy) -> str:
    """``name = default`` of each parameter a spec may set (presets are fixed by the name)."""
    fields = policy.kernels.config.model_fields
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
    return module_of(policy).replace(".", "/") + ".py"


def yes_no(trait: bool | None) -> str:
    """A yes/no trait as shown in tables ("?": the policy does not say)."""
    return "?" if trait is None else "yes" if trait else "no"


def needs(traits: PolicyTraits) -> str:
    """What a cluster must allow to run a policy, in words ("preemption, exact sizes"; "-" for
    nothing beyond running jobs to completion, "unknown" when the policy does not say)."""
    if None in (traits.preemptive, traits.size_knowledge, traits.migrates):
        return "unknown"
    parts = ["preemption"] if traits.preemptive else []
    parts += {"estimate": ["requested times"], "exact": ["exact sizes"]}.get(
        traits.size_knowledge, []
    )
    parts += ["migration"] if traits.migrates else []
    return ", ".join(parts) or "-"


def policies_markdown(*, built_in_only: bool = False) -> str:
    """Every registered policy as a Markdown table; ``built_in_only``: the table of
    docs/policies.md, without the plugins this process has loaded."""
    rows = [
        "| name | family | preempts | sizes | migrates | paper | section | file (under src/) "
        "| what it does | parameters |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    shown = [p for p in all_policies() if not built_in_only or p.name in built_in_index()]
    for p in sorted(shown, key=lambda p: (p.family, p.name)):
        traits = p.traits_at()
        cells = [
            f"`{p.name}`",
            "/".join(p.families),
            yes_no(traits.preemptive),
            traits.size_knowledge or "?",
            yes_no(traits.migrates),
            p.about.paper,
            p.about.section,
            f"`{source_file(p)}`",
            p.about.summary,
            _parameters(p),
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def load_entry_points() -> list[str]:
    """Load every ``schedlab.policies`` entry point of the installed packages; their names."""
    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            if callable(target) and not isinstance(target, ModuleType):
                target()
        except SchedlabError as exc:
            raise PluginError(f"entry point '{ep.name}' ({ep.value}): {exc}") from None
        except Exception as exc:
            raise PluginError(
                f"entry point '{ep.name}' ({ep.value}): {type(exc).__name__}: {exc}"
            ) from None
        loaded.append(ep.name)
    return loaded
