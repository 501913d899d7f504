"""The claims audit (reproduce/audit.py, issue 31 item 1): generic mutations of a reproduction's
result rows make each real claim FAIL, and a claim replaced by `True` is reported as "cannot
fail" — on four reproductions' judges (psychas2019, grosof2023, psychas2018, psychas2022) with
small synthetic rows, and once end to end through `schedlab reproduce --audit` on a shrunken
psychas2019-fig4b; F^g >= F*/2 FAILs when the greedy is replaced by a random assignment."""

from __future__ import annotations

import math
from dataclasses import replace

from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.report.figures import Point
from schedlab.reproduce import grosof2023 as G
from schedlab.reproduce import psychas2018 as V
from schedlab.reproduce import psychas2019 as R
from schedlab.reproduce import psychas2022 as W
from schedlab.reproduce.audit import CAN_FAIL, CANNOT_FAIL, UNCHECKED, audit, mutations
from schedlab.reproduce.registry import Claim, Judge

NAN = math.nan


def constant_first(judge: Judge) -> Judge:
    """``judge`` with its first claim replaced by one that always passes."""

    def replaced(rows):
        claims = judge(rows)
        return [Claim("always true", True, ""), *claims[1:]]

    return replaced


def psychas_rows() -> list[Point]:
    rows = [Point("alpha*", 0.0, 1.0, 0.99, 1.01, analytic=True)]
    for a in (0.85, 0.95, 0.99):
        rows.append(Point("VQS", a, NAN, NAN, NAN, stable=False, growth=0.02))
        rows.append(Point("BF-J/S", a, 10 * a, 9 * a, 11 * a))
        rows.append(Point("VQS-BF", a, 9 * a, 8 * a, 10 * a))
    return rows


def grosof_rows(loads: tuple[float, ...]) -> list[Point]:
    ratio = {"server-filling-srpt": 2.5, "server-filling": 3.0, "max-weight": 5.0}
    ratio["max-weight-greedy"] = 8.0
    rows = G._bound_rows(loads, "exponential")
    for load in loads:
        srpt = next(r.mean for r in rows if r.series == G.FORMULA and r.x == load)
        rows.append(Point(G.label("srpt-1"), load, srpt, 0.98 * srpt, 1.02 * srpt))
        for p, r in ratio.items():
            # ServerFilling-SRPT falls toward 1, the others grow with the load
            v = srpt * (r - 2 * (load - 0.8) if p == "server-filling-srpt" else r + 4 * load)
            rows.append(Point(G.label(p), load, v, 0.98 * v, 1.02 * v))
    return rows


def test_mutations_are_generic_and_cover_the_issue_list():
    names = [m.name for m in mutations(psychas_rows())]
    for expected in (
        "swap BF-J/S <-> VQS",
        "scale VQS-BF x0.5",
        "scale VQS-BF x2",
        "reverse BF-J/S",
        "flatten BF-J/S",  # no trend and no variation left (issue 31: trends, dispersion)
        "BF-J/S unstable at x=0.95",
        "widen all x10",
    ):
        assert expected in names
    assert "alpha* unstable" not in names  # an analytic value is never a run
    names = [m.name for m in mutations(grosof_rows((0.8, 0.9)))]
    assert f"{G.THEOREM} to the other side of ServerFilling-SRPT" in names  # a bound moved


def test_audit_finds_a_constant_claim_on_two_reproductions():
    judge = R.fig4_judge("b", (0.85, 0.95, 0.99))
    assert [a.status for a in audit(psychas_rows(), judge)] == [CAN_FAIL] * 3
    replaced = audit(psychas_rows(), constant_first(judge))
    assert [a.status for a in replaced] == [CANNOT_FAIL, CAN_FAIL, CAN_FAIL]

    loads = (0.8, 0.9, 0.95)
    judge = G.ratio_judge(loads, "exponential", 10**6)
    statuses = [a.status for a in audit(grosof_rows(loads), judge)]
    assert statuses == [CAN_FAIL] * len(statuses), statuses
    replaced = audit(grosof_rows(loads), constant_first(judge))
    assert replaced[0].status == CANNOT_FAIL and replaced[1].status == CAN_FAIL
    # too short a run for three judged loads: the trend claims are NOT CHECKED, not audited
    short = audit(grosof_rows(loads), G.ratio_judge(loads, "exponential", 20_000))
    assert [a.status for a in short[1:5]] == [UNCHECKED] * 4


