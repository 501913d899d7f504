"""Looking policies up: every registered policy by name, and the table of docs/policies.md.

Policy modules declare and register themselves through :mod:`schedlab.policies.contract`.
Looking one built-in name up imports only the module that registers it (``BUILT_IN``, checked
against the registry by tests/policies/test_policy_contract.py): a run loads its own policy, not
all of them (issue 33). Listing every policy, or a name not built in, imports every module under
``schedlab.policies`` and the installed plugins' entry points.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from types import ModuleType

from schedlab.errors import PluginError, SchedlabError, SpecError, did_you_mean
from schedlab.policies.contract import _REGISTRY, Policy, PolicyTraits

ENTRY_POINT_GROUP = "schedlab.policies"  # installed packages' policies (docs/writing-policies.md)
_LOADED = False


def _load_builtins() -> None:
    """Import every module under schedlab.policies (policy modules register themselves), then the
    installed plugins' ``schedlab.policies`` entry points (schedlab.plugins)."""
    global _LOADED
    if _LOADED:
        return
    import schedlab.policies as package

    for info in pkgutil.walk_packages(package.__path__, prefix="schedlab.policies."):
        importlib.import_module(info.name)
    _LOADED = True
    load_entry_points()


# The module that registers each built-in policy name; on a change, the test
# tests/policies/test_policy_contract.py::test_the_index_of_built_in_policies_is_the_registry
# prints the table to paste here.
BUILT_IN = {
    "best-fit-admission": "schedlab.policies.loss.admission",
    "bf-j": "schedlab.policies.packing.best_fit",
    "bf-js": "schedlab.policies.packing.best_fit",
    "bf-s": "schedlab.policies.packing.best_fit",
    "class-priority": "schedlab.policies.pooled.elastic_inelastic",
    "conservative-backfill": "schedlab.policies.pooled.backfill",
    "divisor-filling": "schedlab.policies.pooled.divisor_filling",
    "divisor-filling-gittins": "schedlab.policies.pooled.divisor_filling",
    "divisor-filling-srpt": "schedlab.policies.pooled.divisor_filling",
    "dra": "schedlab.policies.loss.dra",
    "dra-preemption": "schedlab.policies.loss.dra",
    "easy-backfill": "schedlab.policies.pooled.backfill",
    "easy-backfill-exact": "schedlab.policies.pooled.backfill",
    "elastic-first": "schedlab.policies.pooled.elastic_inelastic",
    "fcfs": "schedlab.policies.packing.fifo_ff",
    "fifo-ff": "schedlab.policies.packing.fifo_ff",
    "first-fit": "schedlab.policies.packing.fifo_ff",
    "first-fit-srpt": "schedlab.policies.pooled.first_fit",
    "g16": "schedlab.policies.packing.vm_tokens",
    "gittins-1": "schedlab.policies.pooled.resource_pooled",
    "greedy-srpt": "schedlab.policies.pooled.first_fit",
    "inelastic-first": "schedlab.policies.pooled.elastic_inelastic",
    "least-servers-first": "schedlab.policies.pooled.first_fit",
    "m14": "schedlab.policies.packing.vm_stalling",
    "max-weight": "schedlab.policies.pooled.max_weight",
    "max-weight-greedy": "schedlab.policies.pooled.max_weight",
    "most-servers-first": "schedlab.policies.pooled.first_fit",
    "power-of-d": "schedlab.policies.loss.admission",
    "preemptive-first-fit": "schedlab.policies.pooled.first_fit",
    "server-filling": "schedlab.policies.pooled.server_filling",
    "server-filling-gittins": "schedlab.policies.pooled.server_filling",
    "server-filling-srpt": "schedlab.policies.pooled.server_filling",
    "sjbf": "schedlab.policies.pooled.backfill",
    "srpt-1": "schedlab.policies.pooled.resource_pooled",
    "vm-stalling": "schedlab.policies.packing.vm_stalling",
    "vqs": "schedlab.policies.packing.vqs",
    "vqs-bf": "schedlab.policies.packing.vqs",
}


def registered_names() -> list[str]:
    """Names registered so far (built-in or plugin), without loading anything."""
    return list(_REGISTRY)


def all_policies() -> list[Policy]:
    _load_builtins()
    return sorted(_REGISTRY.values(), key=lambda p: (p.family, p.name))


def get_policy(name: str) -> Policy:
    if name not in _REGISTRY and name in BUILT_IN:
        importlib.import_module(BUILT_IN[name])
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
    shown = [p for p in all_policies() if not built_in_only or p.name in BUILT_IN]
    for p in sorted(shown, key=lambda p: (p.family, p.name)):
        traits = p.traits()
        cells = [
            f"`{p.name}`",
            "/".join(p.families),
            yes_no(traits.preemptive),
            traits.size_knowledge or "?",
            yes_no(traits.migrates),
            p.paper,
            p.section,
            f"`{source_file(p)}`",
            p.summary,
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
