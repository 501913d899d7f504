"""The flat keywords of policy API v1 and v2, sorted into the parts of a :class:`Policy`.

Before decision 0021 a :class:`~schedlab.policies.contract.Policy` took 25 flat keywords
(``title=``, ``state=``, ``check=``, ``preemptive=``, ...); API v1 also took
``ranks_by_gittins=`` (decision 0011), which became ``tables``. Plugins written against either
keep working: ``Policy(name=..., family=..., title=..., state=..., ...)`` lands here and gets
the same :class:`About`, :class:`Kernels`, :class:`Traits` and :class:`Hooks` as the structured
form. Nothing in the core knows these keywords.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from schedlab.policies.contract import About, Hooks, Kernels, Traits

_PARTS: dict[str, type] = {"about": About, "kernels": Kernels, "traits": Traits, "hooks": Hooks}
_PART_OF = {f.name: part for part, cls in _PARTS.items() for f in dataclasses.fields(cls)}


def _v1_tables(ranks_by_gittins: Callable[[Any], bool]) -> Callable[[Any], tuple[str, ...]]:
    """API v1's ``ranks_by_gittins(config)`` as ``tables(config)`` (decision 0011)."""

    def tables(config: Any) -> tuple[str, ...]:
        return ("gittins",) if ranks_by_gittins(config) else ()

    return tables


def parts_from_keywords(
    name: str, flat: dict[str, Any], **given: Any
) -> tuple[About, Kernels, Traits, Hooks]:
    """``about, kernels, traits, hooks`` of policy ``name`` from its flat keywords ``flat`` (and
    any part given as such in ``given``); an unknown keyword is a TypeError naming it."""
    flat = dict(flat)
    by_gittins = flat.pop("ranks_by_gittins", None)
    if by_gittins is not None and "tables" not in flat:
        flat["tables"] = _v1_tables(by_gittins)
    unknown = sorted(k for k in flat if k not in _PART_OF)
    if unknown:
        raise TypeError(f"policy {name!r}: unknown keyword(s) {', '.join(unknown)}")
    values: dict[str, dict[str, Any]] = {part: {} for part in _PARTS}
    for key, value in flat.items():
        values[_PART_OF[key]][key] = value
    parts = []
    for part, cls in _PARTS.items():
        base = given.get(part)
        try:
            built = (
                dataclasses.replace(base, **values[part])
                if base is not None
                else cls(**values[part])
                if values[part] or part in ("traits", "hooks")
                else None
            )
        except ValueError as exc:
            raise ValueError(f"policy {name!r}: {exc}") from None
        except TypeError as exc:
            raise TypeError(f"policy {name!r}: {exc}") from None
        parts.append(built)
    about, kernels, traits, hooks = parts
    return about, kernels, traits, hooks
