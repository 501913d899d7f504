"""Engine invariants for the backfilling family on hypothesis-generated pooled specs.

Reuses the audit of tests/helpers/audit.py (which treats pooled policies other than FCFS as
preemptive) and adds what holds for a non-preemptive policy: no preemption, service exactly equal
to the work, and a sweep over start/finish events that never exceeds the k servers. (Synthetic
jobs have no user estimates, so ``durations = "estimate"`` and ``"actual"`` coincide here; the
estimate path is checked against reference implementations in
tests/policies/pooled/test_easy_backfill.py and tests/policies/pooled/test_backfill_family.py.)"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from tests.helpers.audit import audit
from tests.helpers.spec_strategies import EXAMPLES, pooled_specs

TESTED_POLICIES = {"easy-backfill", "easy-backfill-exact", "conservative-backfill", "sjbf"}


def audit_non_preemptive(result, spec) -> None:
    audit(result, spec)
    assert result.counters["preemptions"] == 0
    jobs = result.jobs.to_pydict()
    start = np.array(jobs["start"], dtype=float)
    finish = np.array(jobs["finish"], dtype=float)
    work = np.array(jobs["work"])
    need = np.array(jobs["demand[servers]"])
    assert np.allclose(finish - start, work, rtol=1e-9, atol=1e-9), "a job was preempted"
    events = sorted(
        [(f, 0, j) for j, f in enumerate(finish)] + [(s, 1, j) for j, s in enumerate(start)]
    )
    used = 0.0
    k = float(spec["cluster"]["servers"])
    for _, kind, j in events:  # releases before starts at equal times
        used += need[j] if kind else -need[j]
        assert used <= k + 1e-9, (used, k)


@settings(max_examples=EXAMPLES * len(TESTED_POLICIES), suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(TESTED_POLICIES)).flatmap(pooled_specs))
def test_invariants_backfill(spec):
    spec["run"]["check"] = True
    audit_non_preemptive(schedlab.simulate(spec), spec)
