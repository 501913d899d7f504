"""grosof2023-fig3/fig4 at the authors' scale (issue 33 item 5): the split loads 0.995 and 0.999
are judged, the plan prints first (and alone with --plan-only), the run itself works."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.experiments.store import ResultStore
from schedlab.report.figures import Point
from schedlab.reproduce import grosof2023 as G
from schedlab.reproduce.registry import FAIL, NOT_CHECKED, PASS

LOADS = (0.8, 0.9, 0.95, 0.995, 0.999)
RATE = 2e6  # arrivals per CPU second the tests give every policy instead of calibrating


def _rows(srpt1_at_0999: float) -> list[Point]:
    """E[T] rows: SRPT-1 at the analytic value (but at 0.999), ServerFilling-SRPT's ratio
    falling toward 1, the others' growing; the analytic rows of the judge."""
    rows = []
    for i, load in enumerate(LOADS):
        b = G.bounds(load, "exponential")
        srpt1 = srpt1_at_0999 if load == 0.999 else b.lower
        ratios = {
            "srpt-1": 1.0,
            "server-filling-srpt": 2.0 - 0.2 * i,
            "server-filling": 3.0 + i,
            "max-weight": 5.0 + i,
            "max-weight-greedy": 8.0 + i,
        }
        for p, r in ratios.items():
            v = srpt1 * r
            rows.append(Point(G.label(p), load, v, 0.99 * v, 1.01 * v))
        rows += [
            Point(G.FORMULA, load, b.lower, b.lower, b.lower, analytic=True),
            Point(G.THEOREM, load, b.upper, b.upper, b.upper, analytic=True),
        ]
    return rows


def test_split_loads_are_judged_and_can_fail():
    exact = G.bounds(0.999, "exponential").lower
    paper = G.ratio_judge(LOADS, "exponential", 10**7)(_rows(exact))
    assert all("rho=0.999: run too short" in c.evidence for c in (paper[0], *paper[-2:]))
    authors = G.ratio_judge(LOADS, "exponential", 10**7, G.AUTHORS_LOADS)
    claims = authors(_rows(exact))
    assert [c.verdict for c in claims] == [PASS] * len(claims), [c.evidence for c in claims]
    assert not any("too short" in c.evidence for c in claims)
    assert "rho=0.999: 1.2" in claims[1].evidence  # the trend reaches 0.999
    # a simulated SRPT-1 5% off the exact value at 0.999 (intervals +-1%): MISMATCH
    off = authors(_rows(1.05 * exact))
    assert off[-2].verdict == FAIL and "rho=0.999" in off[-2].evidence.split("MISMATCH")[0]
    assert NOT_CHECKED not in [c.verdict for c in off]


def _plan_output(tmp_path, monkeypatch, *args: str, stdin: str | None = None):
    monkeypatch.setattr(G, "_arrivals_per_second", lambda policy, sizes: RATE)
    out = tmp_path / "fig3"
    result = CliRunner().invoke(
        app,
        ["reproduce", "grosof2023-fig3", "--scale", "authors", "--out", str(out), *args],
        input=stdin,
    )
    return result, out


def test_plan_only_prints_arrivals_core_hours_and_wall_time_and_runs_nothing(tmp_path, monkeypatch):
    result, out = _plan_output(tmp_path, monkeypatch, "--plan-only", "--workers", "16")
    assert result.exit_code == 0, result.output
    plans = G.authors_plans("exponential")
    text = " ".join(result.output.split())
    for plan in plans.values():
        assert plan.describe() in text
    per_policy = sum(p.total_arrivals for p in plans.values()) + 8 * 10**7
    assert per_policy > 1.1e10  # 0.999 alone: 20 x (4.0e7 + 5.0e8)
    core_hours = 5 * per_policy / RATE / 3600
    longest = plans[0.999].arrivals_per_piece / RATE / 3600
    wall = max(core_hours / 16, longest)
    assert f"total {core_hours:,.1f} core-hours" in text
    assert f"expected wall time with 16 worker(s): {wall:,.1f} h" in text
    assert not out.exists()


def test_the_plan_prints_before_the_confirmation(tmp_path, monkeypatch):
    result, out = _plan_output(tmp_path, monkeypatch, "--workers", "1", stdin="n\n")
    assert result.exit_code == 1
    plan_at = result.output.index("core-hours")
    assert plan_at < result.output.index("run it?")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["grosof2023-fig3", "--scale", "authors", "--quick"], "exclude each other"),
        (["grosof2023-fig2", "--scale", "authors"], "has no authors' scale"),
        (["grosof2023-fig3", "--scale", "huge"], "expected paper or authors"),
        (["grosof2023-fig3", "--plan-only"], "go with --scale authors"),
        (["--audit", "grosof2023-fig3", "--scale", "authors"], "--audit runs the paper scale"),
    ],
)
def test_scale_errors_are_one_line(args, message):
    result = CliRunner().invoke(app, ["reproduce", *args])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.output


def test_a_tiny_authors_scale_run_judges_its_split_loads(tmp_path, monkeypatch):
    from schedlab.reproduce import registry
    from schedlab.reproduce.driver import resized

    fig3 = registry.get_reproduction("grosof2023-fig3")
    tiny = resized(fig3, loads=(0.5, 0.6, 0.7), arrivals=3000)
    monkeypatch.setitem(registry._REGISTRY, fig3.name, tiny)
    monkeypatch.setattr(G, "AUTHORS_LOADS", (0.6, 0.7))
    monkeypatch.setattr(G, "PIECES", 3)
    monkeypatch.setattr(G, "MEASURED_RELAXATIONS", 300)
    result, out = _plan_output(tmp_path, monkeypatch, "--yes", "--workers", "1")
    assert "core-hours" in result.output.split("PASS")[0]
    record = json.loads((out / "experiment.json").read_text())
    assert record["scale"].startswith("authors' scale: loads ")
    evidence = {c["text"][:40]: c["evidence"] for c in record["claims"]}
    assert not any("too short" in e for e in evidence.values()), evidence
    srpt1 = next(e for t, e in evidence.items() if t.startswith("simulated SRPT-1"))
    assert "rho=0.7:" in srpt1 and "rho=0.6:" in srpt1
    plan = G.authors_plans("exponential")[0.7]
    assert math.floor(plan.warmup_fraction * plan.arrivals_per_piece) == plan.warmup
    # the figure's ratio at a split load: paired t interval over the 3 replications' ratios
    runs = [r for r in ResultStore(out).read() if r["load"] == 0.7]  # split: no single run
    means = {(r["policy"], r["replication"]): r["mean_response_time"] for r in runs}
    assert len(means) == 5 * 3
    ratios = np.array([means[("server-filling-srpt", i)] / means[("srpt-1", i)] for i in range(3)])
    with (out / "grosof2023-fig3.csv").open() as f:
        row = next(r for r in csv.reader(f) if r[:2] == ["ServerFilling-SRPT", "0.7"])
    lo, hi = float(row[3]), float(row[4])
    half = stats.t.ppf(0.975, 2) * ratios.std(ddof=1) / math.sqrt(3)
    assert (hi - lo) / 2 == pytest.approx(half, rel=1e-9)
    assert result.exit_code == 0, result.output
