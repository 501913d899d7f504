"""psychas2018 (Psychas & Ghaderi, "On Non-Preemptive VM Scheduling in the Cloud", POMACS 2018,
psychas2018): Figs 3-6 of §7.

* Fig. 3 (Example 1, §7.1): one server of capacity 6, VM types of size 4 and 1, the small type
  arriving 8 times as often, traffic intensity zeta = 0.89 (workload 0.89 (0.5, 4)): M14's total
  queue grows, Algorithm 1's stays bounded.
* Fig. 4 (Example 2, §7.1): servers of 1, 2, 4, 8 units, VM types of 1, 2, 4, 8 units, equal
  rates, zeta = 0.89: G16's queue far above Algorithm 1's; G16 is run with each choice of its
  sampling function f (policy ``g16``, ``f = "log"`` or ``"loglog"``).
* Fig. 5 (§7.2): Table 1's VM and server types, rates proportional to (2/3, 11/3, 2/3) scaled
  by the number of servers (20..200), zeta = 0.89, Poisson and log-normal inter-arrival times,
  5 runs, first quarter discarded.
* Fig. 6 (§7.2): 20 servers, zeta 0.80..0.95, beta_bar = 0.98.

Traffic intensity (§7): the workload is zeta times the point where the direction of the arrival
rates leaves the capacity region C (eq. (2)), from :func:`schedlab.optim.vm_capacity.max_scaling`.
Mean service time 1 for every type (§7: "service times independent from job type").

Choices the paper leaves open: the log-normal shape (sigma of the underlying normal,
``LOGNORMAL_SIGMA = 1``); "200,000 events" is taken as 100,000 arrivals (each arrival and each
completion is an event) for every policy, so G16's sampling events come on top (the paper runs
G16 for 400,000 events including its sampling events).

Every claim is a function of the rows the figure plots (``judge``), quotes the sentence of §7 it
checks, and judges it with :mod:`schedlab.reproduce.ordering` (comparisons, trends over the
sampled points, "similar" as a ratio within SIMILAR, stability by the growth test), so the
claims audit (:mod:`schedlab.reproduce.audit`) can show each one able to FAIL.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from schedlab.experiments.stats import summarize
from schedlab.measurement.metrics import t_interval
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.optim.vm_capacity import ServerType, max_scaling
from schedlab.report.figures import Point, line_plot
from schedlab.reproduce.driver import Figure, Panel, Plot, draw_panels, register_figure, run_grid
from schedlab.reproduce.ordering import (
    ABOVE,
    INDISTINCT,
    Order,
    compare,
    describe,
    lower_claim,
    ratio_interval,
    similar_claim,
    stable_claim,
    trend_claim,
)
from schedlab.reproduce.registry import (
    FAIL,
    NOT_RESOLVED,
    PASS,
    Claim,
    Context,
    Judge,
    Outcome,
    judged,
    label,
)
from schedlab.reproduce.timeline import (
    Runs,
    Series,
    Timeline,
    long_row,
    run_timeline,
    value_row,
)
from schedlab.workloads.traces.vm_types import ALIBABA, VmTrace, vm_trace

SEED = 2018
ZETA = 0.89
POLICIES = ("vm-stalling", "m14", "g16")
TABLE1 = {  # memory GB, CPU EC2 units, storage GB (Table 1)
    "standard": (15.0, 8.0, 1690.0),
    "high-memory": (17.1, 6.5, 420.0),
    "high-cpu": (7.0, 20.0, 1690.0),
}
TABLE1_SERVER = (90.0, 90.0, 5000.0)
TABLE1_RESOURCES = ("memory", "cpu", "storage")
TABLE1_RATES = (2 / 3, 11 / 3, 2 / 3)
LOGNORMAL_SIGMA = 1.0
FIG5_SERVERS = (20, 40, 60, 80, 100, 120, 140, 160, 180, 200)
FIG5_QUICK_SERVERS = (20, 60, 100)
FIG6_ZETAS = (0.80, 0.83, 0.86, 0.89, 0.92, 0.95)
FIG6_QUICK_ZETAS = (0.80, 0.89, 0.95)
ARRIVALS = 100_000  # 200,000 events (§7.2)
QUICK_ARRIVALS = ARRIVALS  # shorter runs end inside the initial transient at 20 servers


def vm_spec(
    *,
    sizes: list[Any],
    probabilities: list[float],
    servers: list[tuple[int, Any]],
    zeta: float,
    policy: str,
    arrivals: int,
    params: dict[str, Any] | None = None,
    lognormal: bool = False,
    resources: tuple[str, ...] | None = None,
    replications: int = 1,
    timeseries: int = 500,
) -> SimulationSpec:
    """A VM-scheduling spec whose workload is on the boundary of zeta C (mean service 1)."""
    demands = np.array([np.atleast_1d(s) for s in sizes], dtype=float)
    scaling = max_scaling(
        demands,
        [ServerType(n, tuple(np.atleast_1d(c).astype(float))) for n, c in servers],
        probabilities,
    ).max_scaling

    def demand(s):
        return dict(zip(resources, s, strict=True)) if resources else s

    def capacity(c):
        return dict(zip(resources, c, strict=True)) if resources else c

    arrivals_spec: dict[str, Any] = {"process": "poisson"}
    if lognormal:
        arrivals_spec = {
            "process": "renewal",
            "interarrival": {"dist": "lognormal", "mean": 1.0, "sigma": LOGNORMAL_SIGMA},
        }
    return parse_spec(
        {
            "cluster": {"pools": [{"count": n, "capacity": capacity(c)} for n, c in servers]},
            "workload": {
                "rate": zeta * scaling,
                "arrivals": arrivals_spec,
                "classes": [
                    {
                        "name": f"type{j + 1}",
                        "probability": p,
                        "demand": demand(s),
                        "duration": {"dist": "exponential", "mean": 1.0},
                    }
                    for j, (s, p) in enumerate(zip(sizes, probabilities, strict=True))
                ],
            },
            "policy": {"name": policy, **(params or {})},
            "run": {
                "arrivals": arrivals,
                "seed": SEED,
                "warmup": 0.25,
                "allow_unstable": True,
                "replications": replications,
                "timeseries": timeseries,
            },
        }
    )


def example1_spec(policy: str, arrivals: int) -> SimulationSpec:
    return vm_spec(
        sizes=[4.0, 1.0],
        probabilities=[1 / 9, 8 / 9],
        servers=[(1, 6.0)],
        zeta=ZETA,
        policy=policy,
        arrivals=arrivals,
        timeseries=2000,
    )


def example2_spec(policy: str, arrivals: int, **params: Any) -> SimulationSpec:
    return vm_spec(
        sizes=[1.0, 2.0, 4.0, 8.0],
        probabilities=[0.25] * 4,
        servers=[(1, c) for c in (1.0, 2.0, 4.0, 8.0)],
        zeta=ZETA,
        policy=policy,
        arrivals=arrivals,
        params=params,
        timeseries=2000,
    )


def table1_spec(
    policy: str, servers: int, zeta: float, arrivals: int, lognormal: bool, **params: Any
) -> SimulationSpec:
    total = sum(TABLE1_RATES)
    return vm_spec(
        sizes=list(TABLE1.values()),
        probabilities=[r / total for r in TABLE1_RATES],
        servers=[(servers, TABLE1_SERVER)],
        zeta=zeta,
        policy=policy,
        arrivals=arrivals,
        params=params,
        lognormal=lognormal,
        resources=TABLE1_RESOURCES,
        timeseries=0,
    )


def _runs_note(runs: Runs) -> str:
    return "; ".join(
        f"{name}: {describe(long_row(name, r))}, growth over the second half {r.slope():.3g} "
        f"per unit time, {r.seconds:.1f} s"
        for name, r in runs.items()
    )


# ------------------------------------------------------------------------------- Figs 3, 4


def _example1_scaling() -> list[Point]:
    s = max_scaling([[4.0], [1.0]], [ServerType(1, (6.0,))], [0.5, 4.0]).max_scaling
    return [value_row("largest scaling of (0.5, 4) in C", s)]


LARGE = 5.0  # "very large queue sizes" / "much better": more than 5 times Algorithm 1's mean
GROWTH_TEST = (
    "the growth test, measurement/stability.py; its miss and false-alarm rates: "
    "docs/guarantees.md, 'How often the trend test is wrong'"
)


def fig3_judge(arrivals: float, _runs: Runs) -> Judge:
    def judge(rows: Sequence[Point]) -> list[Claim]:
        at = {r.series: r for r in rows}
        s = at["largest scaling of (0.5, 4) in C"].mean
        alg, m14 = at[label("vm-stalling")], at[label("m14")]
        return [
            Claim(
                "the workload 0.89 x (0.5, 4) has traffic intensity 0.89 (§7.1 Example 1: "
                "'clearly supportable because it is less than the average of two maximal "
                "configurations (1,2) and (0,6)'): (0.5, 4) lies on the boundary of C",
                abs(s - 1.0) < 1e-9,
                f"capacity LP (eq. (2)): largest scaling of (0.5, 4) in C = {s:.9g}",
            ),
            Claim(
                "'the queue sizes under M14 go to infinity' (§7.1 Example 1): M14 flagged "
                f"unstable by {GROWTH_TEST}, its queue growing",
                not m14.stable and m14.growth > 0,
                f"{arrivals} arrivals: M14 {describe(m14)}, growth {m14.growth:.3g} per unit time",
            ),
            lower_claim(
                "'Algorithm 1 keeps the queues stable' (§7.1 Example 1): stable by the growth "
                "test, hence below M14",
                [compare(alg, m14)] if alg.stable else [Order(ABOVE, "Algorithm 1 unstable")],
                f"Algorithm 1 {describe(alg)}, growth {alg.growth:.3g} per unit time; "
                f"M14 {describe(m14)}",
            ),
        ]

    return judge


G16_F = ("log", "loglog")  # the sampling-rate functions of policy g16 (vm_tokens.py)


def _g16_suffix(f: str) -> str:
    return "" if f == "log" else f" (f = {f})"


def _g16_name(f: str) -> str:
    return label("g16") + _g16_suffix(f)


def fig4_judge(arrivals: float, _runs: Runs) -> Judge:
    def judge(rows: Sequence[Point]) -> list[Claim]:
        at = {r.series: r for r in rows}
        alg, g16 = at[label("vm-stalling")], at[_g16_name("log")]
        evidence = (
            f"{arrivals} arrivals: Algorithm 1 {describe(alg)}; G16 (f = log(1 + x)) "
            f"{describe(g16)}; M14 {describe(at[label('m14')])}"
        )
        much = compare(alg, g16)
        if much.below and g16.stable and g16.mean <= LARGE * alg.mean:
            much = Order(INDISTINCT, f"G16 less than {LARGE:g}x Algorithm 1")
        large = g16.stable and alg.stable and g16.mean > LARGE * alg.mean
        return [
            lower_claim(
                "'Algorithm 1 performs much better' than G16 (Fig. 4 caption): below G16, and "
                f"G16's mean queue more than {LARGE:g}x Algorithm 1's (or G16 unstable)",
                [much],
                evidence,
            ),
            Claim(
                "'although G16 guarantees stability it ... could yield very large queue sizes' "
                f"(§7.1 Example 2): G16 (f = log(1 + x)) stable by {GROWTH_TEST}, its mean "
                f"queue more than {LARGE:g}x Algorithm 1's. NOT RESOLVED while its queue still "
                "grows over the run: at 200,000 and at 1,000,000 arrivals it still grows, ever "
                "more slowly (docs/vm-scheduling.md, 'G16 on Example 2'), so the runs show very "
                "large queues but cannot show the stability the paper states",
                large,
                evidence,
                (PASS if large else FAIL) if g16.stable or not alg.stable else NOT_RESOLVED,
            ),
            stable_claim(
                "Algorithm 1 'performs much better' in Example 2 (Fig. 4 caption): stable by "
                "the growth test",
                [alg],
                f"Algorithm 1 {describe(alg)}, growth {alg.growth:.3g} per unit time",
            ),
        ]

    return judge


# ------------------------------------------------------------------------------- Figs 5, 6

ARRIVAL_PROCESSES = ("Poisson", "log-normal")
SIMILAR = 2.0  # "similar": mean queues within a factor 2, the ratio's interval inside [1/2, 2]


def _series_name(policy: str, arrival: str) -> str:
    return f"{label(policy)} ({arrival})"


def _sweep(ctx: Context, specs: dict[tuple, SimulationSpec], reps: int, name: str):
    """One point per spec, and the number of its replications flagged unstable. An unstable
    point's growth is the mean of arrival rate - throughput over its unstable replications."""
    keys = list(specs)
    records = ctx.run([specs[k] for k in keys], replications=reps, experiment=name)
    points: dict[tuple, Point] = {}
    unstable: dict[tuple, int] = {}
    for key, recs in zip(keys, records, strict=True):
        stat = summarize(recs, by=["policy"], metric="mean_number_in_queue")[0]
        policy, x, arrival = key
        growing = [r for r in recs if not r.get("stable", True)]
        growth = (
            float(np.mean([r["arrival_rate"] - r["throughput"] for r in growing]))
            if growing
            else math.nan
        )
        points[key] = Point(
            _series_name(policy, arrival),
            x,
            stat.mean,
            stat.lo,
            stat.hi,
            stat.stable,
            growth=growth,
        )
        unstable[key] = len(growing)
    return points, unstable


