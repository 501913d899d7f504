"""Batch-vector workloads run (psychas2018 Corollary 5.3): the streamed generator expands each
request into its VMs at the request's time.

Truths used: a request's VMs form one of the vectors of V (in class order, one arrival time); the
number of type-j VMs arriving by time T is a compound Poisson sum, so its rate estimate has
standard error sqrt(lambda E[v_j^2] / T) (lambda: request rate); the sequence does not depend on
the engine's block size, and a request straddling two generation units stays whole; the engine's
invariants (tests/helpers/audit.py) hold; Theorem 3.1 with eq. (27)'s workload: inside
C the queue stays bounded, outside it grows.
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlab
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.optim.vm_capacity import ServerType, max_scaling
from schedlab.simulation.generate import UNIT, generate_jobs
from tests.helpers.audit import audit
from tests.helpers.block_sizes import same_run_for_any_block

# splitting either vector in class order gives a vector not in V, so a split request shows
VECTORS = [
    {"probability": 0.4, "vms": {"big": 1, "small": 3}},
    {"probability": 0.6, "vms": {"small": 2}},
]
COUNTS = np.array([[1, 3], [0, 2]])
P = np.array([0.4, 0.6])
MEAN_BATCH = float(P @ COUNTS.sum(axis=1))  # 2.8


def spec(rate: float, arrivals: int | None = 20_000, *, seed: int = 7, **arrivals_spec) -> dict:
    run = {"seed": seed, "jobs": True, "allow_unstable": True}
    run |= {"arrivals": arrivals} if arrivals is not None else {"horizon": 300.0}
    return {
        "cluster": {"servers": 1, "capacity": 6},
        "model": {"family": "packing"},
        "workload": {
            "rate": rate,
            "arrivals": {"process": "batch", "vectors": VECTORS, **arrivals_spec},
            "classes": [
                {"name": "big", "demand": 4, "duration": {"dist": "exponential", "mean": 1}},
                {"name": "small", "demand": 1, "duration": {"dist": "exponential", "mean": 1}},
            ],
        },
        "policy": {"name": "vm-stalling", "beta_rule": "constant", "beta": 0.9},
        "run": run,
    }


def _requests(arrival: np.ndarray, job_class: np.ndarray) -> list[np.ndarray]:
    """The VMs' classes grouped by arrival time (distinct requests have distinct times)."""
    starts = np.flatnonzero(np.r_[True, np.diff(arrival) > 0])
    return np.split(job_class, starts[1:])


@pytest.mark.parametrize(
    "arrivals_spec",
    [{}, {"interarrival": {"dist": "lognormal", "mean": 1.0, "sigma": 0.5}}],
    ids=["poisson", "lognormal-renewal"],
)
def test_requests_are_vectors_and_type_rates_match_eq47(arrivals_spec):
    model = compile_model(parse_spec(spec(2.0, 60_000, **arrivals_spec)))
    jobs = generate_jobs(model, 7)
    assert len(jobs) == 60_000
    assert np.all(np.diff(jobs.arrival) >= 0)
    groups = _requests(jobs.arrival, jobs.job_class)[:-1]  # the last may be cut at N VMs
    seen = np.array([[int(np.sum(g == 0)), int(np.sum(g == 1))] for g in groups])
    assert all(np.all(np.diff(g) >= 0) for g in groups)  # class order within a request
    kind = (seen[:, None, :] == COUNTS[None, :, :]).all(axis=2)
    assert kind.any(axis=1).all()  # every request is a vector of V
    # vector frequencies: binomial, within 4 standard deviations
    n = len(groups)
    sd = np.sqrt(n * 0.4 * 0.6)
    assert abs(kind[:, 0].sum() - 0.4 * n) < 4 * sd
    # per-type rates over [0, T] (T = the last complete request's time): eq. (47)
    t_end = float(jobs.arrival[sum(g.size for g in groups) - 1])
    request_rate = 2.0 / MEAN_BATCH
    for j in (0, 1):
        lam_j = request_rate * float(P @ COUNTS[:, j])
        # compound Poisson: Var = lambda T E[v_j^2]; renewal requests with C^2 = e^{0.25} - 1
        # <= 1 have the smaller lambda T (Var v_j + E[v_j]^2 C^2), so the bound holds for both
        se = np.sqrt(request_rate * float(P @ COUNTS[:, j] ** 2) / t_end)
        assert abs(seen[:, j].sum() / t_end - lam_j) < 4 * se, j


