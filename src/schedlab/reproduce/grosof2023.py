"""Paper 004 (Grosof, Scully, Harchol-Balter, Scheller-Wolf, POMACS 2023), Figs. 2-4.

Setting (§6): k = 8 servers, server need K uniform on {1, 2, 4, 8}, size S = K D / k independent of
K — exponential (Figs. 2, 3) or hyperexponential with C^2 = 10 (Fig. 4) — Poisson arrivals,
10^7 arrivals per point (``--quick``: 10^5). We take E[S] = 1, so a need-K job's duration is S k / K
(mean 8/K). Every policy at a load sees the same job sequence (common random numbers); SRPT-1 is
simulated on that sequence (one server of speed k, schedlab.policies.pooled.resource_pooled).

Claims checked (§1.6, §6):
* ServerFilling-SRPT has the least mean response time of the multiserver-job policies at every
  load;
* its ratio to SRPT-1 falls toward 1 as rho -> 1, while ServerFilling's and MaxWeight's grow;
* GreedySRPT and FirstFitSRPT are unstable at every load >= 0.85 — we locate their limits.

Checked against theory as well (analysis/srpt.py, analysis/theorem41.py): the simulated SRPT-1
agrees with the M/G/1-SRPT formula at every load (Bonferroni-corrected batch-means intervals),
and ServerFilling-SRPT lies between SRPT-1 and Theorem 4.1's upper bound. The figures overlay the
analytic SRPT-1 (Fig. 2) and Theorem 4.1's bound as a ratio to SRPT-1 (Figs. 3, 4). Loads at
which the run is shorter than 100 relaxation times (~(1 - rho)^-2 mean sizes) are not
compared: such a run, started empty, is biased low (at rho = 0.999 even 10^7 arrivals are only ten
relaxation times, so the simulated SRPT-1 there, as in the paper, underestimates the true value).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from schedlab.analysis.theorem41 import Theorem41Bounds, theorem41_bounds
from schedlab.engine.reliability import relaxation_arrivals
from schedlab.experiments.stats import joint_widening
from schedlab.model.compile import compile_model
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.report.figures import Point, line_plot, policy_colors
from schedlab.reproduce.registry import Claim, Context, Outcome, Reproduction, register

K = 8
NEEDS = (1, 2, 4, 8)
MSJ_POLICIES = (
    "server-filling-srpt",
    "server-filling",
    "max-weight",
    "max-weight-greedy",
    "greedy-srpt",
    "first-fit-srpt",
)
# the exact MaxWeight of §6 and the greedy rule of the authors' simulator behind the paper's curves
RATIO_POLICIES = ("server-filling-srpt", "server-filling", "max-weight", "max-weight-greedy")
LABELS = {
    "server-filling-srpt": "ServerFilling-SRPT",
    "server-filling": "ServerFilling",
    "max-weight": "MaxWeight (exact, §6)",
    "max-weight-greedy": "MaxWeight (authors' greedy rule)",
    "greedy-srpt": "GreedySRPT",
    "first-fit-srpt": "FirstFitSRPT",
    "srpt-1": "SRPT-1 (resource-pooled bound)",
}
COLORS = policy_colors(LABELS.values())  # one colour per policy in Figs. 2-4
FIG2_LOADS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
RATIO_LOADS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
LIMIT_GRID = tuple(round(0.40 + 0.01 * i, 2) for i in range(51))  # 0.40 ... 0.90


def spec(policy: str, load: float, arrivals: int, sizes: str) -> SimulationSpec:
    """The §6 setting with E[S] = 1: exponential sizes, or hyperexponential with C^2 = 10."""
    classes = []
    for need in NEEDS:
        mean = K / need
        duration: dict[str, Any] = (
            {"dist": "exponential", "mean": mean}
            if sizes == "exponential"
            else {"dist": "hyperexponential", "mean": mean, "scv": 10.0}
        )
        classes.append(
            {"name": f"need{need}", "probability": 0.25, "need": need, "duration": duration}
        )
    return parse_spec(
        {
            "cluster": {"servers": K},
            "workload": {"load": load, "classes": classes},
            "policy": {"name": policy},
            "run": {"arrivals": arrivals, "seed": 2023, "timeseries": 0, "check": False},
        }
    )


@cache
def bounds(load: float, sizes: str) -> Theorem41Bounds:
    """Analytic SRPT-1 and Theorem 4.1's upper bound for the §6 setting at ``load``."""
    return theorem41_bounds(compile_model(spec("server-filling-srpt", load, 1, sizes)))


