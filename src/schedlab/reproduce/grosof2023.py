"""grosof2023 (Grosof, Scully, Harchol-Balter, Scheller-Wolf, POMACS 2023), Figs. 2-4.

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

Figs. 3 and 4 at the authors' scale (``--scale authors``; the authors ran up to 10^10 arrivals
per point): loads 0.995 and 0.999 are each split into PIECES independent replications
(experiments/split.py) measuring MEASURED_RELAXATIONS relaxation times in all, each after a
warm-up of 10 relaxation times, combined by the t interval over the replication means; these
loads are judged. For exponential sizes at 0.999 that is 20 x (4.0 10^7 + 5.0 10^8) arrivals per
policy, the authors' 10^10. The other loads run as at paper scale. The plan (arrivals per point,
core-hours, wall time for the workers given, from a measured calibration run) prints first.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np

from schedlab.analysis.theorem41 import Theorem41Bounds, theorem41_bounds
from schedlab.experiments.runner import default_workers
from schedlab.experiments.split import (
    WARMUP_RELAXATIONS,
    SplitPlan,
    combine,
    plan_split,
    split_spec,
)
from schedlab.experiments.stats import joint_widening
from schedlab.measurement.metrics import t_interval
from schedlab.measurement.reliability import relaxation_arrivals
from schedlab.model.compile import compile_model
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.policies.registry import get_policy
from schedlab.report.figures import Point, line_plot, policy_colors
from schedlab.reproduce.driver import (
    Analytic,
    Figure,
    Key,
    Panel,
    Plot,
    draw_panels,
    record_point,
    register_figure,
    run_grid,
)
from schedlab.reproduce.ordering import BELOW, compare, describe, lower_claim
from schedlab.reproduce.registry import (
    AUTHORS,
    NOT_CHECKED,
    AuthorsScale,
    Claim,
    Context,
    Judge,
    Outcome,
    judged,
    label,
)

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
COLORS = policy_colors(label(p) for p in (*MSJ_POLICIES, "srpt-1"))  # one per policy, Figs. 2-4
FIG2_LOADS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
RATIO_LOADS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
LIMIT_GRID = tuple(round(0.40 + 0.01 * i, 2) for i in range(51))  # 0.40 ... 0.90
LIMIT_POLICIES = ("greedy-srpt", "first-fit-srpt")
LIMIT = " (0.01 grid)"  # suffix of the stability-limit runs' series
FORMULA = "SRPT-1, M/G/1-SRPT formula"
THEOREM = "Theorem 4.1 upper bound"
TREND_FROM = 0.8  # trends as rho -> 1 are judged on the judged loads from here up
FALL = 0.75  # "falls toward 1": excess over 1 at the heaviest judged load <= FALL x at the lightest
AUTHORS_LOADS = (0.995, 0.999)  # split into independent replications at --scale authors
PIECES = 20  # replications per split point (t interval on 19 degrees of freedom)
# relaxation times measured per split point: 10^10 arrivals at 0.999 (exponential), the authors'
# run length; the RBM estimate of the relative 95% half-width is 1.96 / sqrt(2500) ~ 4% (split.py)
MEASURED_RELAXATIONS = 2500
CALIBRATION_ARRIVALS = 100_000  # per policy, to measure its arrivals/s for the plan
EXPERIMENT = "grosof2023"  # the runs' experiment name in the result store


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
    # a policy of several families (a plugin's) is told the pooled family
    model = {} if get_policy(policy).family == "pooled" else {"model": {"family": "pooled"}}
    return parse_spec(
        {
            "cluster": {"servers": K},
            "workload": {"load": load, "classes": classes},
            "policy": {"name": policy},
            "run": {"arrivals": arrivals, "seed": 2023, "timeseries": 0, "check": False},
        }
        | model
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


@dataclass(frozen=True)
class Limits:
    """The stability-limit sweep (Fig. 2): ``policies`` at each load of ``grid``, ``arrivals``
    per load (``quick_arrivals`` with --quick), in series suffixed LIMIT."""

    policies: tuple[str, ...]
    grid: tuple[float, ...]
    arrivals: int = 1_000_000
    quick_arrivals: int = 100_000


@dataclass(frozen=True)
class Judging:
    """What a claim reads besides the rows: the figure's ``loads`` and ``sizes``, the arrivals
    per point (which loads a run can judge: :func:`long_enough`), the ``split`` loads (--scale
    authors), and the stability-limit sweep (:class:`Limits`) with the arrivals per load it
    ran."""

    loads: Sequence[float]
    sizes: str
    arrivals: int
    split: Collection[float] = ()
    limits: Limits | None = None
    limit_arrivals: int = 0

    @property
    def judged(self) -> list[float]:
        """The loads whose single run is :func:`long_enough`, and the ``split`` loads (run as
        independent replications, each after its warm-up: :func:`authors_plans`)."""
        return [
            load
            for load in self.loads
            if load in self.split or long_enough(load, self.sizes, self.arrivals)
        ]


def _et_rows(runs: dict, policies: Sequence[str], loads: Sequence[float]) -> list[Point]:
    """One row per (policy, load): the simulated E[T] with its 95% interval (NaN when
    unstable)."""
    return [record_point(label(p), load, runs[(p, load)]) for p in policies for load in loads]


def _bound_rows(loads: Sequence[float], sizes: str) -> list[Point]:
    """The analytic SRPT-1 (M/G/1-SRPT formula) and Theorem 4.1's upper bound at each load."""
    return [
        Point(series, load, value, value, value, analytic=True)
        for load in loads
        for b in [bounds(load, sizes)]
        for series, value in ((FORMULA, b.lower), (THEOREM, b.upper))
    ]


