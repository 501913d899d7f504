"""The flat keywords of policy API v1 and v2, sorted into the parts of a ``Policy``.

Before decision 0021 a :class:`~schedlab.policy_api.contract.Policy` took 25 flat keywords
(``title=``, ``state=``, ``check=``, ``preemptive=``, ...); API v1 also took
``ranks_by_gittins=`` (decision 0011), which became ``tables``. Plugins written against either
keep working: ``Policy(name=..., family=..., title=..., state=..., ...)`` hands its flat keywords
here and gets the same ``About``, ``Kernels``, ``Traits`` and ``Hooks`` as the structured form.
Nothing in the core knows these keywords (and this module imports nothing from the contract: the
contract passes its part classes in).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any


def _v1_tables(ranks_by_gittins: Callable[[Any], bool]) -> Callable[[Any], tuple[str, ...]]:
    """API v1's ``ranks_by_gittins(config)`` as ``tables(config)`` (decision 0011)."""

    def tables(config: Any) -> tuple[str, ...]:
        return ("gittins",) if ranks_by_gittins(config) else ()

    return tables


def parts_from_keywords(
    name: str, flat: Mapping[str, Any], parts: Mapping[str, tuple[type, Any]]
) -> list[Any]:
    """The parts of policy ``name`` from its flat keywords ``flat``, in the order of ``parts``
    (part name -> its dataclass and the part given as such, or None). A part no keyword names and
    not given stays None if its dataclass has required fields; an unknown keyword is a
    TypeError, a refused value a ValueError, both naming the policy."""
    flat = dict(flat)
    by_gittins = flat.pop("ranks_by_gittins", None)
    if by_gittins is not None and "tables" not in flat:
        flat["tables"] = _v1_tables(by_gittins)
    part_of = {f.name: part for part, (cls, _) in parts.items() for f in dataclasses.fields(cls)}
    unknown = sorted(k for k in flat if k not in part_of)
    if unknown:
        raise TypeError(f"policy {name!r}: unknown keyword(s) {', '.join(unknown)}")
    values: dict[str, dict[str, Any]] = {part: {} for part in parts}
    for key, value in flat.items():
        values[part_of[key]][key] = value
    built = []
    for part, (cls, given) in parts.items():
        required = any(
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            for f in dataclasses.fields(cls)
        )
        try:
            if given is not None:
                built.append(dataclasses.replace(given, **values[part]))
            elif values[part] or not required:
                built.append(cls(**values[part]))
            else:
                built.append(None)
        except ValueError as exc:
            raise ValueError(f"policy {name!r}: {exc}") from None
        except TypeError as exc:
            raise TypeError(f"policy {name!r}: {exc}") from None
    return built
