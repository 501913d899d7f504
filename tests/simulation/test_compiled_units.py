"""The compiled generation units (issue 12 item 4) against NumPy itself.

Truth: NumPy's own ``SeedSequence``/``PCG64``/``Generator`` (every number must be equal, bit for
bit, or recorded seeds would change their results), and the NumPy path of ``JobSource``
(``compiled=False``) for whole job sequences.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba.np.random._constants import fe_double, ke_double, we_double

from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.reproduce.grosof2023 import spec as grosof_spec
from schedlab.simulation.compiled_streams import (
    fill_exponential,
    fill_random,
    next_uint64,
    seed_state,
    stream_entropy,
)
from schedlab.simulation.compiled_units import UnitLaws
from schedlab.simulation.generate import UNIT, Jobs, JobSource, concatenate
from schedlab.streams import STREAMS
from tests.helpers.specs import pooled_spec


def _numpy_bits(seed: int, key: tuple[int, int, int]) -> np.random.PCG64:
    return np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key))


def _raw(seed: int, replication: int, name: str, unit: int, n: int) -> np.ndarray:
    state = seed_state(stream_entropy(seed, replication, name), unit)
    return np.array([next_uint64(state) for _ in range(n)], dtype=np.uint64)


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1, 2**32, 2**63 + 5, 2**64, 2**64 + 3, 2**140 + 9])
@pytest.mark.parametrize("unit", [0, 1, 4095, 2**31, 2**32, 2**40 + 7])
def test_seeding_and_raw_output_equal_numpy(seed, unit):
    for name, index in STREAMS.items():
        expected = _numpy_bits(seed, (3, index, unit)).random_raw(1000)
        assert np.array_equal(_raw(seed, 3, name, unit, 1000), expected)


@given(
    seed=st.integers(0, 2**80),
    replication=st.integers(0, 2**40),
    name=st.sampled_from(sorted(STREAMS)),
    unit=st.integers(0, 2**45),
)
def test_seeding_equals_numpy_for_any_key(seed, replication, name, unit):
    expected = _numpy_bits(seed, (replication, STREAMS[name], unit)).random_raw(8)
    assert np.array_equal(_raw(seed, replication, name, unit, 8), expected)


def _ziggurat_slow_paths(raw: np.ndarray, n: int) -> dict[str, int]:
    """Walk NumPy's ziggurat (distributions.c random_standard_exponential) over its raw words
    for n draws; count the draws that leave the fast path, by branch."""
    counts = {"base": 0, "wedge": 0}
    i = 0
    for _ in range(n):
        while True:
            ri = int(raw[i]) >> 3
            i += 1
            idx, ri = ri & 0xFF, ri >> 8
            if ri < int(ke_double[idx]):
                break
            u = (int(raw[i]) >> 11) * (1.0 / 9007199254740992.0)
            i += 1
            if idx == 0:
                counts["base"] += 1
                break
            counts["wedge"] += 1
            x = ri * float(we_double[idx])
            if (fe_double[idx - 1] - fe_double[idx]) * u + fe_double[idx] < math.exp(-x):
                break
    return counts


def test_random_and_exponential_equal_numpy_on_every_branch():
    slow = {"base": 0, "wedge": 0}
    for unit in range(24):
        key = (0, STREAMS["duration"], unit)
        state = seed_state(stream_entropy(7, 0, "duration"), unit)
        got = np.empty(UNIT)
        fill_exponential(state, 2.5, got)
        reference = np.random.Generator(_numpy_bits(7, key))
        assert np.array_equal(got, reference.exponential(2.5, UNIT))
        fill_random(state, got)  # the same generator continues with uniforms
        assert np.array_equal(got, reference.random(UNIT))
        raw = _numpy_bits(7, key).random_raw(3 * UNIT)
        for branch, k in _ziggurat_slow_paths(raw, UNIT).items():
            slow[branch] += k
    # the draws compared above went through the ziggurat's rare branches (base strip, idx == 0,
    # about 4.5e-4 per draw; wedge rejection test about 1%)
    assert slow["base"] >= 10 and slow["wedge"] >= 300, slow


def _jobs(model, compiled: bool, seed: int = 3, replication: int = 1) -> Jobs:
    return concatenate(list(JobSource(model, seed, replication, compiled=compiled).units()))


def _assert_same_jobs(a: Jobs, b: Jobs) -> None:
    for field in Jobs.__dataclass_fields__:
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and x.shape == y.shape, field
        assert np.array_equal(x, y, equal_nan=True), field


FIXED_MIX = [
    {"probability": 0.2, "need": 1, "duration": {"dist": "fixed", "value": 3.0}},
    {"probability": 0.5, "need": 2, "duration": {"dist": "exponential", "rate": 0.7}},
    {"probability": 0.3, "need": 3, "duration": 0.5},
]


def _packing_fixed() -> dict:
    return {
        "cluster": {"servers": 4, "capacity": {"cpu": 1.0, "mem": 2.0}},
        "workload": {
            "load": 0.7,
            "classes": [
                {"probability": 0.6, "demand": {"cpu": 0.25, "mem": 0.5}, "duration": 1.0},
                {
                    "probability": 0.4,
                    "demand": {"cpu": 0.5, "mem": 1.5},
                    "duration": {"dist": "exponential", "mean": 2.0},
                },
            ],
        },
        "policy": {"name": "fifo-ff"},
        "run": {"arrivals": 2 * UNIT + 7, "seed": 1},
    }


def _renewal_exponential(n: int) -> dict:
    spec = pooled_spec(4, 0.7, arrivals=n, classes=FIXED_MIX)
    interarrival = {"dist": "exponential", "mean": 1.0}
    spec["workload"]["arrivals"] = {"process": "renewal", "interarrival": interarrival}
    return spec


MANY_CLASSES = [  # more than compiled_units._LINEAR_SEARCH: the inverse CDF bisects
    {
        "probability": (1 + i % 7) / 174,  # sums to 1
        "need": 1 + i % 3,
        "duration": {"dist": "exponential", "mean": 0.5 + i % 5} if i % 4 else 1.5,
    }
    for i in range(45)
]


SPECS = {
    "paper004-fig2": lambda n: grosof_spec("server-filling", 0.9, n, "exponential"),
    "fixed-mix": lambda n: parse_spec(pooled_spec(8, 0.8, arrivals=n, classes=FIXED_MIX)),
    "many-classes": lambda n: parse_spec(pooled_spec(4, 0.7, arrivals=n, classes=MANY_CLASSES)),
    "one-class": lambda n: parse_spec(pooled_spec(2, 0.6, arrivals=n)),
    "renewal-exponential": lambda n: parse_spec(_renewal_exponential(n)),
    "packing-fixed-demand": lambda n: parse_spec(
        _packing_fixed() | {"run": {"arrivals": n, "seed": 1}}
    ),
}


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("n", [3 * UNIT + 123, UNIT])
def test_compiled_units_give_the_numpy_jobs(name, n):
    model = compile_model(SPECS[name](n))
    source = JobSource(model, 3, 1)
    assert source._laws is not None  # the compiled path is the one under test
    compiled = _jobs(model, compiled=True)
    assert len(compiled) == n
    _assert_same_jobs(compiled, _jobs(model, compiled=False))
    assert source.window() == JobSource(model, 3, 1, compiled=False).window()


def test_compiled_units_with_a_horizon_stop_at_the_same_job():
    spec = pooled_spec(8, 0.8, classes=FIXED_MIX, arrivals=None, horizon=900.0)
    model = compile_model(parse_spec(spec))
    compiled = _jobs(model, compiled=True, seed=11)
    assert len(compiled) > 0 and compiled.arrival[-1] <= 900.0
    _assert_same_jobs(compiled, _jobs(model, compiled=False, seed=11))


def test_other_laws_keep_the_numpy_path():
    duration = {"dist": "hyperexponential", "mean": 1.0, "scv": 4}
    spec = pooled_spec(2, 0.6, classes=[{"need": 1, "duration": duration}])
    model = compile_model(parse_spec(spec))
    assert UnitLaws.of(model, np.array([1.0]), 1, 0) is None
