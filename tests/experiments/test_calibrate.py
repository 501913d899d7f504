"""Calibration of a replay to its log (issue 47 items 2 and 3) on synthetic logs whose truth is
known: a log made by EASY on 60 of its 100 processors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import SchedlabError
from schedlab.experiments.calibrate import calibrate, replay, with_capacity
from schedlab.workloads.traces import read

EASY = {"name": "easy-backfill", "durations": "estimate"}  # the replay judged

TRUE_CAPACITY = 60


def write_swf(path: Path, submit, run, procs, wait) -> Path:
    rows = [
        f"{j + 1} {s:.0f} {w:.0f} {r:.0f} {n} -1 -1 {n} {2 * r:.0f} -1 1 {1 + j % 7} 1 "
        "-1 -1 -1 -1 -1"
        for j, (s, r, n, w) in enumerate(zip(submit, run, procs, wait, strict=True))
    ]
    path.write_text("; MaxProcs: 100\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """1,500 jobs (1-32 processors, run times exponential with mean 1,000 s, requests twice the
    run time) at load 0.85 of 60 processors; their logged waits are those EASY gives them on 60
    processors."""
    folder = tmp_path_factory.mktemp("synthetic")
    rng = np.random.default_rng(47)
    n = 1500
    procs = rng.integers(1, 33, n)
    run = np.ceil(rng.exponential(1000.0, n))
    rate = 0.85 * TRUE_CAPACITY / (procs.mean() * run.mean())
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, n)))
    draft = write_swf(folder / "draft.swf", submit, run, procs, np.zeros(n))
    truth = replay(read(draft, "swf"), TRUE_CAPACITY, EASY, folder, seed=1)
    assert np.isfinite(truth.wait).all()
    return write_swf(folder / "log.swf", submit, run, procs, np.round(truth.wait))


def test_calibration_recovers_the_capacity_the_log_was_made_on(synthetic: Path) -> None:
    result = calibrate(read(synthetic, "swf"), str(synthetic), 100, EASY)
    assert abs(result.fitted_capacity - TRUE_CAPACITY) <= 2
    assert result.clipped == 0
    cal, plain = result.calibrated, result.plain
    assert cal.mean_ratio == pytest.approx(1.0, abs=0.15)
    assert cal.spearman > 0.9 and cal.kendall_start > 0.9
    # the plain replay on all 100 processors waits far less than the log
    assert plain.mean_ratio < 0.5 and abs(cal.mean_ratio - 1) < abs(plain.mean_ratio - 1)
    # reproducible: a second calibration gives the same record
    again = calibrate(read(synthetic, "swf"), str(synthetic), 100, EASY)
    assert again.record() == result.record()


def test_capacity_never_exceeded_and_wide_jobs_clipped(synthetic: Path) -> None:
    """On 20 processors the 32-wide jobs run on all 20 (counted); at no instant do the replayed
    jobs hold more than 20 processors (a sweep over every start and end)."""
    table = read(synthetic, "swf")
    derived, clipped = with_capacity(table, 20)
    need = derived.column("need").to_numpy()
    assert clipped == int((table.column("need").to_numpy() > 20).sum()) > 0
    assert need.max() == 20
    got = replay(table, 20, EASY, synthetic.parent, seed=1)
    start = got.start
    end = start + table.column("duration").to_numpy()
    for t in np.unique(start):
        assert need[(start <= t) & (t < end)].sum() <= 20


def test_a_log_too_short_to_split_is_one_line(tmp_path: Path) -> None:
    path = write_swf(tmp_path / "short.swf", [0, 10, 20], [5, 5, 5], [1, 1, 1], [0, 0, 0])
    with pytest.raises(SchedlabError) as info:
        calibrate(read(path, "swf"), str(path), 100, EASY)
    assert "\n" not in str(info.value) and "too short to split" in str(info.value)


def test_a_log_without_logged_waits_is_one_line(tmp_path: Path) -> None:
    n = 200
    path = write_swf(tmp_path / "nowait.swf", np.arange(n) * 10.0, [5] * n, [1] * n, [-1] * n)
    with pytest.raises(SchedlabError) as info:
        calibrate(read(path, "swf"), str(path), 100, EASY)
    assert "\n" not in str(info.value) and "no job has a logged wait" in str(info.value)
