"""The berg2020 reproductions end to end on tiny grids, and their statistics helpers."""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
import pytest

import schedlab.reproduce.berg2020 as B
from schedlab.reproduce.registry import Context, get_reproduction


def test_registered():
    for name, figure in [("berg2020-fig4", "Fig. 4"), ("berg2020-fig5", "Fig. 5"),
                         ("berg2020-fig6", "Fig. 6")]:  # fmt: skip
        entry = get_reproduction(name)
        assert entry.paper == "berg2020" and entry.figure == figure


def _record(mean: float, lo: float, hi: float) -> dict:
    return {
        "stable": True,
        "arrivals": 1000,
        "mean_response_time": mean,
        "mean_response_time_lo": lo,
        "mean_response_time_hi": hi,
        "mean_response_time[inelastic]": mean,
        "mean_response_time[elastic]": mean,
    }


def test_summaries_and_sequential_sizing():
    one = B.summarize([_record(2.0, 1.9, 2.1)])
    assert (one.lo, one.hi, one.dof) == (1.9, 2.1, 19)
    many = B.summarize([_record(v, v, v) for v in (1.0, 2.0, 3.0)])
    assert many.mean == 2.0 and many.dof == 2
    assert many.half_width == pytest.approx(4.302652729749464 * 1.0 / np.sqrt(3))
    plan = B.SimPlan(1000, 3, 50, 0.005, 0.02)
    assert B._needed(many, plan) == 50  # far too wide: capped
    assert B._needed(B.summarize([_record(2.0, 2.0, 2.0)] * 3), plan) == 3  # on target


def test_paired_verdict():
    a = B.summarize([_record(v, v, v) for v in (1.0, 1.1, 0.9, 1.05)])
    b = B.summarize([_record(1.2 * v, v, v) for v in (1.0, 1.1, 0.9, 1.05)])
    assert B._verdict(a, b)[0] == "IF"  # EF/IF = 1.2 exactly in every replication
    assert B._verdict(b, a)[0] == "EF"
    assert B._verdict(a, a)[0] == "unresolved"


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    monkeypatch.setattr(B, "plan_for", lambda ctx, rho, precise: B.SimPlan(30_000, 1, 1, None, 0.1))
    return Context(quick=True, out=tmp_path, workers=1)


TINY_LOADS = {"low": 0.3, "high": 0.7}
# The figures' specs on smaller grids (two loads, three x values, one or two simulated).
TINY_FIG4 = replace(B.FIG4, loads=TINY_LOADS, mus=(0.5, 1.0, 2.0), quick_sim_mus=(0.5, 2.0))
TINY_FIG5 = replace(
    B.FIG5,
    panels=tuple(
        B.CurvePanel(s, rho, f"{n} load")
        for s, (n, rho) in zip("ab", TINY_LOADS.items(), strict=True)
    ),
    xs=(0.5, 1.0, 2.0),
    quick_sim_xs=(0.5, 2.0),
)
TINY_FIG6 = replace(B.FIG6, xs=(1, 2, 3), quick_sim_xs=(2,))


def test_fig4_pipeline(tiny):
    outcome = B.run_heat_map(TINY_FIG4, tiny)
    assert [p.suffix for p in outcome.figures] == [".png", ".svg", ".csv", ".csv"]
    assert all(p.exists() for p in outcome.figures)
    rows = list(csv.DictReader(outcome.figures[3].open()))
    assert len(rows) == 2 * 4  # loads x simulated (mu_I, mu_E)
    assert {r["analysis_winner"] for r in rows} <= {"IF", "EF"}
    assert len(outcome.claims) == 5  # with the agreement claim (issue 35 item 4)
    assert outcome.claims[0].passed and outcome.claims[2].passed  # Thm 5, exact agrees


def test_fig5_and_fig6_pipelines(tiny):
    for spec, n_fig in ((TINY_FIG5, 2 * 3 + 1), (TINY_FIG6, 2 * 3 + 1)):
        outcome = B.run_curves(spec, tiny)
        assert len(outcome.figures) == n_fig and all(p.exists() for p in outcome.figures)
        rows = list(csv.DictReader(outcome.figures[-1].open()))
        for r in rows:  # analysis, exact and simulation side by side
            assert abs(float(r["analysis"]) / float(r["exact"]) - 1) < 0.01
            assert float(r["sim_lo"]) < float(r["sim_mean"]) < float(r["sim_hi"])
        assert any("quick, looser" in c.text for c in outcome.claims)
