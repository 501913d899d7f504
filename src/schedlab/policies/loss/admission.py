"""Load-based admission baselines of psychas2022's experiments: power-of-d choices and best fit.

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
from pydantic import Field

from schedlab.policy_api import (
    About,
    Hooks,
    Kernels,
    Policy,
    PolicyConfig,
    PolicyContext,
    PolicyState,
    SpecError,
    StateField,
    Traits,
    engine_sizes,
    fits,
    kernel,
    n_arrived_new,
    register,
    run_engine,
    start,
)

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


class AdmissionConfig(PolicyConfig):
    """psychas2022 §7.2 baselines: ``choice`` = power-of-d (d sampled servers) or best-fit."""

    choice: Literal["power-of-d", "best-fit"] = "power-of-d"
    d: int = Field(default=2, ge=1, description="servers sampled per arrival (INFERRED: 2)")


STATE = PolicyState(
    "admission",
    [
        StateField("best_fit", "b1"),  # False: power-of-d
        StateField("d", "i8"),
        StateField("rng", "i8", 1),  # SplitMix64 state (the bits of one uint64)
        StateField("picked", "i8", "d"),  # workspace: the sampled servers
    ],
)


@kernel(wraparound=False)
def splitmix64(ps):
    """Next 64-bit value of the policy's SplitMix64 stream (state ``ps.rng``)."""
    state = ps.rng.view(np.uint64)
    state[0] += GOLDEN
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


@kernel(wraparound=False)
def uniform_index(ps, n):
    """Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^32)."""
    return np.int64((splitmix64(ps) >> np.uint64(32)) * np.uint64(n) >> np.uint64(32))


@kernel(wraparound=False)
def load_after(st, j, s, with_job):
    """max_r (used_r [+ demand_r]) / capacity_r of server s."""
    worst = 0.0
    for r in range(st.capacity.shape[1]):
        u = st.used[s, r] + (st.demand[j, r] if with_job else 0.0)
        f = u / st.capacity[s, r]
        if f > worst:
            worst = f
    return worst


@kernel(wraparound=False)
def power_of_d_server(st, ps, j):
    """Least-loaded server among d sampled distinct ones where job j fits, or -1."""
    n_srv = st.capacity.shape[0]
    picked = ps.picked
    n = ps.d if ps.d < n_srv else n_srv
    for i in range(n):
        while True:
            s = uniform_index(ps, n_srv) if n < n_srv else i
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


@kernel(wraparound=False)
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


@kernel(wraparound=False)
def decide(st, ps):
    for q in range(n_arrived_new(st)):
        j = st.arrived_buf[q]
        s = best_fit_server(st, j) if ps.best_fit else power_of_d_server(st, ps, j)
        if s >= 0:
            start(st, j, s, 1.0)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def init(st: Any, context: PolicyContext, config: AdmissionConfig) -> Any:
    """The policy state of one run; the compiled generator is seeded from the policy's own
    stream of the run's seed and replication (PolicyContext.random_stream)."""
    seed = int(context.random_stream().integers(0, 2**62))
    return STATE.allocate(
        engine_sizes(st, d=config.d),
        {"best_fit": config.choice == "best-fit", "d": config.d, "rng": np.array([seed])},
    )


def check(context: PolicyContext, config: AdmissionConfig) -> None:
    if context.family != "loss":
        raise SpecError("admission baselines belong to the loss family", field="model.family")


_COMMON = {
    "kernels": Kernels(state=STATE, init=init, runner=run, config=AdmissionConfig),
    "traits": Traits(preemptive=False, size_knowledge="none", migrates=False),
    "hooks": Hooks(check=check),
}

register(
    Policy(
        name="power-of-d",
        family="loss",
        about=About(
            title="Power-of-d choices",
            paper="psychas2022",
            section="§7.2 (Xie et al. 2015)",
            summary="sample d servers, admit into the least loaded one that fits, else lose the "
            "job",
        ),
        preset={"choice": "power-of-d"},
        **_COMMON,
    )
)
register(
    Policy(
        name="best-fit-admission",
        family="loss",
        about=About(
            title="Best-fit admission",
            paper="psychas2022",
            section="§2 (loss-model baseline)",
            summary="admit each arrival into the feasible server fullest after placement, else "
            "lose it",
        ),
        preset={"choice": "best-fit"},
        **_COMMON,
    )
)