SCV = {"exponential": 1.0, "hyperexponential": 10.0}


def long_enough(load: float, sizes: str, arrivals: int) -> bool:
    """Whether ``arrivals`` span 100 relaxation times of an M/G/1 at ``load`` (reliability.py):
    (1 + C^2) / 2 / (1 - rho)^2 mean sizes (the heavy-traffic time scale of the workload)."""
    return arrivals >= relaxation_arrivals(load, SCV[sizes])


def _theory_claims(runs: dict, loads: tuple[float, ...], sizes: str, arrivals: int) -> list[Claim]:
    """Simulated SRPT-1 vs the M/G/1-SRPT formula (the 95% half-widths widened to a joint 95%
    level over the loads, Bonferroni), and ServerFilling-SRPT within Theorem 4.1's bounds.

    A run shorter than 100 relaxation times (:func:`long_enough`) starts from empty and is
    biased low beyond what its batch-means interval shows: those loads are reported, not
    judged."""
    judged = [load for load in loads if long_enough(load, sizes, arrivals)]
    z = joint_widening(len(judged))
    agree, rows_a, inside, rows_b = True, [], True, []
    for load in loads:
        b = bounds(load, sizes)
        sim = runs[("srpt-1", load)]
        if load not in judged:
            rows_a.append(f"rho={load}: run too short to compare")
        elif sim["stable"]:
            half = (sim["mean_response_time_hi"] - sim["mean_response_time_lo"]) / 2
            ok = abs(sim["mean_response_time"] - b.lower) <= z * half
            agree &= ok
            rows_a.append(
                f"rho={load}: {sim['mean_response_time']:.4g} ± {z * half:.2g} vs {b.lower:.4g}"
                + ("" if ok else " MISMATCH")
            )
        sfs = runs[("server-filling-srpt", load)]
        if load not in judged:
            rows_b.append(f"rho={load}: run too short to compare")
            continue
        ok = sfs["stable"] and b.lower <= sfs["mean_response_time_hi"]
        ok = ok and sfs["mean_response_time_lo"] <= b.upper
        inside &= ok
        rows_b.append(
            f"rho={load}: {b.lower:.4g} <= {_fmt(_mean(sfs))} <= {b.upper:.4g}"
            + ("" if ok else " VIOLATED")
        )
    return [
        Claim("simulated SRPT-1 agrees with the M/G/1-SRPT formula", agree, "; ".join(rows_a)),
        Claim(
            "ServerFilling-SRPT lies between SRPT-1 and Theorem 4.1's upper bound",
            inside,
            "; ".join(rows_b),
        ),
    ]


def _arrivals(ctx: Context) -> int:
    return 100_000 if ctx.quick else 10_000_000


def _run(
    ctx: Context,
    policies: tuple[str, ...],
    loads: tuple[float, ...],
    sizes: str,
    arrivals: int | None = None,
) -> dict[tuple[str, float], dict[str, Any]]:
    n = arrivals or _arrivals(ctx)
    keys = [(p, load) for load in loads for p in policies]
    records = ctx.run([spec(p, load, n, sizes) for p, load in keys], experiment="grosof2023")
    return {key: recs[0] for key, recs in zip(keys, records, strict=True)}


def _mean(rec: dict[str, Any]) -> float:
    return rec["mean_response_time"] if rec["stable"] else math.inf


def _fmt(x: float) -> str:
    return "unstable" if not math.isfinite(x) else f"{x:.4g}"


def _least_claim(runs: dict, loads: tuple[float, ...], sizes: str, arrivals: int) -> Claim:
    """ServerFilling-SRPT has the least E[T] of the multiserver-job policies at every load (loads
    the run is too short for, see :func:`long_enough`, are listed but not judged)."""
    losses, rows = [], []
    for load in loads:
        if not long_enough(load, sizes, arrivals):
            rows.append(f"rho={load}: run too short to judge")
            continue
        sfs = runs[("server-filling-srpt", load)]
        others = {
            p: _mean(runs[(p, load)])
            for p in MSJ_POLICIES
            if (p, load) in runs and p != "server-filling-srpt"
        }
        best_other = min(others, key=others.get)
        ok = sfs["stable"] and _mean(sfs) < others[best_other]
        significant = ok and (
            not math.isfinite(others[best_other])
            or sfs["mean_response_time_hi"] < runs[(best_other, load)]["mean_response_time_lo"]
        )
        rows.append(
            f"rho={load}: SF-SRPT {_fmt(_mean(sfs))} vs best other "
            f"{LABELS[best_other]} {_fmt(others[best_other])}"
            f"{'' if significant or not ok else ' (CIs overlap)'}"
        )
        if not ok:
            losses.append(load)
    return Claim(
        "ServerFilling-SRPT has the least mean response time at every load",
        not losses,
        "; ".join(rows) + (f"; NOT least at {losses}" if losses else ""),
    )