def test_cli_audit_reports_cannot_fail_and_exits_nonzero(monkeypatch, tmp_path):
    from schedlab.reproduce import registry
    from schedlab.reproduce.driver import resized

    fig4b = registry.get_reproduction("psychas2019-fig4b")
    constant = resized(
        fig4b,
        quick_alphas=(0.85,),
        judge=lambda which, alphas: constant_first(R.fig4_judge(which, alphas)),
    )
    monkeypatch.setitem(registry._REGISTRY, fig4b.name, constant)
    args = ["reproduce", "--audit", "psychas2019-fig4b", "--quick", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 1, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert any(line.startswith("cannot fail") and "always true" in line for line in lines)
    assert sum(line.startswith("can fail") for line in lines) == 2
    assert not list(tmp_path.glob("runs/*.tmp*"))


def test_cli_audit_all_audits_every_reproduction(monkeypatch, tmp_path):
    """`--audit --all` goes on after a reproduction with a claim that cannot fail (two stand-in
    reproductions built on the real judges, with synthetic rows)."""
    from schedlab.reproduce import registry

    loads = (0.8, 0.9, 0.95)
    fake = [
        registry.Reproduction(
            "aaa-constant",
            "psychas2019",
            "Fig. 4(b)",
            "stand-in",
            lambda ctx: registry.judged(
                [], psychas_rows(), constant_first(R.fig4_judge("b", (0.85, 0.95, 0.99))), []
            ),
        ),
        registry.Reproduction(
            "bbb-real",
            "grosof2023",
            "Fig. 3",
            "stand-in",
            lambda ctx: registry.judged(
                [], grosof_rows(loads), G.ratio_judge(loads, "exponential", 10**6), []
            ),
        ),
    ]
    monkeypatch.setattr(registry, "all_reproductions", lambda: fake)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["reproduce", "--audit", "--all", "--quick"])
    assert result.exit_code == 1, result.output
    assert "audit aaa-constant" in result.output and "audit bbb-real" in result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert sum(line.startswith("cannot fail") for line in lines) == 1
    assert sum(line.startswith("can fail") for line in lines) == 2 + 7


def psychas2018_rows(xs: tuple[float, ...], queue: dict[str, float]) -> list[Point]:
    """Fig. 6 rows as the paper describes them: each policy's mean queue at each zeta under
    both arrival processes; Algorithm 1 rising slowly, M14 fast, G16 flat (its excess over
    Algorithm 1 falling)."""
    growth = {"vm-stalling": 0.2, "m14": 1.0, "g16": 0.0}
    rows = []
    for a in V.ARRIVAL_PROCESSES:
        for i, x in enumerate(xs):
            for p, q in queue.items():
                v = q * (1 + growth[p] * i)
                rows.append(Point(V._series_name(p, a), x, v, 0.95 * v, 1.05 * v))
    return rows


def test_audit_on_psychas2018_and_psychas2022_judges():
    """issue 31: every claim of psychas2018 Fig. 6 and psychas2022 Fig. 3 / Table 1 can FAIL
    under the generic mutations, and a claim replaced by `True` is reported "cannot fail"."""
    zetas = (0.8, 0.89, 0.95)
    rows = psychas2018_rows(zetas, {"vm-stalling": 10.0, "m14": 8.0, "g16": 100.0})
    judge = V.fig6_judge(zetas)
    assert [c.verdict for c in judge(rows)] == ["PASS"] * 8
    statuses = [a.status for a in audit(rows, judge)]
    assert statuses == [CAN_FAIL] * 8, statuses
    replaced = audit(rows, constant_first(judge))
    assert replaced[0].status == CANNOT_FAIL and replaced[1].status == CAN_FAIL

    sizes = (10, 50, 200)
    rows = [
        Point("DRA", float(L), v, v - 0.1, v + 0.1)
        for L, v in zip(sizes, (30, 36, 38.7), strict=True)
    ]
    rows += [Point(W.GREEDY, float(L), 39.0, NAN, NAN, analytic=True) for L in sizes]
    rows += [Point(W.OPTIMUM, float(L), 45.0, NAN, NAN, analytic=True) for L in sizes]
    judge = W.fig3_judge(sizes)
    assert [c.verdict for c in judge(rows)] == ["PASS"] * 3
    assert [a.status for a in audit(rows, judge)] == [CAN_FAIL] * 3
    assert audit(rows, constant_first(judge))[0].status == CANNOT_FAIL

    rows = [Point(W.RATIO, float(i), r, NAN, NAN, analytic=True) for i, r in enumerate(RATIOS)]
    rows.append(Point(W.WORST_SUBSET, 0.0, 0.872, NAN, NAN, analytic=True))
    assert [a.verdict for a in audit(rows, W.table1_judge)] == ["PASS"] * 4
    assert [a.status for a in audit(rows, W.table1_judge)] == [CAN_FAIL] * 4


RATIOS = (1.0, 1.0, 0.95, 0.9, 0.86, 1.0, 0.97, 0.99)


def test_table1_half_bound_fails_when_the_greedy_is_a_random_assignment(monkeypatch, tmp_path):
    """F^g >= F*/2 checks the global-greedy code: with the greedy replaced by a random
    assignment (each server holds one VM of a random type) the claim FAILs."""
    import numpy as np

    from schedlab.optim.reward import GreedyAssignment, StaticProblem
    from schedlab.reproduce.registry import Context

    rng = np.random.default_rng(1)

    def random_assignment(self, rho):
        rho = np.asarray(rho, dtype=float)
        k = np.eye(self.n_types, dtype=np.int64)[rng.integers(self.n_types)]
        reward = float(np.minimum(k, rho) @ self.reward)
        return GreedyAssignment(k[None, :], np.ones(1), np.full(1, -1), reward)

    ctx = Context(quick=True, out=tmp_path)
    table1 = replace(W.TABLE1, quick_collections=6)
    assert W.run_table1(table1, ctx).claims[0].verdict == "PASS"
    monkeypatch.setattr(StaticProblem, "global_greedy", random_assignment)
    assert W.run_table1(table1, ctx).claims[0].verdict == "FAIL"