def theory(at: dict, j: Judging) -> list[Claim]:
    """Simulated SRPT-1 vs the M/G/1-SRPT formula (the 95% half-widths widened to a joint 95%
    level over the loads, Bonferroni), and ServerFilling-SRPT within Theorem 4.1's bounds.

    A run shorter than 100 relaxation times (:func:`long_enough`) starts from empty and is
    biased low beyond what its batch-means interval shows: those loads are reported, not
    judged; ``split`` loads are judged (:attr:`Judging.judged`)."""
    judged, loads = j.judged, j.loads
    z = joint_widening(len(judged))
    agree, rows_a, inside, rows_b = True, [], True, []
    for load in loads:
        if load not in judged:
            rows_a.append(f"rho={load}: run too short to compare")
            rows_b.append(f"rho={load}: run too short to compare")
            continue
        lower, upper = at[(FORMULA, load)].mean, at[(THEOREM, load)].mean
        sim = at[(label("srpt-1"), load)]
        half = (sim.hi - sim.lo) / 2
        ok = sim.stable and abs(sim.mean - lower) <= z * half
        agree &= ok
        rows_a.append(
            f"rho={load}: {describe(sim)} (± {z * half:.2g} jointly) vs {lower:.4g}"
            + ("" if ok else " MISMATCH")
        )
        sfs = at[(label("server-filling-srpt"), load)]
        ok = sfs.stable and lower <= sfs.hi and sfs.lo <= upper
        inside &= ok
        share = (sfs.mean - lower) / (upper - lower) if upper > lower else math.nan
        rows_b.append(
            f"rho={load}: {lower:.4g} <= {describe(sfs)} <= {upper:.4g} "
            f"({share:.0%} of the gap)" + ("" if ok else " VIOLATED")
        )
    return [
        Claim(
            "simulated SRPT-1 agrees with the M/G/1-SRPT formula (joint 95% level over the "
            "judged loads)",
            agree and bool(judged),
            "; ".join(rows_a),
        ),
        Claim(
            "sanity bound: ServerFilling-SRPT lies between SRPT-1 and Theorem 4.1's upper bound "
            "(the bound is loose, about 10x the simulation at rho 0.9: this catches gross "
            "errors only; the share of the gap used is shown)",
            inside and bool(judged),
            "; ".join(rows_b),
        ),
    ]