@dataclass(frozen=True)
class TrapCondition:
    """When a frozen M14 mix on Table 1 cannot serve the high-memory load (§7.1's local-refresh
    failure): every maximal configuration holds at least ``base`` high-memory VMs; a mix with
    n_k servers in configuration k serves base L + sum_k extra_k n_k of them, below the load
    ``load`` (per unit time, mean service 1) exactly when sum_k extra_k n_k <= ``most``."""

    servers: int
    base: int
    extra: dict[tuple[int, ...], int]  # maximal configuration -> high-memory slots above base
    load: float
    most: int

    def trapped(self, mix: dict[tuple[int, ...], int]) -> bool:
        return sum(self.extra[k] * n for k, n in mix.items()) <= self.most

    def __str__(self) -> str:
        terms = " + ".join(
            f"{e} n{list(k)}" if e > 1 else f"n{list(k)}" for k, e in self.extra.items() if e
        )
        return (
            f"every maximal configuration of Table 1 holds >= {self.base} high-memory VMs, so "
            "with a backlogged high-memory queue no server empties and M14's configurations "
            f"freeze; at {self.servers} servers a frozen mix serves {self.base} x "
            f"{self.servers} + {terms} high-memory VMs, below the load {self.load:.4g} when "
            f"{terms} <= {self.most} (n[k] = servers in configuration k): then the queue grows "
            "for ever"
        )