def test_requests_straddling_generation_units_stay_whole():
    """N = 3 units: the requests across unit boundaries are vectors of V, and a shorter run is
    the prefix of a longer one (the unit, not N, defines the sequence)."""
    model = compile_model(parse_spec(spec(2.0, 3 * UNIT)))
    jobs = generate_jobs(model, 7)
    boundaries = [k * UNIT for k in (1, 2)]
    assert any(jobs.arrival[b - 1] == jobs.arrival[b] for b in boundaries)  # one is straddled
    groups = _requests(jobs.arrival, jobs.job_class)[:-1]
    seen = np.array([[int(np.sum(g == 0)), int(np.sum(g == 1))] for g in groups])
    assert (seen[:, None, :] == COUNTS[None, :, :]).all(axis=2).any(axis=1).all()
    short = generate_jobs(compile_model(parse_spec(spec(2.0, UNIT + 5))), 7)
    for field in ("arrival", "job_class", "work", "demand"):
        assert np.array_equal(getattr(short, field), getattr(jobs, field)[: UNIT + 5]), field


@pytest.mark.parametrize("arrivals", [9000, None], ids=["arrivals", "horizon"])
def test_block_size_and_slots_do_not_change_a_batch_run(arrivals):
    jobs = same_run_for_any_block(compile_model(parse_spec(spec(3.0, arrivals))))
    if arrivals is None:  # the horizon never cuts a request: all its VMs share one time
        arrival = jobs.column("arrival").to_numpy()
        names = np.array(jobs.column("job_class").to_pylist())
        groups = _requests(arrival, np.where(names == "big", 0, 1))
        seen = np.array([[int(np.sum(g == 0)), int(np.sum(g == 1))] for g in groups])
        assert (seen[:, None, :] == COUNTS[None, :, :]).all(axis=2).any(axis=1).all()
        assert arrival[-1] <= 300.0


@pytest.mark.parametrize("subroutine", ["enumeration", "greedy", "dp"])
def test_engine_invariants_hold_on_a_batch_workload(subroutine):
    data = spec(4.0, 2000, seed=3)
    data["policy"] |= {"subroutine": subroutine, "beta": 0.5 if subroutine == "greedy" else 0.9}
    data["run"] |= {"check": True, "batches": 4, "timeseries": 10}
    audit(schedlab.simulate(data), data)


def test_corollary53_inside_and_outside_capacity():
    """Corollary 5.3: Theorem 3.1 holds with rho_j = lambda sum_v v_j p_v / mu_j (eq. (27)).
    zeta = 0.6 of the boundary of C (r = 1, beta = 0.9): stable; zeta = 1.1: the queue grows."""
    direction = (P @ COUNTS) / MEAN_BATCH  # per-VM shares, mean service 1
    s_star = max_scaling([[4.0], [1.0]], [ServerType(1, (6.0,))], direction).max_scaling

    def run(zeta):
        data = spec(zeta * s_star, 20_000, seed=5)
        data["run"] |= {"jobs": False, "timeseries": 100}
        return schedlab.simulate(data)

    inside, outside = run(0.6), run(1.1)
    assert inside.stable
    assert not outside.stable
    q = np.array(outside.timeseries.to_pydict()["number_in_queue"])
    half = q.size // 2
    assert q[half:].mean() > 2 * q[:half].mean()
    assert inside.metrics["mean_number_in_queue"].mean < 50
