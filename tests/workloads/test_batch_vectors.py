"""Batch arrivals of VM vectors (psychas2018 §5.2, Corollary 5.3): spec validation with one-line
errors, eqs. (27)/(47), and the expansion of requests into VM arrivals."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.workloads.batch_vectors import (
    BatchVector,
    class_shares,
    expand,
    type_rates,
    vector_table,
    workload,
)

VECTORS = [
    {"probability": 0.3, "vms": {"small": 2, "large": 1}},
    {"probability": 0.7, "vms": {"small": 1}},
]


def spec(vectors=VECTORS, **arrivals):
    return {
        "cluster": {"servers": 2, "capacity": 6},
        "workload": {
            "rate": 2.0,
            "arrivals": {"process": "batch", "vectors": vectors, **arrivals},
            "classes": [
                {"name": "small", "demand": 1, "duration": {"dist": "exponential", "mean": 1}},
                {"name": "large", "demand": 4, "duration": {"dist": "exponential", "mean": 2}},
            ],
        },
        "policy": {"name": "vm-stalling"},
        "run": {"arrivals": 100},
    }


def table():
    return vector_table([BatchVector(**v) for v in VECTORS], ["small", "large"])


def test_equations_27_and_47():
    t = table()
    assert t.counts.tolist() == [[2, 1], [1, 0]]
    assert t.mean_batch == pytest.approx(0.3 * 3 + 0.7 * 1)
    # lambda_j = lambda sum_v v_j p_v: small 0.3*2 + 0.7*1 = 1.3, large 0.3 per request
    assert type_rates(2.0, t).tolist() == pytest.approx([2.6, 0.6])
    assert class_shares(t).tolist() == pytest.approx([1.3 / 1.6, 0.3 / 1.6])
    # rho_j = lambda_j / mu_j with mean services 1 and 2
    assert workload(2.0, t, np.array([1.0, 2.0])).tolist() == pytest.approx([2.6, 1.2])


def test_expand_brings_each_vector_at_its_time():
    t = table()
    requests = np.sort(np.random.default_rng(1).uniform(0, 100, 20_000))
    times, classes = expand(np.random.default_rng(2), requests, t)
    assert np.all(np.diff(times) >= 0)
    # group the VMs by request time: each group is one of the vectors, in class order
    starts = np.flatnonzero(np.r_[True, np.diff(times) > 0])
    groups = np.split(classes, starts[1:])
    assert len(groups) == requests.size
    kinds = {(2, 1): 0, (1, 0): 0}
    for g in groups:
        assert np.all(np.diff(g) >= 0)
        key = (int(np.sum(g == 0)), int(np.sum(g == 1)))
        kinds[key] += 1
    # the first vector's share: binomial(20000, 0.3), within 5 standard deviations
    sd = np.sqrt(requests.size * 0.3 * 0.7)
    assert abs(kinds[(2, 1)] - 0.3 * requests.size) < 5 * sd
    assert sum(kinds.values()) == requests.size


def test_compile_takes_class_shares_from_the_vectors():
    """workload.rate counts VMs: class j arrives at rate * share_j = lambda_j of eq. (47) with the
    request rate rate / E|v|, and the load is the offered work of those rates."""
    s = parse_spec(spec())
    assert s.workload.arrivals.vectors[0].vms == {"small": 2, "large": 1}
    model = compile_model(s)
    shares = [c.probability for c in model.classes]
    assert shares == pytest.approx([1.3 / 1.6, 0.3 / 1.6])
    rates = type_rates(2.0 / 1.6, table())
    assert [model.rate * p for p in shares] == pytest.approx(rates.tolist())
    # 2 VMs per unit time = 1.25 requests: lambda = (1.625, 0.375); offered work per unit time
    # 1.625 * 1 * 1 + 0.375 * 4 * 2 = 4.625 over the total capacity 12
    assert rates.tolist() == pytest.approx([1.625, 0.375])
    assert model.load == pytest.approx(4.625 / 12)


def test_load_sets_the_vm_rate_through_the_shares():
    """load = 0.5 of the bottleneck: rate = 0.5 * 12 / E[work per VM], E[work per VM] =
    sum_j share_j demand_j duration_j = (1.3 * 1 + 0.3 * 8) / 1.6."""
    data = spec()
    del data["workload"]["rate"]
    data["workload"]["load"] = 0.5
    model = compile_model(parse_spec(data))
    assert model.load == pytest.approx(0.5)
    assert model.rate == pytest.approx(0.5 * 12 / ((1.3 * 1 + 0.3 * 8) / 1.6))


def test_vectors_in_slotted_time_are_refused_naming_the_field():
    data = spec()
    data["model"] = {"time": "slotted"}
    data["workload"]["classes"] = [
        {**c, "duration": {"dist": "geometric", "mean": 2}} for c in data["workload"]["classes"]
    ]
    with pytest.raises(SpecError) as err:
        compile_model(parse_spec(data))
    assert err.value.field == "workload.arrivals.vectors"
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"vectors": [{"probability": 0.5, "vms": {"small": 1, "large": 1}}]}, "sum to 0.5"),
        (
            {"vectors": [{"probability": 1.0, "vms": {"small": 1, "medium": 1, "large": 1}}]},
            "'medium' is not a class",
        ),
        ({"vectors": [{"probability": 1.0, "vms": {"small": 3}}]}, "'large' is in no request"),
        (
            {"vectors": [{"probability": 1.0, "vms": {"small": 0, "large": 0}}]},
            "at least one VM",
        ),
        ({"vectors": [{"probability": 1.0, "vms": {"small": -1}}]}, "greater than or equal"),
        ({"batch_size": 2}, "not both"),
    ],
)
def test_bad_vectors_are_one_line(change, needle):
    data = spec()
    data["workload"]["arrivals"].update(change)
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    message = str(err.value)
    assert needle in message and "\n" not in message


def test_vectors_only_with_batch_and_without_class_probabilities():
    data = spec()
    data["workload"]["arrivals"]["process"] = "poisson"
    with pytest.raises(SpecError, match="only used with process = 'batch'"):
        parse_spec(data)
    data = spec()
    data["workload"]["classes"][0]["probability"] = 0.5
    with pytest.raises(SpecError, match=r"classes\[0\].probability"):
        parse_spec(data)