def m14_trap(servers: int, zeta: float = ZETA) -> TrapCondition:
    """The trap condition of :class:`TrapCondition`, from the maximal configurations of Table 1
    (the capacity LP's configurations) and the high-memory load at ``zeta``."""
    w = np.array(list(TABLE1.values()))
    total = sum(TABLE1_RATES)
    d = np.array(TABLE1_RATES) / total
    scaling = max_scaling(w, [ServerType(1, TABLE1_SERVER)], d)
    b = int(np.argmax(TABLE1_RATES))
    configs = [tuple(int(v) for v in k) for k in scaling.configurations[0]]
    base = min(k[b] for k in configs)
    load = zeta * scaling.max_scaling * d[b] * servers
    most = math.ceil(load - base * servers - 1e-9) - 1  # extra slots strictly below the load
    return TrapCondition(servers, base, {k: k[b] - base for k in configs}, load, most)


@dataclass(frozen=True)
class Table1Sweep:
    """Every policy at every x, under Poisson and log-normal arrivals (Figs. 5 and 6)."""

    points: dict[tuple, Point]  # (policy, x, arrivals) -> mean queue size
    unstable: dict[tuple, int]  # (policy, x, arrivals) -> replications flagged unstable
    replications: int
    figures: list[Path]


def _table1_sweep(
    ctx: Context,
    name: str,
    xs: tuple,
    spec_of: Callable[[str, Any, int, bool], SimulationSpec],
    *,
    x: str,
    title: str,
) -> Table1Sweep:
    """Run ``spec_of(policy, x, arrivals, lognormal)`` for every policy, x and arrival process
    and plot the mean queue size against x (log scale)."""
    arrivals = QUICK_ARRIVALS if ctx.quick else ARRIVALS
    reps = 3 if ctx.quick else 5
    specs = {
        (p, v, a): spec_of(p, v, arrivals, a == "log-normal")
        for p in POLICIES
        for v in xs
        for a in ARRIVAL_PROCESSES
    }
    pts, unstable = _sweep(ctx, specs, reps, name)
    plot = Plot(x=x, y="mean queue size (jobs)", hue="algorithm (arrivals)", logy=True)
    panel = Panel("", title, list(pts.values()))
    figures = draw_panels(ctx, name.replace("-", "_"), [panel], plot, line_plot)
    return Table1Sweep(pts, unstable, reps, figures)


