"""The resource-pooled single server: SRPT-1 and Gittins-1 (grosof2023 §3.1, §4.1, §5.3).

The k servers act as one server of speed 1 in size units serving one job at a time: a job of
need K gets allocation k/K, so its duration D takes K D / k = its size S. Run on the same job
sequence as the multiserver policies, SRPT-1 (least remaining size first) is a lower bound on the
mean response time of every policy (§4.1) and Gittins-1 (least Gittins rank first) the bound for
unknown sizes (§5.3).
"""

from __future__ import annotations

import math

from schedlab.policies.pooled.needs import GittinsConfig
from schedlab.policies.pooled.ordered_policy import decide_ordered, register_ordered
from schedlab.policies.pooled.ordering import (
    ORDER_GITTINS,
    ORDER_SRPT,
    add_candidate,
    first_position,
    next_candidate,
)
from schedlab.policy_api import (
    kernel,
    run_engine,
)


@kernel(wraparound=False)
def choose(st, ps, k, n_run):
    """The best job alone (it gets all k servers: allocation k in end_decision)."""
    j, _ = next_candidate(st, ps, n_run, first_position(st, ps), math.inf)
    if j == -1:
        return 0
    add_candidate(st, ps, 0, j)
    ps.chosen[0] = 1
    return 1


@kernel(wraparound=False)
def decide(st, ps):
    decide_ordered(st, ps, choose, True)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


register_ordered(
    name="srpt-1",
    title="SRPT-1 (resource-pooled bound)",
    section="§3.1 and §4.1",
    summary="one server of speed k serving the least remaining size first: "
    "a lower bound for every policy",
    runner=run,
    order=ORDER_SRPT,
    resource_pooled=True,
)
register_ordered(
    name="gittins-1",
    title="Gittins-1 (resource-pooled bound)",
    section="§5.3",
    summary="one server of speed k serving the least Gittins rank first: the bound for "
    "unknown sizes",
    runner=run,
    order=ORDER_GITTINS,
    config=GittinsConfig,
    resource_pooled=True,
)
