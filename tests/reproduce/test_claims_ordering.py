"""The one comparison of the reproductions' claims (reproduce/ordering.py): a stable run is below
an unstable one (whose mean is NaN), two unstable runs are NOT RESOLVED with their growth rates,
two stable runs are ordered only when their intervals are apart; and psychas2019's Fig. 4 claims
built on it, on synthetic rows with an unstable series (issue 35 item 1)."""

from __future__ import annotations

import math
from dataclasses import replace

from schedlab.report.figures import Point
from schedlab.reproduce import psychas2019 as R
from schedlab.reproduce.ordering import ABOVE, BELOW, INDISTINCT, UNRESOLVED, compare
from schedlab.reproduce.registry import FAIL, NOT_CHECKED, NOT_RESOLVED, PASS

NAN = math.nan


def unstable(series: str, x: float, growth: float) -> Point:
    return Point(series, x, NAN, NAN, NAN, stable=False, growth=growth)


def test_compare_orders_stable_before_unstable_and_never_two_unstable_runs():
    low, high = Point("a", 1, 10, 9, 11), Point("b", 1, 20, 18, 22)
    overlapping = Point("c", 1, 10.5, 9.5, 11.5)
    growing, growing_more = unstable("d", 1, 0.01), unstable("e", 1, 0.05)
    assert compare(low, high).order == BELOW and compare(high, low).order == ABOVE
    assert compare(low, overlapping).order == INDISTINCT
    assert compare(high, growing).order == BELOW and compare(growing, low).order == ABOVE
    both = compare(growing, growing_more)
    assert both.order == UNRESOLVED and "0.01" in both.reason and "0.05" in both.reason
    # exact values (trace replay, analysis): ordered by value, a tie is no order
    assert compare(Point("f", 1, 3, NAN, NAN), Point("g", 1, 4, NAN, NAN)).order == BELOW
    assert compare(Point("f", 1, 3, NAN, NAN), Point("g", 1, 3, NAN, NAN)).order == INDISTINCT
    # a paired-ratio interval decides instead of the two overlapping intervals
    assert compare(low, overlapping, ratio=(0.9, 0.98)).order == BELOW
    assert compare(low, overlapping, ratio=(0.9, 1.02)).order == INDISTINCT


def fig4_rows(vqs_bf_099: Point) -> list[Point]:
    alphas = (0.85, 0.99)
    rows = [Point("alpha*", 0.0, 1.0, 0.99, 1.01, analytic=True)]
    for a in alphas:
        rows.append(unstable("VQS", a, 0.02))  # VQS unstable: the paper's effect at its strongest
        rows.append(Point("BF-J/S", a, 10 * a, 9 * a, 11 * a))
    rows.append(Point("VQS-BF", 0.85, 9.0, 8.0, 10.0))
    rows.append(vqs_bf_099)
    return rows


def test_fig4_claims_with_an_unstable_series_never_fail_because_of_nan():
    judge = R.fig4_judge("a", (0.85, 0.99))
    claims = judge(fig4_rows(unstable("VQS-BF", 0.99, 0.005)))
    verdicts = [c.verdict for c in claims]
    # VQS worst: stable beats unstable; VQS-BF and VQS both unstable at 0.99: NOT RESOLVED
    assert verdicts == [PASS, NOT_RESOLVED, PASS, PASS], [(c.text, c.evidence) for c in claims]
    assert "0.005" in claims[1].evidence and "0.02" in claims[1].evidence
    # VQS-BF stable at 0.99 and within 1.5x of BF-J/S: no clear advantage (FAIL), VQS worst PASS
    claims = judge(fig4_rows(Point("VQS-BF", 0.99, 11.0, 10.0, 12.0)))
    assert [c.verdict for c in claims] == [PASS, PASS, PASS, FAIL]


def test_comparable_and_clear_advantage_exclude_each_other():
    p = Point("BF-J/S", 1, 10, 9.5, 10.5)
    for q_mean in (12.0, 14.0, 16.0, 30.0):
        q = Point("VQS-BF", 1, q_mean, q_mean - 0.5, q_mean + 0.5)
        assert not (R._comparable(p, q) and R._clear_advantage(p, q))
    assert R._comparable(p, Point("q", 1, 14, 13.5, 14.5))
    assert R._clear_advantage(p, Point("q", 1, 16, 15.5, 16.5))
    assert R._clear_advantage(p, unstable("q", 1, 0.1)) and not R._comparable(
        p, unstable("q", 1, 0)
    )


def grosof_rows(sfs_ratios: dict[float, float], sf_ratios: dict[float, float]) -> dict:
    """E[T] rows of paper 004's ratio figures: SRPT-1 = 2 at every load, ServerFilling-SRPT and
    ServerFilling at the given ratios, the MaxWeights growing."""
    from schedlab.reproduce import grosof2023 as G

    at = {}
    for load, r in sfs_ratios.items():
        values = {
            "srpt-1": 2.0,
            "server-filling-srpt": 2.0 * r,
            "server-filling": 2.0 * sf_ratios[load],
            "max-weight": 20.0 * load,
            "max-weight-greedy": 30.0 * load,
        }
        for p, v in values.items():
            at[(G.label(p), load)] = Point(G.label(p), load, v, 0.99 * v, 1.01 * v)
    return at