@dataclass(frozen=True)
class Table1Figure:
    """A figure of the mean queue against ``xs`` on Table 1's types (Figs. 5, 6; ``quick_xs``
    with --quick): ``spec_of(policy, x, arrivals, lognormal)`` for every policy, x and arrival
    process; ``notes(sweep, xs)`` and ``judge(xs)``."""

    figure: Figure
    xs: tuple[Any, ...]
    quick_xs: tuple[Any, ...]
    spec_of: Callable[[str, Any, int, bool], SimulationSpec]
    x: str
    title: str
    notes: Callable[[Table1Sweep, Sequence[Any]], list[str]]
    judge: Callable[[Sequence[Any]], Judge]


def run_table1(spec: Table1Figure, ctx: Context) -> Outcome:
    xs = spec.quick_xs if ctx.quick else spec.xs
    sweep = _table1_sweep(ctx, spec.figure.name, xs, spec.spec_of, x=spec.x, title=spec.title)
    return judged(sweep.figures, list(sweep.points.values()), spec.judge(xs), spec.notes(sweep, xs))


def _fig5_notes(sweep: Table1Sweep, servers: Sequence[int]) -> list[str]:
    return [
        f"{sweep.replications} runs per point; M14 runs flagged unstable at {servers[0]} "
        "servers: "
        + ", ".join(
            f"{a} {sweep.unstable[('m14', servers[0], a)]} of {sweep.replications}"
            for a in ARRIVAL_PROCESSES
        ),
        str(m14_trap(servers[0])),
    ]


def _at(rows: Sequence[Point]) -> Callable[[str, str, float], Point]:
    points = {(r.series, r.x): r for r in rows}
    return lambda policy, arrival, x: points[(_series_name(policy, arrival), x)]


def _table(at: Callable[[str, str, float], Point], a: str, xs: Sequence, what: str) -> str:
    return "; ".join(
        f"{what} {x}: " + ", ".join(f"{label(p)} {describe(at(p, a, x))}" for p in POLICIES)
        for x in xs
    )


def _below_g16(at, a: str, xs: Sequence, text: str) -> Claim:
    """Algorithm 1 stable and below G16 at every x (:func:`lower_claim`)."""
    orders = [
        compare(at("vm-stalling", a, x), at("g16", a, x))
        if at("vm-stalling", a, x).stable
        else Order(ABOVE, "Algorithm 1 unstable")
        for x in xs
    ]
    return lower_claim(text, orders, _table(at, a, xs, "x ="))


def _similar_text(at, a: str, xs: Sequence) -> str:
    def one(x: float) -> str:
        p, m = at("vm-stalling", a, x), at("m14", a, x)
        if not (p.stable and m.stable):
            return f"{x}: Alg. 1 {describe(p)}, M14 {describe(m)}"
        r, lo, hi = ratio_interval(p, m)
        return f"{x}: Alg. 1 / M14 = {r:.3g} [{lo:.3g}, {hi:.3g}]"

    return "; ".join(one(x) for x in xs)


