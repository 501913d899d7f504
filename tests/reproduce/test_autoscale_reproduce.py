"""The psychas2022 reproductions: settings are the paper's (§2, §7.1), the helpers compute what
they claim, and the static-problem reproductions run and pass in their quick form."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from schedlab.model.compile import compile_model
from schedlab.reproduce import psychas2022 as R
from schedlab.reproduce.registry import Context, get_reproduction


def test_registered():
    for name in ("table1", "fig2", "fig3", "fig4", "fig5", "fig6"):
        assert get_reproduction(f"psychas2022-{name}").paper == "psychas2022"


def test_loss_spec_is_the_papers_model():
    rho = np.array(R.WORST_RHO)
    m = compile_model(R.loss_spec(R.WORST_TYPES, rho, 50, "dra", 10.0))
    # arrivals of type j at rate lambda_j L = rho_j L (mean service 1), reward vCPU + GB/8
    assert m.rate == pytest.approx(rho.sum() * 50)
    for c, (cpu, gb), r in zip(m.classes, R.WORST_TYPES, rho, strict=True):
        assert c.probability * m.rate == pytest.approx(r * 50)
        assert c.reward == pytest.approx(cpu + gb / 8)
        assert c.duration.mean == 1.0
    assert m.capacity.shape == (50, 2) and m.capacity[0].tolist() == [80.0, 640.0]


def test_random_collections_follow_table1():
    """3 distinct small and 3 distinct large Table 1 types per collection (§7.1)."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        types = R.random_collection(rng)
        cpus = [c for c, _ in types]
        assert all(c in R.SMALL_CPU for c in cpus[:3]) and all(c in R.LARGE_CPU for c in cpus[3:])
        assert all(g / c in R.GB_PER_CPU and g <= 640 for c, g in types)
        assert len(set(types[:3])) == 3 and len(set(types[3:])) == 3
    # the worst-case subset's (1 vCPU, 1 GB) type is not a Table 1 type
    assert (1.0, 1.0) not in R.table1_types(R.SMALL_CPU) + R.table1_types(R.LARGE_CPU)


def test_critical_points_helper():
    scales = np.arange(6.0)
    f_star = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 5.0])
    f_g = np.array([1.0, 2.0, 2.5, 3.5, 5.0, 5.0])
    assert R.critical_points(scales, f_g, f_star, 1e-9) == (1.0, 4.0)
    assert R.critical_points(scales, f_star, f_star, 1e-9) is None


def test_fig2_and_table1_quick_pass(tmp_path, monkeypatch):
    ctx = Context(quick=True, out=tmp_path)
    fig2 = R.run_fig2(replace(R.FIG2, quick_points=40), ctx)
    assert fig2.passed, fig2.claims
    assert all(p.exists() for p in fig2.figures)
    table1 = R.run_table1(replace(R.TABLE1, quick_collections=8), ctx)
    assert table1.claims[0].passed and table1.claims[3].passed, table1.claims
    assert "worst-case subset 0.87" in table1.claims[3].evidence
    assert "(1 vCPU, 1 GB)" in table1.notes[2]
