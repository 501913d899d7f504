"""The claims audit (reproduce/audit.py, issue 31 item 1): generic mutations of a reproduction's
result rows make each real claim FAIL, and a claim replaced by `True` is reported as "cannot
fail" — on two reproductions' judges with small synthetic rows, and once end to end through
`schedlab reproduce --audit` on a shrunken psychas2019-fig4b."""

from __future__ import annotations

import math

from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.report.figures import Point
from schedlab.reproduce import grosof2023 as G
from schedlab.reproduce import psychas2019 as R
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
    monkeypatch.setattr(R, "FIG4_QUICK_ALPHAS", (0.85,))
    judge = R.fig4_judge
    monkeypatch.setattr(R, "fig4_judge", lambda which, alphas: constant_first(judge(which, alphas)))
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