def fig5_judge(servers: Sequence[int]) -> Judge:
    small, rest = servers[0], list(servers[1:])

    def judge(rows: Sequence[Point]) -> list[Claim]:
        at = _at(rows)
        claims = []
        for a in ARRIVAL_PROCESSES:

            def trend(policy: str, a: str = a) -> str:
                return f"{label(policy)}: " + ", ".join(
                    f"{n}: {describe(at(policy, a, n))}" for n in servers
                )

            claims += [
                _below_g16(
                    at,
                    a,
                    servers,
                    "Algorithm 1 is 'much better than G16 when it comes to scaling cluster to "
                    f"more servers' (Fig. 5 caption; {a} arrivals): stable and below G16 at "
                    "every number of servers",
                ),
                similar_claim(
                    "'The behavior of Algorithm 1 and M14 is similar' (§7.2; "
                    f"{a} arrivals) above {small} servers: mean-queue ratio within a factor "
                    f"{SIMILAR:g}, its 95% interval inside [1/{SIMILAR:g}, {SIMILAR:g}] (NOT "
                    "RESOLVED when wider)",
                    [(at("vm-stalling", a, n), at("m14", a, n)) for n in rest],
                    SIMILAR,
                    _similar_text(at, a, rest),
                ),
                similar_claim(
                    f"... and at {small} servers too, as the paper's Fig. 5 shows ({a} arrivals)",
                    [(at("vm-stalling", a, small), at("m14", a, small))],
                    SIMILAR,
                    _similar_text(at, a, [small]) + "; " + str(m14_trap(small)),
                ),
                *(
                    trend_claim(
                        f"{label(p)} 'perform[s] better as the number of servers increases' "
                        f"(§7.2; {a} arrivals): its mean queue falls over the sampled sizes",
                        [at(p, a, n) for n in servers],
                        False,
                        trend(p),
                    )
                    for p in ("vm-stalling", "m14")
                ),
            ]
            g16 = compare(at("g16", a, servers[-1]), at("g16", a, small))
            claims.append(
                Claim(
                    f"'... unlike G16' (§7.2; {a} arrivals): G16's mean queue does not fall "
                    f"with more servers (at {servers[-1]} servers not below {small})",
                    not g16.below,
                    trend("g16") + f" ({g16.reason})",
                )
            )
        return claims

    return judge


def _ratio_point(p: Point, q: Point, x: float) -> Point:
    """p/q as a point with its conservative interval (:func:`ratio_interval`): unstable when p
    is unstable and q not (an infinite ratio), 0 when q is unstable and p not, NOT RESOLVED
    (unstable, no growth) when both are."""
    if p.stable and q.stable:
        r, lo, hi = ratio_interval(p, q)
        return Point("ratio", x, r, lo, hi)
    if p.stable:
        return Point("ratio", x, 0.0, math.nan, math.nan)
    return Point("ratio", x, math.nan, math.nan, math.nan, stable=False, growth=p.growth)


def fig6_judge(zetas: Sequence[float]) -> Judge:
    high = [z for z in zetas if z >= ZETA]

    def judge(rows: Sequence[Point]) -> list[Claim]:
        at = _at(rows)
        claims = []
        for a in ARRIVAL_PROCESSES:
            table = _table(at, a, zetas, "zeta")

            def ratios(policy: str, a: str = a) -> list[Point]:
                return [_ratio_point(at(policy, a, z), at("vm-stalling", a, z), z) for z in zetas]

            def text(points: list[Point], name: str) -> str:
                return f"{name} / Algorithm 1: " + ", ".join(
                    f"{p.x}: {describe(p)}" for p in points
                )

            top, low = zetas[-1], zetas[0]
            m14 = ratios("m14")
            above = compare(at("m14", a, top), at("vm-stalling", a, top))
            m14_claim = trend_claim(
                "'M14 deteriorates at higher traffic' (Fig. 6 caption; §7.2 'M14 seems to "
                f"become unstable in high traffic loads'; {a} arrivals): its ratio to "
                "Algorithm 1 rises with zeta, and at the highest zeta M14 is above Algorithm 1",
                m14,
                True,
                text(m14, "M14") + f"; at {top}: {above.reason}",
            )
            if above.order != ABOVE and m14_claim.verdict == PASS:
                m14_claim = Claim(m14_claim.text, False, m14_claim.evidence, FAIL)
            g16 = ratios("g16")
            claims += [
                stable_claim(
                    "'our algorithm performs very well in the whole range of workloads' "
                    f"(§7.2; {a} arrivals): Algorithm 1 stable at every zeta (growth test)",
                    [at("vm-stalling", a, z) for z in zetas],
                    table,
                ),
                stable_claim(
                    "'... while G16 and Algorithm 1 are still stable' in high traffic loads "
                    f"(§7.2; {a} arrivals): both stable at zeta >= {ZETA} (growth test)",
                    [at(p, a, z) for z in high for p in ("g16", "vm-stalling")],
                    table,
                ),
                m14_claim,
                _g16_claim(g16, at, a, low, text(g16, "G16")),
            ]
        return claims

    return judge


def _g16_claim(ratios: list[Point], at, a: str, low: float, evidence: str) -> Claim:
    text = (
        f"'G16 deteriorates at lower traffic' (Fig. 6 caption; {a} arrivals): its mean queue "
        f"relative to Algorithm 1's falls as zeta grows, from above Algorithm 1 at zeta = {low}"
    )
    start = compare(at("g16", a, low), at("vm-stalling", a, low))
    if start.order != ABOVE:
        return Claim(text, False, evidence + f"; at zeta = {low}: {start.reason}")
    return trend_claim(text, ratios, False, evidence)


# ------------------------------------------------------------------------------- Figs 7, 8

