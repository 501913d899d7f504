"""The resource-pooled single server: SRPT-1 and Gittins-1 (grosof2023 §3.1, §4.1, §5.3).

The k servers act as one server of speed 1 in size units serving one job at a time: a job of
need K gets allocation k/K, so its duration D takes K D / k = its size S. Run on the same job
sequence as the multiserver policies, SRPT-1 (least remaining size first) is a lower bound on the
mean response time of every policy (§4.1) and Gittins-1 (least Gittins rank first) the bound for
unknown sizes (§5.3).
"""

from __future__ import annotations

import functools
import math

from numba import njit

from schedlab.engine.loop import run_engine
from schedlab.policies.contract import NoConfig, Policy, register
from schedlab.policies.pooled.needs import GittinsConfig, check_rigid, ranks_by_gittins
from schedlab.policies.pooled.ordering import (
    ORDER_GITTINS,
    ORDER_SRPT,
    POOLED_STATE,
    add_candidate,
    begin_decision,
    end_decision,
    first_position,
    init_order,
    next_candidate,
)


@njit(cache=True)
def choose(st, ps, k, n_run):
    """The best job alone (it gets all k servers: allocation k in end_decision)."""
    j, _ = next_candidate(st, ps, n_run, first_position(st, ps), math.inf)
    if j == -1:
        return 0
    add_candidate(st, ps, 0, j)
    ps.chosen[0] = 1
    return 1


@njit(cache=True)
def decide(st, ps):
    k = st.capacity[0, 0]
    n_run = begin_decision(st, ps, k)
    if n_run >= 0:
        end_decision(st, ps, k, choose(st, ps, k, n_run), k)


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


_COMMON = {
    "family": "pooled",
    "paper": "grosof2023",
    "state": POOLED_STATE,
    "runner": run,
    "check": check_rigid,
    "resource_pooled": True,
}
register(
    Policy(
        name="srpt-1",
        title="SRPT-1 (resource-pooled bound)",
        section="§3.1 and §4.1",
        summary="one server of speed k serving the least remaining size first: "
        "a lower bound for every policy",
        init=functools.partial(init_order, order=ORDER_SRPT),
        config=NoConfig,
        **_COMMON,
    )
)
register(
    Policy(
        name="gittins-1",
        title="Gittins-1 (resource-pooled bound)",
        section="§5.3",
        summary="one server of speed k serving the least Gittins rank first: the bound for "
        "unknown sizes",
        init=functools.partial(init_order, order=ORDER_GITTINS),
        ranks_by_gittins=ranks_by_gittins,
        config=GittinsConfig,
        **_COMMON,
    )
)
