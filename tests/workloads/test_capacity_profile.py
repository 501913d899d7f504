"""The usable capacity over time a logged schedule shows (issue 47 item 1; decision 0035):
bounds worked by hand, a brute-force sweep for every window (hypothesis) and the profile of a
log made by EASY on a machine whose capacity fell for a known period."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.workloads.traces import read
from schedlab.workloads.traces.swf_inference import (
    capacity_profile,
    logged_schedule,
    use_quantile,
)
from tests.helpers.swf_logs import REDUCED, TRUE_CAPACITY, stepped_log, write_swf


def profile_of(path: Path, max_procs: int, window: float):
    s = logged_schedule(read(path, "swf"))
    return capacity_profile(s["submit"], s["start"], s["end"], s["need"], max_procs, window)


def test_bounds_by_hand(tmp_path: Path) -> None:
    """10 processors, windows of 100 s. A runs [0, 300) on 5; B (3 wide) waits [0, 250) and
    runs [250, 350); C (2 wide) waits [50, 120) and runs [120, 150).
    [0, 100): 5 run; B waits (5 + 3 - 1 = 7), then C too (5 + 2 - 1 = 6): upper 7, lower 5.
    [100, 200): 5 run with C waiting (6), 7 with B (9), 5 with B (7): upper 9, lower 7.
    [200, 300): B waits with 5 running (7), then nothing waits (10): upper 10, lower 8.
    [300, 400): nothing waits: upper 10, lower 3 (B alone)."""
    path = write_swf(tmp_path / "hand.swf", [0, 0, 50], [300, 100, 30], [5, 3, 2], [0, 250, 70])
    got = profile_of(path, 10, 100.0)
    assert got.starts.tolist() == [0, 100, 200, 300]
    assert got.lower.tolist() == [5, 7, 8, 3]
    assert got.upper.tolist() == [7, 9, 10, 10]
    assert got.usable.tolist() == [7, 9, 10, 10]
    # on at most 8: the upper bound capped at 8, never below what the log ran (8 in [200, 300))
    assert got.under(8).tolist() == [7, 8, 8, 8]
    assert got.under(6).tolist() == [6, 7, 8, 6]


def test_use_quantile_by_hand() -> None:
    """4 processors on [0, 10), 1 on [10, 40): over the 40 s, 1 for 75% of the time."""
    start, end, need = np.array([0.0, 0.0]), np.array([10.0, 40.0]), np.array([3.0, 1.0])
    assert use_quantile(start, end, need, 0.5) == 1.0
    assert use_quantile(start, end, need, 0.74) == 1.0
    assert use_quantile(start, end, need, 0.76) == 4.0
    assert use_quantile(start, end, need, 0.99) == 4.0


jobs = st.lists(
    st.tuples(
        st.integers(0, 500),  # submit
        st.integers(0, 300),  # wait
        st.integers(1, 200),  # run time
        st.integers(1, 8),  # processors
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(rows=jobs, window=st.sampled_from([7.0, 50.0, 100.0, 333.0]))
def test_bounds_against_a_sweep(rows, window) -> None:
    """Every window's bounds against a brute-force sweep of its instants (its start and every
    submit, start and end in it): lower the most processors running, upper the largest of
    used + narrowest waiting - 1 (MaxProcs when nothing waits), capped at MaxProcs; the windows
    cover the logged span; lower <= upper wherever the log ran no more than MaxProcs."""
    max_procs = 12
    submit, wait, run, need = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    start = submit + wait
    end = start + run
    got = capacity_profile(submit, start, end, need, max_procs, window)
    t0, t1 = submit.min(), end.max()
    assert got.starts[0] == t0 and np.allclose(np.diff(got.starts), window)
    assert got.starts[-1] < max(t1, t0 + window) <= got.starts[-1] + window
    events = np.concatenate([submit, start, end])
    for i, a in enumerate(got.starts):
        instants = np.unique(np.concatenate([[a], events[(events >= a) & (events < a + window)]]))
        lower, upper = 0.0, 0.0
        for t in instants:
            used = need[(start <= t) & (t < end)].sum()
            waiting = need[(submit <= t) & (t < start)]
            bound = min(used + waiting.min() - 1, max_procs) if waiting.size else max_procs
            lower, upper = max(lower, used), max(upper, bound)
        assert got.lower[i] == lower and got.upper[i] == upper
        assert upper <= max_procs
        if lower <= max_procs:
            assert lower <= upper and got.usable[i] == upper


@pytest.fixture(scope="module")
def stepped(tmp_path_factory) -> Path:
    return stepped_log(tmp_path_factory.mktemp("stepped"))


@pytest.mark.parametrize("window", [3600.0, 21600.0])
def test_the_profile_of_a_log_made_on_a_known_profile(stepped: Path, window: float) -> None:
    """EASY ran the log on 100 processors, only 60 of them usable during :data:`REDUCED`: in
    every window inside it the most the log ran is the 60 (a queue built up: load 0.85 of 100
    on 60) and the upper bound is at least 60 (EASY starts the oldest job whenever it fits, and
    at the instant 60 run a job waits that would have fitted on more) and at most 60 + 31 (the
    widest job less one); every window wholly outside it shows all 100 (an instant without a
    queue or 100 running)."""
    got = profile_of(stepped, 100, window)
    inside = (got.starts >= REDUCED[0]) & (got.starts + window <= REDUCED[1])
    outside = (got.starts + window <= REDUCED[0]) | (got.starts >= REDUCED[1])
    assert inside.sum() >= math.floor((REDUCED[1] - REDUCED[0]) / window) - 1
    assert (got.lower[inside] == TRUE_CAPACITY).all()
    assert (got.upper[inside] >= TRUE_CAPACITY).all()
    assert (got.upper[inside] <= TRUE_CAPACITY + 31).all()
    assert (got.usable[outside] == 100).all()
    # capped at the true capacity, the profile is the truth in every window wholly inside
    assert (got.under(TRUE_CAPACITY)[inside] == TRUE_CAPACITY).all()