def _fmt(x: float) -> str:
    return "unstable" if not math.isfinite(x) else f"{x:.4g}"


def least(at: dict, j: Judging) -> list[Claim]:
    """ServerFilling-SRPT has the least E[T] of the multiserver-job policies at every judged load
    (:func:`long_enough`): below each other policy by :func:`compare` (95% intervals apart, or
    the other unstable); overlapping intervals leave a load NOT RESOLVED."""
    orders, rows = [], []
    sfs_label = label("server-filling-srpt")
    judged, loads = j.judged, j.loads
    for load in loads:
        if load not in judged:
            rows.append(f"rho={load}: run too short to judge")
            continue
        sfs = at[(sfs_label, load)]
        here = [
            (label(p), compare(sfs, at[(label(p), load)]))
            for p in MSJ_POLICIES
            if p != "server-filling-srpt" and (label(p), load) in at
        ]
        orders += [o for _, o in here]
        others = [at[(name, load)] for name, _ in here]
        best = min(others, key=lambda q: q.mean if q.stable else math.inf)
        worst = [f"{name}: {o.reason}" for name, o in here if o.order != BELOW]
        rows.append(
            f"rho={load}: SF-SRPT {describe(sfs)} vs best other {best.series} {describe(best)}"
            + (f" ({'; '.join(worst)})" if worst else "")
        )
    return [
        lower_claim(
            "ServerFilling-SRPT has the least mean response time at every load the run can judge "
            "(§6; 95% intervals apart, or the other policy unstable)",
            orders,
            "; ".join(rows),
            clear=False,
        )
    ]


def _ratio(at: dict, series: str, load: float) -> float:
    """E[T] of ``series`` over the simulated SRPT-1's; inf when the policy is unstable, NaN when
    SRPT-1 is."""
    a, b = at[(series, load)], at[(label("srpt-1"), load)]
    if not b.stable:
        return math.nan
    return a.mean / b.mean if a.stable else math.inf


def _ratio_points(runs: dict, policies: tuple[str, ...], loads: tuple[float, ...]) -> list[Point]:
    """Ratio to SRPT-1 with a delta-method interval from the two batch-means intervals; at a
    split load (--scale authors) the t interval of the replications' ratios, paired: replication
    r of both saw the same jobs."""
    points = []
    for policy in policies:
        for load in loads:
            a, b = runs[(policy, load)], runs[("srpt-1", load)]
            if not (a["stable"] and b["stable"]):
                points.append(Point(label(policy), load, math.nan, math.nan, math.nan, False))
                continue
            ratio = a["mean_response_time"] / b["mean_response_time"]
            if "replication_means" in a:
                paired = np.divide(a["replication_means"], b["replication_means"])
                points.append(Point(label(policy), load, ratio, *t_interval(ratio, paired).ci95))
                continue
            rel = math.hypot(
                (a["mean_response_time_hi"] - a["mean_response_time_lo"])
                / 2
                / a["mean_response_time"],
                (b["mean_response_time_hi"] - b["mean_response_time_lo"])
                / 2
                / b["mean_response_time"],
            )
            points.append(Point(label(policy), load, ratio, ratio * (1 - rel), ratio * (1 + rel)))
    return points