TRACE_JOBS = 1_000_000  # §7.3: "a window of 1 million arrivals"
FIG7_WINDOW_S = 20 * 60.0  # Fig. 7: arrivals per 20-minute window
FIG8_SERVERS = (800, 900, 1000, 1100, 1250)  # §7.3: 800 to 1,250 servers of size 1
FIG8_QUICK_SERVERS = (800, 1250)
FIG8_RUNS = 3  # §7.3: "all runs were repeated 3 times"
FIG8_TOP_LOAD = 0.95  # INFERRED: on a stand-in trace, the load of the paper's 800 servers
TRACE_ALGORITHM1 = {"z": 0.002, "stall_limit": 0.015}  # §7.3; q(s) = (1 - s) 1(s < 0.015)
TRACE_SUBROUTINE = "dp"  # r = 1 like the enumeration, on 2^7 units per server (§6.1(ii))


def cluster_size(vt: VmTrace, paper: int) -> int:
    """The number of servers standing for the paper's ``paper``: itself on the paper's own
    trace; on a stand-in, scaled so that the paper's smallest cluster (800 servers) has
    offered load FIG8_TOP_LOAD (the engine's load: offered work / servers), the others in
    proportion (load 0.95 x 800 / paper)."""
    if vt.natural:
        return paper
    return max(1, round(vt.offered / FIG8_TOP_LOAD * paper / FIG8_SERVERS[0]))


def trace_spec(vt: VmTrace, servers: int, policy: str, replications: int = 1) -> SimulationSpec:
    """The typed trace on ``servers`` servers of size 1 (§7.3), one queue per type; Algorithm 1
    with §7.3's z and q(s); the first quarter discarded as in §7.2."""
    params: dict[str, Any] = {}
    if policy in ("vm-stalling", "m14"):
        params["subroutine"] = TRACE_SUBROUTINE
    if policy == "vm-stalling":
        params |= TRACE_ALGORITHM1
    if policy == "g16":  # its sampling rate per unit of mean service time, as on Table 1
        params["alpha"] = float(np.sum(vt.share * vt.mean_duration)) ** -1
    return parse_spec(
        {
            "cluster": {"servers": servers, "capacity": 1.0},
            "workload": {
                "arrivals": {"process": "trace", "path": str(vt.path)},
                "classes": [
                    {
                        "name": f"size 1/{round(1 / size)}",
                        "probability": float(vt.share[c]),
                        "demand": float(size),
                        "duration": float(vt.mean_duration[c]),
                    }
                    for c, size in enumerate(vt.sizes)
                ],
            },
            "policy": {"name": policy, **params},
            "run": {
                "seed": SEED,
                "warmup": 0.25,
                "timeseries": 0,
                "allow_unstable": True,
                "drain": False,
                "replications": replications,
            },
        }
    )


@dataclass(frozen=True)
class TraceCounts:
    """Fig. 7: the arrivals per ``window`` seconds of the trace's first ``jobs`` arrivals, in
    the full windows (no simulation: the same in both variants)."""

    figure: Figure
    jobs: int
    window: float
    title: str
    plot: Plot


