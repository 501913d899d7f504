"""TRANSITIONAL (removed when every policy module is converted to policies/contract.py):
registers a policy written against the old tuple-state registry under the new contract."""

from __future__ import annotations

import re
from typing import Any

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


def Policy(*, reference: str, make_state: Any, params: Any = NoConfig, **kw: Any):  # noqa: N802
    number = re.search(r"paper (00\d)", reference)
    paper = _KEYS[number.group(1)] if number else "grosof2023"
    section = reference.split("), ", 1)[1] if "), " in reference else reference
    return contract.Policy(
        paper=paper, section=section, state=LEGACY_STATE, init=make_state, config=params, **kw
    )