def trends(at: dict, j: Judging) -> list[Claim]:
    """The §6 trends as rho -> 1, on the loads from TREND_FROM the run can judge (NOT CHECKED
    when fewer than three): ServerFilling-SRPT's ratio to SRPT-1 strictly decreasing, its excess
    over 1 at the heaviest judged load at most FALL times that at the lightest; the others'
    ratios strictly increasing (an unstable policy counts as an infinite ratio) and above
    ServerFilling-SRPT's at the heaviest judged load."""
    loads = j.loads
    trend = [load for load in j.judged if load >= TREND_FROM]
    skipped = [load for load in loads if load >= TREND_FROM and load not in trend]
    where = f"judged loads {trend}" + (f"; too short to judge: {skipped}" if skipped else "")
    sfs_label = label("server-filling-srpt")
    texts = [
        f"ServerFilling-SRPT's ratio to SRPT-1 falls toward 1 as rho -> 1 (§6, Fig. 3/4: strictly "
        f"decreasing over the judged loads >= {TREND_FROM}, and its excess over 1 at the heaviest "
        f"at most {FALL:g} x that at the lightest)",
        *(
            f"{label(p)}'s ratio to SRPT-1 grows as rho -> 1 (§6: strictly increasing over the "
            f"judged loads >= {TREND_FROM}, unstable = infinite, and above ServerFilling-SRPT's "
            "at the heaviest)"
            for p in RATIO_POLICIES[1:]
        ),
    ]
    if len(trend) < 3:
        return [
            Claim(t, True, f"fewer than three judged loads >= {TREND_FROM}: {where}", NOT_CHECKED)
            for t in texts
        ]
    sfs = [_ratio(at, sfs_label, load) for load in trend]
    excess = [r - 1 for r in sfs]
    falls = (
        all(math.isfinite(r) for r in sfs)
        and all(a > b for a, b in itertools.pairwise(sfs))
        and excess[-1] <= FALL * excess[0]
    )
    claims = [
        Claim(
            texts[0],
            falls,
            ", ".join(f"rho={load}: {_fmt(r)}" for load, r in zip(trend, sfs, strict=True))
            + f"; excess over 1 {excess[-1]:.3g} vs {excess[0]:.3g} ({where})",
        )
    ]
    for text, policy in zip(texts[1:], RATIO_POLICIES[1:], strict=True):
        r = [_ratio(at, label(policy), load) for load in trend]
        finite = [x for x in r if math.isfinite(x)]
        grows = (
            not any(math.isnan(x) for x in r)
            and all(a < b or a == b == math.inf for a, b in itertools.pairwise(r))
            and bool(finite)
            and r[-1] > sfs[-1]
        )
        claims.append(
            Claim(
                text,
                grows,
                ", ".join(f"rho={load}: {_fmt(x)}" for load, x in zip(trend, r, strict=True))
                + f" ({where})",
            )
        )
    return claims


def stability_limits(at: dict, j: Judging) -> list[Claim]:
    """GreedySRPT and FirstFitSRPT: last stable and first unstable load on the grid of the
    figure's stability-limit sweep (:class:`Limits`)."""
    assert j.limits is not None  # a figure's claims include this one only with its sweep
    grid, notes, ok = j.limits.grid, [], True
    for policy in j.limits.policies:
        stable = [load for load in grid if at[(label(policy) + LIMIT, load)].stable]
        unstable = [load for load in grid if load not in stable]
        first_unstable = min(unstable) if unstable else math.inf
        last_stable = max(stable) if stable else -math.inf
        ok &= first_unstable <= 0.85 and all(load in unstable for load in grid if load >= 0.85)
        notes.append(
            f"{label(policy)}: stable up to {last_stable}, unstable from "
            f"{first_unstable} ({j.limit_arrivals:,} arrivals per load, 0.01 grid)"
        )
    return [
        Claim(
            "GreedySRPT and FirstFitSRPT are unstable at every load >= 0.85 (§6)",
            ok,
            "; ".join(notes),
        )
    ]


def authors_plans(sizes: str) -> dict[float, SplitPlan]:
    """The split of each of AUTHORS_LOADS at --scale authors (module docstring)."""
    return {
        load: plan_split(load, SCV[sizes], MEASURED_RELAXATIONS, PIECES) for load in AUTHORS_LOADS
    }