def _ratio(runs: dict, policy: str, load: float) -> float:
    a, b = runs[(policy, load)], runs[("srpt-1", load)]
    if not (a["stable"] and b["stable"]):
        return math.nan
    return a["mean_response_time"] / b["mean_response_time"]


def _ratio_points(runs: dict, loads: tuple[float, ...]) -> list[Point]:
    """Ratio to SRPT-1 with a delta-method interval from the two batch-means intervals."""
    points = []
    for policy in RATIO_POLICIES:
        for load in loads:
            a, b = runs[(policy, load)], runs[("srpt-1", load)]
            ratio = _ratio(runs, policy, load)
            if math.isnan(ratio):
                points.append(Point(LABELS[policy], load, math.nan, math.nan, math.nan, False))
                continue
            rel = math.hypot(
                (a["mean_response_time_hi"] - a["mean_response_time_lo"])
                / 2
                / a["mean_response_time"],
                (b["mean_response_time_hi"] - b["mean_response_time_lo"])
                / 2
                / b["mean_response_time"],
            )
            points.append(Point(LABELS[policy], load, ratio, ratio * (1 - rel), ratio * (1 + rel)))
    return points


def _trend_claims(runs: dict, loads: tuple[float, ...]) -> list[Claim]:
    heavy = [load for load in loads if load >= 0.9]
    ratios = {p: {load: _ratio(runs, p, load) for load in heavy} for p in RATIO_POLICIES}
    sfs = ratios["server-filling-srpt"]
    stable_sfs = [load for load in heavy if math.isfinite(sfs[load])]
    top = stable_sfs[-1] if stable_sfs else None
    falls = (
        bool(top) and sfs[top] < sfs[heavy[0]] and sfs[top] == min(sfs[load] for load in stable_sfs)
    )
    claims = [
        Claim(
            "ServerFilling-SRPT's ratio to SRPT-1 falls toward 1 as rho -> 1",
            falls,
            ", ".join(f"rho={load}: {_fmt(sfs[load])}" for load in heavy),
        )
    ]
    for policy in RATIO_POLICIES[1:]:
        r = ratios[policy]
        finite = [load for load in heavy if math.isfinite(r[load])]
        grows = (
            len(finite) >= 2
            and r[finite[-1]] > r[finite[0]]
            and r[finite[-1]] > sfs.get(finite[-1], math.inf)
        )
        unstable_tail = [load for load in heavy if not math.isfinite(r[load])]
        claims.append(
            Claim(
                f"{LABELS[policy]}'s ratio to SRPT-1 grows as rho -> 1",
                grows,
                ", ".join(f"rho={load}: {_fmt(r[load])}" for load in heavy)
                + (
                    f" (no steady state within the run at {unstable_tail})" if unstable_tail else ""
                ),
            )
        )
    return claims


def _limits(ctx: Context, sizes: str) -> tuple[Claim, list[str]]:
    """GreedySRPT and FirstFitSRPT: last stable and first unstable load on a 0.01 grid."""
    n = 100_000 if ctx.quick else 1_000_000
    runs = _run(ctx, ("greedy-srpt", "first-fit-srpt"), LIMIT_GRID, sizes, arrivals=n)
    notes, ok = [], True
    for policy in ("greedy-srpt", "first-fit-srpt"):
        stable = [load for load in LIMIT_GRID if runs[(policy, load)]["stable"]]
        unstable = [load for load in LIMIT_GRID if not runs[(policy, load)]["stable"]]
        first_unstable = min(unstable) if unstable else math.inf
        last_stable = max(stable) if stable else -math.inf
        ok &= first_unstable <= 0.85 and all(
            load in unstable for load in LIMIT_GRID if load >= 0.85
        )
        notes.append(
            f"{LABELS[policy]}: stable up to {last_stable}, unstable from "
            f"{first_unstable} ({n:,} arrivals per load, 0.01 grid)"
        )
    return Claim(
        "GreedySRPT and FirstFitSRPT are unstable at every load >= 0.85", ok, "; ".join(notes)
    ), notes


