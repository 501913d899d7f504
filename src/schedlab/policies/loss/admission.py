"""Load-based admission baselines of paper 002's experiments: power-of-d choices and best fit.

Paper: Psychas & Ghaderi 2022 (``psychas2022``), §7.2: "Power-of-d-choices: upon an arrival, it
picks d servers and attempts to schedule the job arrived in the least loaded server if it fits
(Xie et al., 2015)"; the paper picked d = 2 (restored in notes/dra.md; d is a parameter). Best
fit is the classical packing baseline: the feasible server that is fullest after placement.
An arrival placed nowhere is lost (loss family); no migrations, no preemptions.

INFERRED (parameters or stated here):

* The load of a server is its largest used fraction over the resources, max_r used_r / c_r
  (best fit: the same after placing the job). Ties go to the lower server index.
* Power-of-d samples d distinct servers uniformly (without replacement; d >= L means all).
* Randomness: a SplitMix64 stream owned by the policy, seeded from the run's seed and the
  policy name, separate from the job streams (common random numbers across policies).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numba import njit
from pydantic import BaseModel, ConfigDict, Field

from schedlab.engine.actions import fits, start
from schedlab.engine.constants import N_ARRIVED_NEW
from schedlab.engine.loop import run_engine
from schedlab.errors import SpecError
from schedlab.policies.registry import Policy, register

MODE_POWER_OF_D = 0
MODE_BEST_FIT = 1
MODES = {"power-of-d": MODE_POWER_OF_D, "best-fit": MODE_BEST_FIT}
P_MODE = 0
P_D = 1
N_PAR = 2
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


class AdmissionConfig(BaseModel):
    """psychas2022 §7.2 baselines: ``choice`` = power-of-d (d sampled servers) or best-fit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    choice: Literal["power-of-d", "best-fit"] = "power-of-d"
    d: int = Field(default=2, ge=1, description="servers sampled per arrival (INFERRED: 2)")


@njit(cache=True)
def splitmix64(rng):
    """Next 64-bit value of the SplitMix64 stream whose state is rng[0]."""
    rng[0] += GOLDEN
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def uniform_index(rng, n):
    """Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^32)."""
    return np.int64((splitmix64(rng) >> np.uint64(32)) * np.uint64(n) >> np.uint64(32))


@njit(cache=True)
def load_after(st, j, s, with_job):
    """max_r (used_r [+ demand_r]) / capacity_r of server s."""
    worst = 0.0
    for r in range(st.capacity.shape[1]):
        u = st.used[s, r] + (st.demand[j, r] if with_job else 0.0)
        f = u / st.capacity[s, r]
        if f > worst:
            worst = f
    return worst


@njit(cache=True)
def power_of_d_server(st, j, d, rng, picked):
    """Least-loaded server among d sampled distinct ones where job j fits, or -1."""
    n_srv = st.capacity.shape[0]
    n = d if d < n_srv else n_srv
    for i in range(n):
        while True:
            s = uniform_index(rng, n_srv) if n < n_srv else i
            dup = False
            for q in range(i):
                if picked[q] == s:
                    dup = True
                    break
            if not dup:
                break
        picked[i] = s
    best = -1
    best_load = np.inf
    for i in range(n):
        s = picked[i]
        if fits(st, j, s, 1.0):
            f = load_after(st, j, s, False)
            if f < best_load or (f == best_load and s < best):
                best, best_load = s, f
    return best


@njit(cache=True)
def best_fit_server(st, j):
    """The feasible server that is fullest after placing job j, or -1."""
    best = -1
    best_load = -1.0
    for s in range(st.capacity.shape[0]):
        if fits(st, j, s, 1.0):
            f = load_after(st, j, s, True)
            if f > best_load:
                best, best_load = s, f
    return best


@njit(cache=True)
def decide(st, ps):
    par, rng, picked = ps
    mode = par[P_MODE]
    for q in range(st.ctr[N_ARRIVED_NEW]):
        j = st.arrived_buf[q]
        if mode == MODE_POWER_OF_D:
            s = power_of_d_server(st, j, par[P_D], rng, picked)
        else:
            s = best_fit_server(st, j)
        if s >= 0:
            start(st, j, s, 1.0)


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def make_state(st: Any, model: Any, config: AdmissionConfig) -> tuple:
    par = np.zeros(N_PAR, dtype=np.int64)
    par[P_MODE] = MODES[config.choice]
    par[P_D] = config.d
    seed = np.random.SeedSequence([model.spec.run.seed, 0x706F77]).generate_state(1, np.uint64)
    return (par, seed.astype(np.uint64), np.zeros(config.d, dtype=np.int64))


def check(model: Any, config: AdmissionConfig) -> None:
    if model.family != "loss":
        raise SpecError("admission baselines belong to the loss family", field="model.family")


_COMMON = {"runner": run, "make_state": make_state, "params": AdmissionConfig, "check": check}

register(
    Policy(
        name="power-of-d",
        family="loss",
        title="Power-of-d choices",
        reference="Psychas & Ghaderi 2022 (paper 002), §7.2 (Xie et al. 2015)",
        summary="sample d servers, admit into the least loaded one that fits, else lose the job",
        preset={"choice": "power-of-d"},
        **_COMMON,
    )
)
register(
    Policy(
        name="best-fit-admission",
        family="loss",
        title="Best-fit admission",
        reference="loss-model baseline (paper 002 setting, §2)",
        summary="admit each arrival into the feasible server fullest after placement, else lose it",
        preset={"choice": "best-fit"},
        **_COMMON,
    )
)