def _run(
    ctx: Context, policies: Sequence[str], loads: Sequence[float], sizes: str, arrivals: int
) -> dict[Key, dict[str, Any]]:
    """Each (policy, load)'s run of ``arrivals`` (its one record)."""
    runs = run_grid(
        ctx, lambda p, load: spec(p, load, arrivals, sizes), policies, loads, experiment=EXPERIMENT
    )
    return {key: recs[0] for key, recs in runs.items()}


def _run_split(
    ctx: Context, policies: Sequence[str], plans: dict[float, SplitPlan], sizes: str
) -> dict[Key, dict[str, Any]]:
    """Each (policy, load) of ``plans`` as its PIECES replications, combined (split.combine):
    the same fields as a single run's record."""
    if not plans:
        return {}
    runs = run_grid(
        ctx,
        lambda p, load: split_spec(spec(p, load, 1, sizes), plans[load]),
        policies,
        tuple(plans),
        experiment=EXPERIMENT,
        replications=PIECES,
    )
    out = {}
    for key, recs in runs.items():
        stat = combine(recs, "mean_response_time")
        out[key] = {
            "mean_response_time": stat.mean,
            "mean_response_time_lo": stat.lo,
            "mean_response_time_hi": stat.hi,
            "stable": stat.stable,
            "replication_means": [r["mean_response_time"] for r in recs],
        }
    return out


def _arrivals_per_second(policy: str, sizes: str) -> float:
    """Arrivals per CPU second of ``policy`` in this process: a run of CALIBRATION_ARRIVALS at
    the heaviest split load, timed after a tiny run that loads its compiled kernels. CPU time,
    not wall time: the plan counts core-hours, and other processes on the machine do not slow
    the CPU clock."""
    from schedlab.simulation.simulate import run_model

    run_model(compile_model(spec(policy, AUTHORS_LOADS[-1], 200, sizes)))
    model = compile_model(spec(policy, AUTHORS_LOADS[-1], CALIBRATION_ARRIVALS, sizes))
    start = time.process_time()
    run_model(model)
    return CALIBRATION_ARRIVALS / max(time.process_time() - start, 1e-9)


def authors_plan(figure: LoadSweep, ctx: Context) -> list[str]:
    """The lines printed before ``figure`` runs at --scale authors: arrivals per point,
    core-hours and the wall time for the workers given, from a calibration run of each policy.
    The wall time is the core-hours shared evenly by the workers, or the longest single run if
    that is longer."""
    sizes = figure.sizes
    policies = (*figure.policies, "srpt-1")
    plans = authors_plans(sizes)
    single = [load for load in figure.loads if load not in plans]
    n = figure.arrivals_for(ctx)
    rates = {p: _arrivals_per_second(p, sizes) for p in policies}
    arrivals = sum(plan.total_arrivals for plan in plans.values()) + n * len(single)
    core_hours = sum(arrivals / rates[p] for p in policies) / 3600
    workers = ctx.workers or (None if ctx.cluster else default_workers())
    tasks = len(policies) * (len(single) + PIECES * len(plans))
    longest = max(
        max(n, *(plan.arrivals_per_piece for plan in plans.values())) / rates[p] for p in policies
    )
    hours = max(core_hours / min(workers or 1, tasks), longest / 3600)
    wall = (
        f"expected wall time with {workers} worker(s): {hours:,.1f} h"
        if workers
        else "expected wall time: core-hours / the cluster's workers"
    )
    return [
        f"plan ({len(policies)} policies: {', '.join(label(p) for p in policies)}):",
        f"  loads {', '.join(map(str, single))}: one run of {n:,} arrivals each, as at paper scale",
        *(f"  {plan.describe()} per policy" for plan in plans.values()),
        f"  each replication discards a warm-up of {WARMUP_RELAXATIONS} relaxation times "
        "(1 + C^2) / 2 / "
        f"(1 - sqrt(rho))^2, C^2 = {SCV[sizes]:g}; interval: t over the {PIECES} replication means",
        f"  arrivals per CPU second, measured here ({CALIBRATION_ARRIVALS:,} arrivals per policy "
        f"at rho {AUTHORS_LOADS[-1]}, from empty): "
        + ", ".join(f"{label(p)} {rates[p] / 1e6:.2f} M" for p in policies),
        f"  total {core_hours:,.1f} core-hours in {tasks:,} runs; {wall}",
    ]