def _figure_et(
    ctx: Context, runs: dict, loads: tuple[float, ...], sizes: str, name: str, title: str
) -> list:
    points = [
        Point("SRPT-1, M/G/1-SRPT formula", load, v, v, v, analytic=True)
        for load in loads
        for v in [bounds(load, sizes).lower]
    ]
    for policy in (*MSJ_POLICIES, "srpt-1"):
        for load in loads:
            rec = runs[(policy, load)]
            points.append(
                Point(
                    LABELS[policy],
                    load,
                    rec["mean_response_time"],
                    rec["mean_response_time_lo"],
                    rec["mean_response_time_hi"],
                    rec["stable"],
                )
            )
    return line_plot(
        points,
        ctx.out / name,
        x="load",
        y="mean_response_time",
        hue="policy",
        title=title,
        logy=True,
        colors=COLORS,
    )


def fig2(ctx: Context) -> Outcome:
    runs = _run(ctx, (*MSJ_POLICIES, "srpt-1"), FIG2_LOADS, "exponential")
    paths = _figure_et(
        ctx,
        runs,
        FIG2_LOADS,
        "exponential",
        "grosof2023-fig2",
        "Paper 004 Fig. 2: k=8, K uniform on {1,2,4,8}, S ~ Exp(1)",
    )
    limit_claim, _ = _limits(ctx, "exponential")
    return Outcome(
        figures=paths[:1],
        claims=[
            _least_claim(runs, FIG2_LOADS, "exponential", _arrivals(ctx)),
            limit_claim,
            *_theory_claims(runs, FIG2_LOADS, "exponential", _arrivals(ctx)),
        ],
        notes=[f"{_arrivals(ctx):,} arrivals per point; numbers in {paths[2]}"],
    )


def _ratio_figure(ctx: Context, sizes: str, name: str, title: str) -> Outcome:
    runs = _run(ctx, (*RATIO_POLICIES, "srpt-1"), RATIO_LOADS, sizes)
    points = _ratio_points(runs, RATIO_LOADS)
    points += [
        Point("Theorem 4.1 bound (over analytic SRPT-1)", load, r, r, r, analytic=True)
        for load in RATIO_LOADS
        for b in [bounds(load, sizes)]
        for r in [b.upper / b.lower]
    ]
    paths = line_plot(
        points,
        ctx.out / name,
        x="load",
        y="mean_response_time / mean_response_time[policy=srpt-1]",
        hue="policy",
        title=title,
        ratio=True,
        colors=COLORS,
    )
    claims = [
        _least_claim(runs, RATIO_LOADS, sizes, _arrivals(ctx)),
        *_trend_claims(runs, RATIO_LOADS),
        *_theory_claims(runs, RATIO_LOADS, sizes, _arrivals(ctx)),
    ]
    return Outcome(
        figures=paths[:1],
        claims=claims,
        notes=[f"{_arrivals(ctx):,} arrivals per point; numbers in {paths[2]}"],
    )


def fig3(ctx: Context) -> Outcome:
    return _ratio_figure(
        ctx, "exponential", "grosof2023-fig3", "Paper 004 Fig. 3: ratio to SRPT-1, S ~ Exp(1)"
    )


def fig4(ctx: Context) -> Outcome:
    return _ratio_figure(
        ctx,
        "hyperexponential",
        "grosof2023-fig4",
        "Paper 004 Fig. 4: ratio to SRPT-1, S hyperexponential, C^2 = 10",
    )


SCALE = "10^7 arrivals per point (--quick: 10^5)"
register(
    Reproduction(
        "grosof2023-fig2",
        "grosof2023",
        "Fig. 2",
        "E[T] vs load of ServerFilling-SRPT and prior policies",
        fig2,
        SCALE,
    )
)
register(
    Reproduction(
        "grosof2023-fig3",
        "grosof2023",
        "Fig. 3",
        "ratio of E[T] to SRPT-1, exponential sizes, loads up to 0.999",
        fig3,
        SCALE,
    )
)
register(
    Reproduction(
        "grosof2023-fig4",
        "grosof2023",
        "Fig. 4",
        "ratio of E[T] to SRPT-1, hyperexponential sizes (C^2 = 10)",
        fig4,
        SCALE,
    )
)
