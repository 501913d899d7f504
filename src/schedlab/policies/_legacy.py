"""TRANSITIONAL (removed when every policy module is converted to policies/contract.py):
registers a policy written against the old tuple-state registry under the new contract."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from schedlab.policies import contract
from schedlab.policies.contract import NoConfig, PolicyState

NoParams = NoConfig
register = contract.register
_KEYS = {
    "000": "psychas2019",
    "001": "psychas2018",
    "002": "psychas2022",
    "003": "berg2020",
    "004": "grosof2023",
}
LEGACY_STATE = PolicyState("legacy", ())
# grow(ps, old_slots, new_slots) -> ps of the legacy policies whose tuple/struct state is per slot
# (docs/decisions/0003-streaming-jobs.md); a legacy policy absent here sees the whole run at once.
LEGACY_GROW: dict[str, Callable[[Any, int, int], Any]] = {}


def Policy(  # noqa: N802
    *,
    reference: str,
    make_state: Any,
    params: Any = NoConfig,
    grow: Callable[[Any, int, int], Any] | None = None,
    **kw: Any,
):
    number = re.search(r"paper (00\d)", reference)
    paper = _KEYS[number.group(1)] if number else "grosof2023"
    section = reference.split("), ", 1)[1] if "), " in reference else reference
    if grow is not None:
        LEGACY_GROW[kw["name"]] = grow
    return contract.Policy(
        paper=paper, section=section, state=LEGACY_STATE, init=make_state, config=params, **kw
    )


def grow_tuple(ps: tuple, old: int, new: int, fills: dict[int, float]) -> tuple:
    """``grow`` of a tuple state: the entries at the keys of ``fills`` are per-job arrays,
    enlarged to ``new`` entries (contents kept, new entries = the fill value)."""
    out = list(ps)
    for i, fill in fills.items():
        grown = np.full(new, fill, dtype=ps[i].dtype)
        grown[:old] = ps[i]
        out[i] = grown
    return tuple(out)


def streams_jobs(policy: contract.Policy) -> bool:
    """Whether the policy's state is per job slot (the engine may reuse and grow slots)."""
    return policy.state is not LEGACY_STATE or policy.name in LEGACY_GROW


def grow_state(policy: contract.Policy, ps: Any, old: int, new: int) -> Any:
    """The policy state for ``new`` job slots."""
    if policy.state is LEGACY_STATE:
        return LEGACY_GROW[policy.name](ps, old, new)
    return policy.state.grow(ps, new)
