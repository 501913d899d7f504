"""The shared pieces of reproduce/driver.py (issue 44 item 7): the (policy, x) grid gives each
key the records of its own spec, an analytic curve is exact points, and a registered figure can
be resized without touching anything but its spec."""

from __future__ import annotations

import math

import pytest

from schedlab.reproduce import grosof2023 as G
from schedlab.reproduce.driver import Analytic, FigureRun, record_point, resized, run_grid
from schedlab.reproduce.registry import get_reproduction


class EchoContext:
    """A stand-in for Context.run: each spec's records name its policy and load, one per
    replication, and every call is kept."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def run(self, specs, replications=1, experiment=""):
        self.calls.append((len(specs), replications, experiment))
        return [
            [{"policy": s.policy.name, "load": s.workload.load, "r": r} for r in range(n)]
            for s in specs
            for n in [replications]
        ]


def test_run_grid_keys_each_policy_and_x_to_its_own_records():
    ctx = EchoContext()
    policies, loads = ("server-filling", "srpt-1"), (0.5, 0.7, 0.9)
    runs = run_grid(
        ctx,
        lambda p, load: G.spec(p, load, 100, "exponential"),
        policies,
        loads,
        experiment="grid",
        replications=3,
    )
    assert ctx.calls == [(6, 3, "grid")]  # one call for the whole grid
    assert list(runs) == [(p, x) for x in loads for p in policies]
    for (policy, load), records in runs.items():
        assert [r["r"] for r in records] == [0, 1, 2]
        assert {(r["policy"], r["load"]) for r in records} == {(policy, load)}


def test_record_point_reads_the_metric_its_interval_and_stability():
    rec = {"mean_queue": 2.0, "mean_queue_lo": 1.5, "mean_queue_hi": 2.5, "stable": 0}
    p = record_point("A", 0.3, rec, "mean_queue")
    assert (p.series, p.x, p.mean, p.lo, p.hi, p.stable) == ("A", 0.3, 2.0, 1.5, 2.5, False)


def test_analytic_points_are_exact_values():
    points = Analytic("x squared", lambda x: x * x).points([1.0, 3.0])
    assert [(p.x, p.mean, p.lo, p.hi, p.analytic) for p in points] == [
        (1.0, 1.0, 1.0, 1.0, True),
        (3.0, 9.0, 9.0, 9.0, True),
    ]


def test_resized_changes_the_spec_only():
    entry = get_reproduction("grosof2023-fig3")
    small = resized(entry, loads=(0.5, 0.9), quick_arrivals=4000)
    assert isinstance(small.run, FigureRun) and small.run.driver is entry.run.driver
    assert (small.run.spec.loads, small.run.spec.quick_arrivals) == ((0.5, 0.9), 4000)
    assert small.run.spec.policies == entry.run.spec.policies
    assert (small.name, small.title, small.scale) == (entry.name, entry.title, entry.scale)
    assert entry.run.spec.loads == G.RATIO_LOADS  # the registered figure is unchanged
    with pytest.raises(TypeError, match="swf-logs"):
        resized(get_reproduction("swf-logs"), loads=())


def test_the_ratio_figures_draw_the_bound_over_the_analytic_srpt1():
    b = G.bounds(0.9, "exponential")
    (point,) = G.FIG3.analytic.points([0.9])
    assert math.isclose(point.mean, b.upper / b.lower) and point.analytic
