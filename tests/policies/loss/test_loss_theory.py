"""The loss family against product-form theory (paper 002's model, L = 1 complete sharing).

Kaufman-Roberts (analysis/loss_networks.py) is checked against a brute-force sum over the
product-form states, then first-fit simulation against Kaufman-Roberts per class. (Erlang B for
one unit type on L servers of capacity c is in tests/engine/test_closed_forms.py.)
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.analysis.closed_forms import erlang_b
from schedlab.analysis.loss_networks import kaufman_roberts_blocking

LEVEL = 0.999  # see tests/engine/test_closed_forms.py


def product_form_blocking(capacity: int, sizes: list[int], offered: list[float]) -> np.ndarray:
    states = [
        n
        for n in itertools.product(*(range(capacity // b + 1) for b in sizes))
        if sum(b * x for b, x in zip(sizes, n, strict=True)) <= capacity
    ]
    weight = np.array(
        [
            math.prod(a**x / math.factorial(x) for a, x in zip(offered, n, strict=True))
            for n in states
        ]
    )
    used = np.array([sum(b * x for b, x in zip(sizes, n, strict=True)) for n in states])
    weight /= weight.sum()
    return np.array([weight[used + b > capacity].sum() for b in sizes])


@settings(max_examples=40, deadline=None)
@given(
    capacity=st.integers(1, 12),
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    loads=st.lists(st.floats(0.01, 8.0), min_size=3, max_size=3),
)
def test_kaufman_roberts_matches_brute_force(capacity, sizes, loads):
    offered = loads[: len(sizes)]
    got = kaufman_roberts_blocking(capacity, sizes, offered)
    assert np.allclose(got, product_form_blocking(capacity, sizes, offered), rtol=1e-10, atol=1e-14)


def test_kaufman_roberts_one_unit_class_is_erlang_b():
    assert kaufman_roberts_blocking(30, [1], [25.0])[0] == pytest.approx(erlang_b(30, 25.0))


def test_first_fit_multi_class_matches_kaufman_roberts():
    # One server of 10 units, classes of 1, 2 and 4 units; durations of different laws and
    # means (the product form is insensitive to them).
    sizes, rates, means = [1, 2, 4], [3.0, 1.5, 1.0], [1.0, 2.0, 1.5]
    total = sum(rates)
    spec = {
        "cluster": {"servers": 1, "capacity": 10},
        "workload": {
            "rate": total,
            "classes": [
                {
                    "name": "one",
                    "probability": rates[0] / total,
                    "demand": 1,
                    "duration": {"dist": "exponential", "mean": means[0]},
                },
                {
                    "name": "two",
                    "probability": rates[1] / total,
                    "demand": 2,
                    "duration": {"dist": "hyperexponential", "mean": means[1], "scv": 4.0},
                },
                {
                    "name": "four",
                    "probability": rates[2] / total,
                    "demand": 4,
                    "duration": {"dist": "exponential", "mean": means[2]},
                },
            ],
        },
        "policy": {"name": "first-fit"},
        "run": {"arrivals": 300_000, "seed": 21},
    }
    result = schedlab.simulate(spec)
    truth = kaufman_roberts_blocking(10, sizes, [r * m for r, m in zip(rates, means, strict=True)])
    for name, b in zip(("one", "two", "four"), truth, strict=True):
        est = result[f"loss_probability[{name}]"]
        assert est.covers(b, LEVEL), (name, est, b)
        assert est.half_width < 0.1 * b


def test_loss_metrics_reported():
    """Reward per server, loss per type, migration/preemption rates, reward over time and
    occupancy per resource are reported for a loss run."""
    spec = {
        "cluster": {"servers": 3, "capacity": {"cpu": 4, "mem": 8}},
        "workload": {
            "rate": 6.0,
            "classes": [
                {
                    "name": "a",
                    "probability": 0.5,
                    "demand": {"cpu": 1, "mem": 1},
                    "duration": {"dist": "exponential", "mean": 1.0},
                    "reward": 2.0,
                },
                {
                    "name": "b",
                    "probability": 0.5,
                    "demand": {"cpu": 2, "mem": 4},
                    "duration": {"dist": "exponential", "mean": 1.0},
                    "reward": 5.0,
                },
            ],
        },
        "policy": {"name": "first-fit"},
        "run": {"arrivals": 20_000, "seed": 2},
    }
    r = schedlab.simulate(spec)
    per_server = r["reward_rate_per_server"].mean
    assert per_server == pytest.approx(r["reward_rate"].mean / 3)
    # reward rate = sum_j u_j * (carried jobs of type j) <= sum_j u_j lambda_j / mu_j
    assert 0 < per_server <= (2.0 * 3 + 5.0 * 3) / 3
    assert r.counters["migrations"] == 0 and r.counters["preemptions"] == 0
    for name in ("a", "b"):
        assert 0 <= r[f"loss_probability[{name}]"].mean <= 1
    assert {"reward_rate", "utilization[cpu]", "utilization[mem]"} <= set(r.timeseries.column_names)
    assert 0 < r["utilization[cpu]"].mean <= 1
