"""A randomized policy's own draws (the "policy" stream, schedlab.streams) are independent across
replications and repeatable within one: replications of G16 or power-of-d used to share the
stream of replication 0, so a replicated estimate's interval counted one policy randomness as
many. Checked on one fixed job sequence, so only the policy's draws can differ."""

from __future__ import annotations

import sys

import pytest

from schedlab.model.compile import compile_model
from schedlab.online.log import actions_of
from schedlab.simulation.generate import JobSource, concatenate
from schedlab.simulation.simulate import as_spec, prepare, steps
from tests.helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from check_reference import registry_cases

sys.path.remove(str(ROOT / "benchmarks"))

RANDOMIZED = ("power-of-d", "g16")  # the built-in policies that draw from the policy stream


def decisions(model, jobs, replication: int) -> list[tuple[str, int, int]]:
    """(kind, arrival number, server) of every action of one replication on ``jobs``."""
    run = prepare(model, replication, jobs=jobs, action_log=1 << 15)
    taken = []
    for _ in steps(run, 64):
        taken += actions_of(run.st, int)
    taken += actions_of(run.st, int)
    return [(a.kind, a.job, a.server) for a in taken]


@pytest.mark.parametrize(
    ("policy", "base", "params"),
    [(p, b, q) for p, _, b, q in registry_cases() if p in RANDOMIZED],
    ids=[p for p, _, _, _ in registry_cases() if p in RANDOMIZED],
)
def test_replications_draw_independent_policy_streams(policy, base, params):
    spec = {**base, "policy": {"name": policy, **params}, "run": {"arrivals": 1500, "seed": 3}}
    model = compile_model(as_spec(spec))
    jobs = concatenate(list(JobSource(model, 3, 0).units()))
    first = decisions(model, jobs, 0)
    assert first == decisions(model, jobs, 0)  # repeatable
    assert first != decisions(model, jobs, 1)  # the policy's draws differ
