"""Engine invariants on hypothesis-generated specs, for every built-in policy.

Each run is made with action validation on (the engine refuses capacity overflows, preemption of
non-preemptive jobs, service of lost jobs), and then audited independently from its per-job
records: every job completed or lost exactly once, times ordered, non-preemptive service equal to
the work, and a sweep over each server's start/finish events that never exceeds its capacity.
"""

from __future__ import annotations

from hypothesis import given

import schedlab
from schedlab.policies.registry import all_policies, built_in_index
from tests.helpers import paths
from tests.helpers.audit import audit
from tests.helpers.spec_strategies import RELAXED, pooled_specs, resource_specs


def check(spec) -> None:
    spec["run"]["check"] = True
    audit(schedlab.simulate(spec), spec)


@RELAXED
@given(pooled_specs("fcfs"))
def test_invariants_fcfs(spec):
    check(spec)


@RELAXED
@given(resource_specs("fifo-ff", "packing"))
def test_invariants_fifo_ff(spec):
    check(spec)


@RELAXED
@given(resource_specs("first-fit", "packing"))
def test_invariants_first_fit_packing(spec):
    check(spec)


@RELAXED
@given(resource_specs("first-fit", "loss"))
def test_invariants_first_fit_loss(spec):
    check(spec)


TESTED_POLICIES = {"fcfs", "fifo-ff", "first-fit"}


def test_every_registered_policy_has_an_invariant_test():
    """Every policy must appear in TESTED_POLICIES of some tests/policies/**/test_invariants*.py
    module."""
    import importlib

    tested: set[str] = set()
    for path in (paths.TESTS / "policies").rglob("test_invariants*.py"):
        module = importlib.import_module(
            ".".join(path.relative_to(paths.ROOT).with_suffix("").parts)
        )
        tested |= getattr(module, "TESTED_POLICIES", set())
    missing = {p.name for p in all_policies() if p.name in built_in_index()} - tested  # not plugins
    assert not missing, f"policies without an invariant test: {sorted(missing)}"