def run_fig7(spec: TraceCounts, ctx: Context) -> Outcome:
    vt = vm_trace(ctx.out, spec.jobs)
    n_full = max(int(vt.arrival[-1] // spec.window), 1)  # windows inside the trace window
    edges = np.arange(n_full + 1) * spec.window
    full = np.histogram(vt.arrival, bins=edges)[0]
    points = [
        Point("arrivals", float(h), float(n), math.nan, math.nan)
        for h, n in zip(edges[:-1] / 3600.0, full, strict=True)
    ]
    panel = Panel("", f"{spec.title}, {vt.label}", points)
    figures = draw_panels(ctx, spec.figure.underscored, [panel], spec.plot, line_plot)
    notes = [
        f"trace: {vt.label}; {vt.arrival.size:,} arrivals over {vt.arrival[-1] / 3600:.3g} hours"
    ]
    return judged(figures, points, fig7_judge, notes)


def fig7_judge(rows: Sequence[Point]) -> list[Claim]:
    counts = np.array([r.mean for r in rows if r.series == "arrivals"])
    ok = counts.size > 1 and bool(np.all(np.isfinite(counts))) and counts.mean() > 0
    dispersion = float(counts.var(ddof=1) / counts.mean()) if ok else math.nan
    dof = counts.size - 1
    p_value = float(stats.chi2.sf(dispersion * dof, dof)) if ok else math.nan
    return [
        Claim(
            "'The traffic intensity is variable and we suspect that the arrivals are correlated "
            "and do not really follow Poisson' (§7.3): counts per 20-minute window "
            "over-dispersed (chi-square dispersion test p < 0.01)",
            ok and p_value < 0.01,
            f"{counts.size} full windows, counts {np.nanmin(counts):,.0f} to "
            f"{np.nanmax(counts):,.0f}; variance/mean {dispersion:.4g} (1 for Poisson), "
            f"p = {p_value:.3g}",
        )
    ]


@dataclass(frozen=True)
class TraceReplay:
    """Fig. 8: the trace's first ``jobs`` arrivals replayed on each of the paper's cluster sizes
    ``servers`` (``quick_servers`` with --quick; scaled on a stand-in trace: :func:`cluster_size`)
    by the ``deterministic`` policies once and the ``randomized`` ones ``runs`` times (once with
    --quick); the mean queue of each."""

    figure: Figure
    jobs: int
    servers: tuple[int, ...]
    quick_servers: tuple[int, ...]
    deterministic: tuple[str, ...]
    randomized: tuple[str, ...]
    runs: int
    title: str
    plot: Plot


def run_fig8(spec: TraceReplay, ctx: Context) -> Outcome:
    vt = vm_trace(ctx.out, spec.jobs)
    paper_l = spec.quick_servers if ctx.quick else spec.servers
    runs = 1 if ctx.quick else spec.runs

    def replay(policy: str, n: float) -> SimulationSpec:
        return trace_spec(vt, cluster_size(vt, int(n)), policy)

    name = spec.figure.name
    records = run_grid(ctx, replay, spec.deterministic, paper_l, experiment=name)
    records |= run_grid(ctx, replay, spec.randomized, paper_l, experiment=name, replications=runs)
    pts: list[Point] = []
    for (policy, n), recs in records.items():
        values = np.array([_trace_queue(r) for r in recs])
        lo, hi = (math.nan, math.nan)
        if values.size > 1:
            est = t_interval(float(values.mean()), values)
            lo, hi = est.ci95
        mean = float(values.mean())
        pts.append(
            Point(
                label(policy), float(cluster_size(vt, n)), mean, lo, hi, stable=not math.isnan(mean)
            )
        )
    plot = replace(spec.plot, x=spec.plot.x + ("" if vt.natural else " (stand-in trace)"))
    panel = Panel("", f"{spec.title}, {vt.label}", pts)
    figures = draw_panels(ctx, spec.figure.underscored, [panel], plot, line_plot)
    notes = [
        f"trace: {vt.label}; {vt.arrival.size:,} arrivals; types (sizes) "
        + ", ".join(f"1/{round(1 / s)}: {sh:.1%}" for s, sh in zip(vt.sizes, vt.share, strict=True))
        + f"; mean offered work {vt.offered:.4g} servers",
        f"Algorithm 1 and M14 are deterministic on a fixed trace (their {spec.runs} runs coincide: "
        f"one is run); G16 {runs} run(s) with its own random stream, mean with a t-interval",
        "a trace replay is one finite sample path: the time-average queue over the window after "
        "its first quarter is reported whether or not the queue settles",
    ]
    if not vt.natural:
        notes.append(
            f"server counts: the paper's {paper_l[0]}..{paper_l[-1]} scaled so that "
            f"{FIG8_SERVERS[0]} stands for offered load {FIG8_TOP_LOAD} (INFERRED: the paper "
            "does not give its trace's load): loads "
            + ", ".join(f"{vt.offered / cluster_size(vt, n):.3g}" for n in paper_l)
        )
    return judged(figures, pts, fig8_judge, notes)


def fig8_judge(rows: Sequence[Point]) -> list[Claim]:
    at = {(r.series, r.x): r for r in rows}
    sizes = sorted({r.x for r in rows})
    small, large = sizes[0], sizes[-1]
    q = {k: v.mean for k, v in at.items()}
    names = [label(p) for p in POLICIES]
    alg, m14, g16 = names
    table = "; ".join(
        f"{n:g} servers: " + ", ".join(f"{p} {_fmt_trace(q[(p, n)])}" for p in names) for n in sizes
    )
    excess = {n: q[(m14, n)] - q[(alg, n)] for n in sizes}
    return [
        Claim(
            "'our algorithm has the best overall performance in the whole range of the number of "
            "servers' (§7.3): its mean queue at most 1.1 x the better of M14 and G16 at every "
            "size",
            all(q[(alg, n)] <= 1.1 * min(q[(m14, n)], q[(g16, n)]) for n in sizes),
            table,
        ),
        Claim(
            "'The performance of G16 deteriorates as the number of servers scales up' (§7.3): "
            f"its mean queue at {large:g} servers at least its mean queue at {small:g}",
            q[(g16, large)] >= q[(g16, small)],
            f"G16 {_fmt_trace(q[(g16, small)])} at {small:g}, {_fmt_trace(q[(g16, large)])} at "
            f"{large:g} servers",
        ),
        Claim(
            "'... while the performance of M14 deteriorates as the number of servers scales "
            f"down' (§7.3): its excess over Algorithm 1's mean queue larger at {small:g} than "
            f"at {large:g} servers",
            excess[small] > excess[large],
            f"M14 - Algorithm 1: {_fmt_trace(excess[small])} at {small:g}, "
            f"{_fmt_trace(excess[large])} at {large:g} servers",
        ),
    ]


def _trace_queue(record: dict[str, Any]) -> float:
    v = record.get("mean_number_in_queue")
    return math.nan if v is None else float(v)


def _fmt_trace(value: float) -> str:
    return "unstable" if math.isnan(value) else f"{value:.4g}"


def _fig3_notes(_ctx: Context, _arrivals: float, runs: Runs) -> list[str]:
    return [_runs_note(runs)]


def _fig4_notes(_ctx: Context, arrivals: float, runs: Runs) -> list[str]:
    return [
        f"{arrivals} arrivals per run; " + _runs_note(runs),
        "G16 = f(x) = log(1 + x) (sampling rate 1 + Q_j), the default of policy g16; "
        "f = loglog samples at rate log(e + Q_j); docs/vm-scheduling.md 'G16 on Example 2' "
        "has both at paper scale and 5x longer",
    ]


QUEUE_OVER_TIME = Plot(x="time (mean service times)", y="total queue size (jobs)", hue="algorithm")
FIG3 = Timeline(
    figure=Figure(
        "psychas2018-fig3",
        "psychas2018",
        "Fig. 3",
        "M14 unstable, Algorithm 1 stable (Example 1)",
        "paper: 400,000 arrivals per policy; --quick: 40,000",
    ),
    example=example1_spec,
    series=(Series("vm-stalling"), Series("m14")),
    length=400_000,
    quick_length=40_000,
    title="psychas2018 Fig. 3 (Example 1): capacity 6, sizes 4 and 1, zeta = 0.89",
    plot=QUEUE_OVER_TIME,
    notes=_fig3_notes,
    judge=fig3_judge,
    computed=_example1_scaling,
)
FIG4 = Timeline(
    figure=Figure(
        "psychas2018-fig4",
        "psychas2018",
        "Fig. 4",
        "G16's queue far above Algorithm 1's (Example 2)",
        "paper: 200,000 arrivals per policy; --quick: 20,000",
    ),
    example=example2_spec,
    series=(
        Series("vm-stalling"),
        Series("m14"),
        *(Series("g16", {"f": f}, _g16_suffix(f)) for f in G16_F),
    ),
    length=200_000,
    quick_length=20_000,
    title="psychas2018 Fig. 4 (Example 2): servers and VMs of 1, 2, 4, 8 units, zeta = 0.89",
    plot=replace(QUEUE_OVER_TIME, logy=True),
    notes=_fig4_notes,
    judge=fig4_judge,
)
FIG5 = Table1Figure(
    figure=Figure(
        "psychas2018-fig5",
        "psychas2018",
        "Fig. 5",
        "mean queue vs number of servers (Table 1 types)",
        "paper: 20..200 servers, 5 runs of 100,000 arrivals; --quick: 3 sizes, 3 runs",
    ),
    xs=FIG5_SERVERS,
    quick_xs=FIG5_QUICK_SERVERS,
    spec_of=lambda p, n, arrivals, lognormal: table1_spec(p, n, ZETA, arrivals, lognormal),
    x="number of servers",
    title="psychas2018 Fig. 5: Table 1 types, zeta = 0.89",
    notes=_fig5_notes,
    judge=fig5_judge,
)
FIG6 = Table1Figure(
    figure=Figure(
        "psychas2018-fig6",
        "psychas2018",
        "Fig. 6",
        "mean queue vs traffic intensity, 20 servers",
        "paper: zeta 0.80..0.95, 5 runs of 100,000 arrivals; --quick: 3 values, 3 runs",
    ),
    xs=FIG6_ZETAS,
    quick_xs=FIG6_QUICK_ZETAS,
    spec_of=lambda p, z, arrivals, lognormal: table1_spec(
        p, 20, z, arrivals, lognormal, **({"beta_bar": 0.98} if p == "vm-stalling" else {})
    ),
    x="traffic intensity zeta",
    title="psychas2018 Fig. 6: 20 servers, Table 1 types, beta_bar = 0.98",
    notes=lambda sweep, zetas: [f"{sweep.replications} runs per point"],
    judge=fig6_judge,
)
register_figure(FIG3.figure, FIG3, run_timeline)
register_figure(FIG4.figure, FIG4, run_timeline)
register_figure(FIG5.figure, FIG5, run_table1)
register_figure(FIG6.figure, FIG6, run_table1)

FIG7 = TraceCounts(
    figure=Figure(
        "psychas2018-fig7",
        "psychas2018",
        "Fig. 7",
        "trace: arrivals per 20-minute window",
        f"window of {TRACE_JOBS:,} arrivals (also with --quick: no simulation)",
        (ALIBABA,),
    ),
    jobs=TRACE_JOBS,
    window=FIG7_WINDOW_S,
    title="psychas2018 Fig. 7: arrivals per 20 minutes",
    plot=Plot(x="time (hours)", y="arrivals per 20-minute window (jobs)", hue="trace"),
)
FIG8 = TraceReplay(
    figure=Figure(
        "psychas2018-fig8",
        "psychas2018",
        "Fig. 8",
        "trace: mean queue vs number of servers",
        f"window of {TRACE_JOBS:,} arrivals, {FIG8_SERVERS[0]}..{FIG8_SERVERS[-1]} servers "
        f"(scaled on a stand-in trace), G16 {FIG8_RUNS} runs; --quick: the same window, "
        f"{len(FIG8_QUICK_SERVERS)} cluster sizes, 1 G16 run",
        (ALIBABA,),
    ),
    jobs=TRACE_JOBS,
    servers=FIG8_SERVERS,
    quick_servers=FIG8_QUICK_SERVERS,
    deterministic=("vm-stalling", "m14"),
    randomized=("g16",),
    runs=FIG8_RUNS,
    title="psychas2018 Fig. 8: trace replay",
    plot=Plot(x="number of servers", y="mean queue size (jobs)", hue="algorithm", logy=True),
)
register_figure(FIG7.figure, FIG7, run_fig7)
register_figure(FIG8.figure, FIG8, run_fig8)