# ---------------------------------------------------------------- the figures as specs


Claims = Callable[[dict[Key, Point], Judging], list[Claim]]


def claims_judge(claims: Sequence[Claims], judging: Judging) -> Judge:
    """The judge that runs ``claims`` in order on the rows (keyed by series and load)."""

    def judge(rows: Sequence[Point]) -> list[Claim]:
        at = {(r.series, r.x): r for r in rows}
        return [c for claim in claims for c in claim(at, judging)]

    return judge


RATIO_CLAIMS: tuple[Claims, ...] = (least, trends, theory)


def ratio_judge(loads: Sequence[float], sizes: str, n: int, split: Collection[float] = ()) -> Judge:
    """Figs. 3 and 4's claims from their rows (E[T] per policy and load, the analytic rows);
    ``split`` loads ran as independent replications (--scale authors) and are judged."""
    return claims_judge(RATIO_CLAIMS, Judging(loads, sizes, n, split))


@dataclass(frozen=True)
class LoadSweep:
    """A §6 figure over load (Figs. 2-4): ``policies`` (and the plugin policies of the pooled
    family) beside SRPT-1 at each of ``loads``, sizes ``sizes``, ``arrivals`` per point
    (``quick_arrivals`` with --quick; at --scale authors the AUTHORS_LOADS split). Drawn: the
    ``analytic`` curve with each policy's E[T], or, with ``plot.ratio``, with its ratio to the
    simulated SRPT-1. ``limits``: a stability-limit sweep beside it. ``claims`` run in order on
    the rows: every policy's E[T] per load, the analytic rows (:func:`_bound_rows`) and the
    limit sweep's."""

    figure: Figure
    title: str
    sizes: str
    policies: tuple[str, ...]
    loads: tuple[float, ...]
    analytic: Analytic
    plot: Plot
    claims: tuple[Claims, ...]
    limits: Limits | None = None
    arrivals: int = 10_000_000
    quick_arrivals: int = 100_000

    def arrivals_for(self, ctx: Context) -> int:
        return self.quick_arrivals if ctx.quick else self.arrivals


def run_load_sweep(figure: LoadSweep, ctx: Context) -> Outcome:
    """Run ``figure``'s policies and SRPT-1 at its loads, draw its panel, judge its claims."""
    n = figure.arrivals_for(ctx)
    policies = (*figure.policies, *ctx.extra_policies("pooled"))
    simulated = (*policies, "srpt-1")
    plans = authors_plans(figure.sizes) if ctx.scale == AUTHORS else {}
    single = tuple(load for load in figure.loads if load not in plans)
    runs = _run(ctx, simulated, single, figure.sizes, n)
    runs |= _run_split(ctx, simulated, plans, figure.sizes)
    drawn = (
        _ratio_points(runs, policies, figure.loads)
        if figure.plot.ratio
        else _et_rows(runs, simulated, figure.loads)
    )
    panel = Panel("", figure.title, [*figure.analytic.points(figure.loads), *drawn])
    paths = draw_panels(ctx, figure.figure.name, [panel], figure.plot, line_plot)
    rows = [*_et_rows(runs, simulated, figure.loads), *_bound_rows(figure.loads, figure.sizes)]
    judging = Judging(figure.loads, figure.sizes, n, tuple(plans))
    if figure.limits:
        lim = figure.limits
        limit_n = lim.quick_arrivals if ctx.quick else lim.arrivals
        limit_runs = _run(ctx, lim.policies, lim.grid, figure.sizes, limit_n)
        rows += [
            replace(pt, series=pt.series + LIMIT)
            for pt in _et_rows(limit_runs, lim.policies, lim.grid)
        ]
        judging = replace(judging, limits=lim, limit_arrivals=limit_n)
    notes = [
        f"{n:,} arrivals per point" + (" but the split loads" if plans else ""),
        *(f"{plan.describe()} per policy (t interval)" for plan in plans.values()),
        f"numbers in {paths[2]}",
    ]
    return judged(paths[:1], rows, claims_judge(figure.claims, judging), ["; ".join(notes)])


