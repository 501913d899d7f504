"""Fuzzing the spec boundary (issue 15 "Deliver"): any mutation of a valid spec either compiles or
is refused with one SpecError line naming a field; never another exception."""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from tests.helpers.specs import PAPER004_CLASSES, pooled_spec

BASES = [
    pooled_spec(8, 0.5, classes=PAPER004_CLASSES, arrivals=1000),
    {
        "cluster": {"servers": 3, "capacity": {"cpu": 1.0, "mem": 2.0}},
        "workload": {
            "load": 0.6,
            "classes": [
                {
                    "demand": {"cpu": 0.5, "mem": 1.0},
                    "duration": {"dist": "exponential", "mean": 2},
                },
                {"demand": {"cpu": 0.2}, "duration": 1.0, "probability": 0.5},
            ],
        },
        "policy": {"name": "bf-j"},
        "run": {"arrivals": 1000, "seed": 3},
    },
]

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(-3, 10), max_size=3),
    st.dictionaries(
        st.sampled_from(["dist", "mean", "value", "x"]), st.integers(-2, 5), max_size=2
    ),
    st.sampled_from([1e12, 1e400, -0.0, "exponential", "fcfs", "trace", "..", "/etc/passwd"]),
)


def paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += paths(v, (*prefix, i))
    return out


def mutate(data: dict, path: tuple, value: Any, extra_key: str | None) -> dict:
    data = copy.deepcopy(data)
    node = data
    for part in path[:-1]:
        node = node[part]
    if extra_key is not None and isinstance(node, dict):
        node[extra_key] = value  # an unknown or new field
    else:
        node[path[-1]] = value
    return data


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(BASES),
    choice=st.integers(min_value=0, max_value=10**6),
    value=VALUES,
    extra_key=st.one_of(st.none(), st.sampled_from(["file", "path", "need", "zzz", "horizon"])),
)
def test_mutated_specs_compile_or_fail_in_one_line(base, choice, value, extra_key):
    options = paths(base)
    path = options[choice % len(options)]
    data = mutate(base, path, value, extra_key)
    try:
        model = compile_model(parse_spec(data))
    except SpecError as err:
        message = str(err)
        assert message and "\n" not in message and "Traceback" not in message
        return
    assert math.isfinite(model.rate) and model.rate > 0
    assert math.isfinite(model.load)


def test_a_control_character_in_a_value_stays_on_one_line():
    """Found by the fuzz above (a distribution named "\\n"): a user's value with a newline or
    another control character is shown escaped, so the error is still one line."""
    spec = pooled_spec(2, 0.5)
    spec["workload"]["classes"][0]["duration"] = {"dist": "\n\t\x1b", "mean": 1.0}
    try:
        compile_model(parse_spec(spec))
    except SpecError as exc:
        text = str(exc)
    assert "\n" not in text and "\x1b" not in text
    assert "unknown distribution '\\n\\t\\x1b'" in text
