"""Paper 002's trace experiments (psychas2022 §7.2, Figs 5-6) on a small trace with priorities:
the typed conversion (size rounded up to a power of 1/2, type = (priority group, size), reward =
size x factor) and the claims the figures check."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schedlab.reproduce import psychas2022 as P
from schedlab.reproduce.registry import Context
from schedlab.workloads.traces import priority_types as T


def test_priority_groups_of_the_google_2011_scale():
    # free 0-1, middle 2-8, production 9-11 (INFERRED grouping, PRIORITY_BOUNDS)
    got = T.priority_group(np.array([0, 1, 2, 5, 8, 9, 11]))
    assert got.tolist() == [0, 0, 1, 1, 1, 2, 2]


def write_trace(path, n=3000, seed=3, priorities=True):
    rng = np.random.default_rng(seed)
    columns = {
        "arrival": np.sort(rng.uniform(0, 400, n)),
        "duration": rng.exponential(30.0, n) + 1.0,
        "demand": rng.choice([0.3, 0.1, 0.06], n),  # rounded up to 1/2, 1/8, 1/16
    }
    if priorities:
        columns["priority"] = rng.choice([0, 1, 4, 10], n)  # groups 0, 0, 1, 2
    pq.write_table(pa.table(columns), path)
    return path


def test_typed_trace_types_and_rewards(tmp_path, monkeypatch):
    path = write_trace(tmp_path / "t.parquet", n=500)
    monkeypatch.setenv(P.TRACE_ENV, str(path))
    tt = T.typed_trace(tmp_path / "out")
    raw = pq.read_table(path).to_pydict()
    assert set(tt.sizes.tolist()) == {0.5, 0.125, 0.0625}
    assert set(tt.priority.tolist()) == {0, 1, 2}
    assert np.allclose(tt.reward, tt.sizes * np.array(T.PRIORITY_FACTOR)[tt.priority])
    # each job's type is (its priority group, its rounded size), in arrival order
    order = np.argsort(raw["arrival"], kind="stable")
    size = {0.3: 0.5, 0.1: 0.125, 0.06: 0.0625}
    want = [
        (int(T.priority_group(np.array([raw["priority"][i]]))[0]), size[raw["demand"][i]])
        for i in order
    ]
    got = [(int(tt.priority[c]), float(tt.sizes[c])) for c in tt.job_class]
    assert got == want
    assert np.isclose(tt.share.sum(), 1.0)


@pytest.mark.parametrize("priorities", [True, False])
def test_fig5_and_fig6_claims_follow_the_paper(tmp_path, monkeypatch, priorities):
    """With priority groups the figures check the paper's DRA+preemption claims; with one
    group they say the claims are not checked (no claim 'DRA beats power-of-d': the paper
    does not make it)."""
    path = write_trace(tmp_path / "t.parquet", n=1500, priorities=priorities)
    monkeypatch.setenv(P.TRACE_ENV, str(path))
    ctx = Context(quick=True, out=tmp_path / "out", workers=1)
    fig5 = P.run_fig5(replace(P.FIG5, quick_sizes=(10, 30)), ctx)  # a small trace: few servers
    texts = [c.text for c in fig5.claims]
    assert not any("DRA earns more than power-of-d" in t for t in texts)
    has_pre = [t for t in texts if t.startswith("'DRA with preemptions is better")]
    assert len(has_pre) == (2 if priorities else 0)
    assert any(n.startswith("NOT CHECKED") for n in fig5.notes) != priorities
    bound_claim = next(c for c in fig5.claims if c.text.startswith("'Upper bound:"))
    assert bound_claim.passed  # the LP on the infinite-server jobs bounds every policy
    fig6 = P.run_fig6(replace(P.FIG6, servers=20), ctx)
    texts6 = [c.text for c in fig6.claims]
    assert any(t.startswith("'power-of-d choices algorithm can be better") for t in texts6)
    assert any(t.startswith("DRA+preemption 'is strictly better") for t in texts6) == priorities
    assert next(c for c in fig6.claims if c.text.startswith("'Upper bound:")).passed