def formula(sizes: str) -> Analytic:
    """The analytic SRPT-1 (M/G/1-SRPT formula) over load."""
    return Analytic(FORMULA, lambda load: bounds(load, sizes).lower)


def theorem_ratio(sizes: str) -> Analytic:
    """Theorem 4.1's upper bound over the analytic SRPT-1, over load."""
    return Analytic(
        "Theorem 4.1 bound (over analytic SRPT-1)",
        lambda load: bounds(load, sizes).upper / bounds(load, sizes).lower,
    )


SCALE = "10^7 arrivals per point (--quick: 10^5)"
AUTHORS_TEXT = (
    f"loads {' and '.join(map(str, AUTHORS_LOADS))} split into {PIECES} independent replications "
    f"of {MEASURED_RELAXATIONS:,} relaxation times in all, each after a warm-up of "
    f"{WARMUP_RELAXATIONS}; other "
    "loads as at paper scale"
)
E_T = Plot(x="load", y="mean_response_time", hue="policy", colors=COLORS, logy=True)
RATIO = Plot(
    x="load",
    y="mean_response_time / mean_response_time[policy=srpt-1]",
    hue="policy",
    colors=COLORS,
    ratio=True,
)
FIG2 = LoadSweep(
    figure=Figure(
        "grosof2023-fig2",
        "grosof2023",
        "Fig. 2",
        "E[T] vs load of ServerFilling-SRPT and prior policies",
        SCALE,
    ),
    title="grosof2023 Fig. 2: k=8, K uniform on {1,2,4,8}, S ~ Exp(1)",
    sizes="exponential",
    policies=MSJ_POLICIES,
    loads=FIG2_LOADS,
    analytic=formula("exponential"),
    plot=E_T,
    claims=(least, stability_limits, theory),
    limits=Limits(LIMIT_POLICIES, LIMIT_GRID),
)


def ratio_figure(number: int, sizes: str, title: str, text: str) -> LoadSweep:
    """Fig. 3 or 4: the ratio to SRPT-1 over RATIO_LOADS with ``sizes``."""
    name = f"grosof2023-fig{number}"
    return LoadSweep(
        figure=Figure(
            name,
            "grosof2023",
            f"Fig. {number}",
            text,
            SCALE,
            authors=AuthorsScale(AUTHORS_TEXT, lambda ctx: authors_plan(FIGURES[name], ctx)),
        ),
        title=title,
        sizes=sizes,
        policies=RATIO_POLICIES,
        loads=RATIO_LOADS,
        analytic=theorem_ratio(sizes),
        plot=RATIO,
        claims=RATIO_CLAIMS,
    )


FIG3 = ratio_figure(
    3,
    "exponential",
    "grosof2023 Fig. 3: ratio to SRPT-1, S ~ Exp(1)",
    "ratio of E[T] to SRPT-1, exponential sizes, loads up to 0.999",
)
FIG4 = ratio_figure(
    4,
    "hyperexponential",
    "grosof2023 Fig. 4: ratio to SRPT-1, S hyperexponential, C^2 = 10",
    "ratio of E[T] to SRPT-1, hyperexponential sizes (C^2 = 10)",
)
FIGURES = {f.figure.name: f for f in (FIG2, FIG3, FIG4)}
for _figure in FIGURES.values():
    register_figure(_figure.figure, _figure, run_load_sweep)
