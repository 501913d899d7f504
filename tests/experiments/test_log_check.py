"""The log itself and the validation line of `schedlab compare` on an SWF log (issue 30 item 7),
on hand-made logs whose numbers are worked out here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.commands.compare import VALIDATION_POLICY
from schedlab.experiments.compare import workload_base
from schedlab.experiments.log_check import logged_waits, validate
from schedlab.workloads.traces import convert

REST = "-1 -1 {need} {req} -1 1 1 1 -1 1 -1 -1 -1"


def swf(tmp_path: Path, rows: list[tuple[int, float, float, float, int, float]]) -> Path:
    """A converted SWF log of (job, submit, wait, run, processors, requested time) rows on a
    4-processor machine."""
    lines = ["; MaxProcs: 4"] + [
        f"{j} {s:g} {w:g} {r:g} {n} " + REST.format(need=n, req=f"{q:g}")
        for j, s, w, r, n, q in rows
    ]
    (tmp_path / "log.swf").write_text("\n".join(lines) + "\n")
    out = tmp_path / "log.parquet"
    convert(tmp_path / "log.swf", "swf", out)
    return out


def test_logged_waits_by_hand(tmp_path: Path) -> None:
    """Waits 0, 10, 100 and one unknown (-1); runs 5, 20, 1, 3; tau = 10. Mean wait 110/3; p95
    by linear interpolation 10 + 0.9 x 90 = 91; bounded slowdowns max(5/10, 1) = 1,
    30/20 = 1.5, 101/10 = 10.1: mean 4.2; responses 5, 30, 101."""
    path = swf(
        tmp_path,
        [(1, 0, 0, 5, 1, 5), (2, 1, 10, 20, 1, 20), (3, 2, 100, 1, 1, 1), (4, 3, -1, 3, 1, 3)],
    )
    got = logged_waits(path, tau=10.0)
    assert got is not None
    assert (got.jobs, got.unknown) == (3, 1)
    assert got.mean_wait == pytest.approx(110 / 3)
    assert got.p95_wait == pytest.approx(91.0)
    assert got.mean_bounded_slowdown == pytest.approx(4.2)
    assert got.mean_response_time == pytest.approx((5 + 30 + 101) / 3)
    assert "tau = 10 s" in got.line() and "1 job(s) without a logged wait" in got.line()


def test_validation_matches_a_log_easy_would_have_made(tmp_path: Path) -> None:
    """Four jobs each needing all 4 processors, requested times exact: the machine ran them one
    after the other (waits 0, 9, 18) and so does EASY; the fourth job's logged wait is unknown
    (its simulated wait 25 - 3 = 22 is left out of the join). Means 9 and 9, correlation 1."""
    path = swf(
        tmp_path,
        [
            (11, 0, 0, 10, 4, 10),
            (12, 1, 9, 10, 4, 10),
            (13, 2, 18, 5, 4, 5),
            (14, 3, -1, 1, 4, 1),
        ],
    )
    base, _, _ = workload_base(path, servers=None, arrivals=None, seed=1)
    validation, result = validate(base, path, VALIDATION_POLICY, "EASY")
    assert validation.jobs == 3
    assert validation.simulated_mean_wait == pytest.approx(9.0)
    assert validation.logged_mean_wait == pytest.approx(9.0)
    assert validation.pearson == pytest.approx(1.0)
    assert validation.spearman == pytest.approx(1.0)
    jobs = result.jobs
    waits = dict(
        zip(
            jobs["log_job_id"].to_pylist(),
            (jobs["start"].to_numpy() - jobs["arrival"].to_numpy()),
            strict=True,
        )
    )
    assert waits["14"] == pytest.approx(22.0)
    assert np.isclose(validation.load, result.load)
    assert "(x1)" in validation.line()


def test_series_from_a_per_job_table_by_hand() -> None:
    """k = 4. A (need 2) arrives at 0, runs [0, 4); B (need 4) arrives at 1, waits until 4,
    runs [4, 6); C (need 1) arrives at 2, waits until 6, runs [6, 8). Sampled at 0, 1, ..., 8:
    utilization 2/4 over [0, 4), 1 over [4, 6), 1/4 over [6, 8), 0 at 8; waiting: 0, 1, 2, 2,
    then C alone over [4, 6), none from 6."""
    import pyarrow as pa

    from schedlab.experiments.log_check import UTILIZATION, series_from_jobs

    jobs = pa.table(
        {
            "arrival": [0.0, 1.0, 2.0],
            "start": [0.0, 4.0, 6.0],
            "finish": [4.0, 6.0, 8.0],
            "demand[servers]": [2.0, 4.0, 1.0],
        }
    )
    series = series_from_jobs(jobs, 4, points=9)
    assert series.column("time").to_pylist() == [float(t) for t in range(9)]
    util = [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 0.25, 0.25, 0.0]
    assert series.column(UTILIZATION).to_pylist() == util
    assert series.column("number_in_queue").to_pylist() == [0, 1, 2, 2, 1, 1, 0, 0, 0]