def test_grosof_trends_use_judged_loads_only_and_say_not_checked_below_three():
    from schedlab.reproduce import grosof2023 as G

    loads = (0.5, 0.8, 0.9, 0.95, 0.999)
    sf = {0.5: 3.0, 0.8: 3.2, 0.9: 3.5, 0.95: 4.0, 0.999: 2.0}  # 0.999 (unjudged) falls back
    at = grosof_rows({0.5: 3.5, 0.8: 3.0, 0.9: 2.2, 0.95: 1.8, 0.999: 9.0}, sf)
    # 40,000 arrivals span 100 relaxation times up to rho = 0.95: judged 0.8, 0.9, 0.95
    claims = G.trends(at, G.Judging(loads, "exponential", 40_000))
    assert [c.verdict for c in claims] == [PASS] * 4, [c.evidence for c in claims]
    assert "0.999" not in claims[0].evidence.split("(")[0]
    # the ratio must come close enough to 1: excess 1.6 at 0.95 vs 2.0 at 0.8 is > 0.75x
    slow = grosof_rows({0.5: 3.5, 0.8: 3.0, 0.9: 2.8, 0.95: 2.6, 0.999: 1.0}, sf)
    assert G.trends(slow, G.Judging(loads, "exponential", 40_000))[0].verdict == FAIL
    # 20,000 arrivals: only 0.8 and 0.9 are judged, fewer than three: NOT CHECKED
    short = G.trends(at, G.Judging(loads, "exponential", 20_000))
    assert [c.verdict for c in short] == [NOT_CHECKED] * 4


def test_grosof_least_claim_orders_by_intervals_and_stability():
    from schedlab.reproduce import grosof2023 as G

    at = grosof_rows({0.8: 2.0}, {0.8: 2.02})  # ServerFilling within 1%: intervals overlap
    at.update(
        {
            (G.label(p), 0.8): unstable(G.label(p), 0.8, 0.1)
            for p in ("greedy-srpt", "first-fit-srpt")
        }
    )
    assert G.least(at, G.Judging((0.8,), "exponential", 10**6))[0].verdict == NOT_RESOLVED
    at[(G.label("server-filling"), 0.8)] = Point("ServerFilling", 0.8, 5.0, 4.9, 5.1)
    assert G.least(at, G.Judging((0.8,), "exponential", 10**6))[0].verdict == PASS
    at[(G.label("server-filling-srpt"), 0.8)] = unstable("ServerFilling-SRPT", 0.8, 0.1)
    assert G.least(at, G.Judging((0.8,), "exponential", 10**6))[0].verdict == FAIL


def test_swf_logs_bound_claim_never_passes_on_a_growing_bound():
    from schedlab.reproduce import swf_logs as S

    def rows(bound: Point, best: float) -> list[Point]:
        out = [replace(bound, series=f"KTH: {S.label('srpt-1')}")]
        for i, p in enumerate(p for p in S.POLICIES if p != "srpt-1"):
            value = Point(f"KTH: {S.label(p)}", 0.9, best + i, NAN, NAN)
            out.append(value if i < 2 else unstable(value.series, 0.9, 0.1))
        return out

    judge = S.bound_judge(["KTH"], (0.9,))
    assert judge(rows(Point("b", 0.9, 5.0, NAN, NAN), 6.0))[0].verdict == PASS
    assert judge(rows(Point("b", 0.9, 7.0, NAN, NAN), 6.0))[0].verdict == FAIL
    # a growing bound: above every settled replay (FAIL), never a PASS on NaN
    assert judge(rows(unstable("b", 0.9, 0.1), 6.0))[0].verdict == FAIL


def test_trend_similar_and_stable_claims():
    """issue 31: a trend over the sampled points (NOT RESOLVED when first and last overlap,
    FAIL on a clear step the wrong way), 'similar' as a ratio within a factor whose interval
    must be narrower than the factor, 'stable' as the growth test's verdict."""
    from schedlab.reproduce.ordering import similar_claim, stable_claim, trend_claim

    falling = [Point("a", 1, 30, 28, 32), Point("a", 2, 20, 18, 22), Point("a", 3, 10, 9, 11)]
    assert trend_claim("t", falling, False, "").verdict == PASS
    assert trend_claim("t", falling, True, "").verdict == FAIL
    assert trend_claim("t", falling[::-1], False, "").verdict == FAIL
    wobble = [falling[0], Point("a", 2, 40, 38, 42), falling[2]]  # a clear step up
    assert trend_claim("t", wobble, False, "").verdict == FAIL
    flat = [Point("a", 1, 10, 5, 15), Point("a", 2, 9, 4, 14)]
    assert trend_claim("t", flat, False, "").verdict == NOT_RESOLVED
    # an unstable point counts as the highest
    assert trend_claim("t", [unstable("a", 1, 0.1), falling[2]], False, "").verdict == PASS
    # two unstable points in a row are no step either way; first vs last decides
    rising = [falling[2], unstable("a", 2, 0.1), unstable("a", 3, 0.2)]
    assert trend_claim("t", rising, True, "").verdict == PASS
    assert trend_claim("t", rising[1:], True, "").verdict == NOT_RESOLVED

    def pair(p: Point, q: Point) -> str:
        return similar_claim("s", [(p, q)], 2.0, "").verdict

    assert pair(Point("a", 1, 10, 9, 11), Point("b", 1, 12, 11, 13)) == PASS
    assert pair(Point("a", 1, 10, 9, 11), Point("b", 1, 40, 38, 42)) == FAIL
    assert pair(Point("a", 1, 64, -118, 247), Point("b", 1, 60, 50, 70)) == NOT_RESOLVED
    assert pair(Point("a", 1, 10, 9, 11), unstable("b", 1, 0.1)) == FAIL
    assert pair(unstable("a", 1, 0.1), unstable("b", 1, 0.1)) == NOT_RESOLVED
    assert stable_claim("st", falling, "").verdict == PASS
    assert stable_claim("st", [*falling, unstable("a", 4, 0.1)], "").verdict == FAIL
