"""psychas2018 (Psychas & Ghaderi, "On Non-Preemptive VM Scheduling in the Cloud", POMACS 2018,
psychas2018): Figs 3-6 of §7.

* Fig. 3 (Example 1, §7.1): one server of capacity 6, VM types of size 4 and 1, the small type
  arriving 8 times as often, traffic intensity zeta = 0.89 (workload 0.89 (0.5, 4)): M14's total
  queue grows, Algorithm 1's stays bounded.
* Fig. 4 (Example 2, §7.1): servers of 1, 2, 4, 8 units, VM types of 1, 2, 4, 8 units, equal
  rates, zeta = 0.89: G16's queue far above Algorithm 1's.
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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from schedlab.engine.metrics import t_interval
from schedlab.experiments.stats import summarize
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.optim.vm_capacity import ServerType, max_scaling
from schedlab.report.figures import Point, line_plot
from schedlab.reproduce.ordering import ABOVE, compare
from schedlab.reproduce.psychas2019 import LongRun, run_long
from schedlab.reproduce.registry import Claim, Context, Outcome, Reproduction, label, register
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


def example2_spec(policy: str, arrivals: int) -> SimulationSpec:
    return vm_spec(
        sizes=[1.0, 2.0, 4.0, 8.0],
        probabilities=[0.25] * 4,
        servers=[(1, c) for c in (1.0, 2.0, 4.0, 8.0)],
        zeta=ZETA,
        policy=policy,
        arrivals=arrivals,
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


def _series(run: LongRun, samples: int = 400) -> list[Point]:
    idx = np.unique(np.linspace(0, run.time.size - 1, min(samples, run.time.size)).astype(int))
    return [
        Point(label(run.policy), float(run.time[i]), float(run.queue[i]), math.nan, math.nan)
        for i in idx
    ]


def _no_extras(_result: Any) -> dict[str, Any]:
    return {}


# ------------------------------------------------------------------------------- Figs 3, 4


def run_fig3(ctx: Context) -> Outcome:
    arrivals = 40_000 if ctx.quick else 400_000
    runs = {
        p: run_long(ctx, example1_spec(p, arrivals), _no_extras) for p in ("vm-stalling", "m14")
    }
    figures = line_plot(
        [pt for r in runs.values() for pt in _series(r)],
        ctx.out / "psychas2018_fig3",
        x="time (mean service times)",
        y="total queue size",
        hue="algorithm",
        title="psychas2018 Fig. 3 (Example 1): capacity 6, sizes 4 and 1, zeta = 0.89",
    )
    s = max_scaling([[4.0], [1.0]], [ServerType(1, (6.0,))], [0.5, 4.0]).max_scaling
    alg, m14 = runs["vm-stalling"], runs["m14"]
    claims = [
        Claim(
            "the workload 0.89 (0.5, 4) has traffic intensity 0.89: (0.5, 4) is on the boundary "
            "of C (the average of the maximal configurations (1,2) and (0,6))",
            abs(s - 1.0) < 1e-9,
            f"capacity LP (eq. (2)): largest scaling of (0.5, 4) in C = {s:.9g}",
        ),
        Claim(
            "M14 (MaxWeight at local refresh times) is unstable: its total queue grows",
            (not m14.stable) and m14.slope() > 0,
            f"{arrivals} arrivals: instability flag: {m14.instability or 'none'}; growth over "
            f"the second half {m14.slope():.3g} jobs per unit time; final queue "
            f"{m14.queue[-1]:.0f}",
        ),
        Claim(
            "Algorithm 1 keeps the queues bounded",
            alg.stable and alg.queue[len(alg.queue) // 2 :].max() < 0.1 * m14.queue[-1],
            f"stable={alg.stable}, mean queue {alg.mean_queue:.3g}, max over the second half "
            f"{alg.queue[len(alg.queue) // 2 :].max():.0f}, growth {alg.slope():.2g} jobs per "
            "unit time",
        ),
    ]
    return Outcome(figures, claims, [f"{label(p)}: {r.seconds:.1f} s" for p, r in runs.items()])


def run_fig4(ctx: Context) -> Outcome:
    arrivals = 20_000 if ctx.quick else 200_000
    runs = {p: run_long(ctx, example2_spec(p, arrivals), _no_extras) for p in POLICIES}
    figures = line_plot(
        [pt for r in runs.values() for pt in _series(r)],
        ctx.out / "psychas2018_fig4",
        x="time (mean service times)",
        y="total queue size",
        hue="algorithm",
        title="psychas2018 Fig. 4 (Example 2): servers and VMs of 1, 2, 4, 8 units, zeta = 0.89",
        logy=True,
    )
    alg, g16 = runs["vm-stalling"], runs["g16"]
    claims = [
        Claim(
            "G16's queue is far above Algorithm 1's (taken as: time-average at least 5 times, "
            "or G16 flagged unstable while Algorithm 1 is stable)",
            alg.stable and (not g16.stable or g16.mean_queue > 5 * alg.mean_queue),
            f"time-average total queue after the first quarter: G16 {g16.mean_queue:.4g} "
            f"(stable={g16.stable}: {g16.instability or 'no growth'}), Algorithm 1 "
            f"{alg.mean_queue:.4g} (stable={alg.stable}), M14 {runs['m14'].mean_queue:.4g}",
        ),
        Claim(
            "Algorithm 1 is stable in Example 2",
            alg.stable,
            f"instability flag: {alg.instability or 'none'}",
        ),
    ]
    return Outcome(figures, claims, [f"{label(p)}: {r.seconds:.1f} s" for p, r in runs.items()])


# ------------------------------------------------------------------------------- Figs 5, 6


def _sweep(ctx: Context, specs: dict[tuple, SimulationSpec], reps: int, name: str):
    """One point per spec, and the number of its replications flagged unstable."""
    keys = list(specs)
    records = ctx.run([specs[k] for k in keys], replications=reps, experiment=name)
    points: dict[tuple, Point] = {}
    unstable: dict[tuple, int] = {}
    for key, recs in zip(keys, records, strict=True):
        stat = summarize(recs, by=["policy"], metric="mean_number_in_queue")[0]
        policy, x, arrival = key
        points[key] = Point(
            f"{label(policy)} ({arrival})", x, stat.mean, stat.lo, stat.hi, stat.stable
        )
        unstable[key] = sum(not r.get("stable", True) for r in recs)
    return points, unstable


def m14_trap(servers: int, zeta: float = ZETA) -> str:
    """Why M14 can freeze on Table 1 (the local-refresh failure of Example 1, §7.1).

    Every maximal configuration of Table 1 holds at least ``k_min`` high-memory VMs, so while the
    high-memory queue is backlogged every server keeps refilling those slots and none empties:
    M14 never takes a new configuration again. The frozen mix serves the high-memory type at
    most at rate k_min L + (k_max - k_min) n_max (n_max servers in a configuration with the
    most high-memory slots); below the offered load the queue grows for ever."""
    w = np.array(list(TABLE1.values()))
    total = sum(TABLE1_RATES)
    d = np.array(TABLE1_RATES) / total
    scaling = max_scaling(w, [ServerType(1, TABLE1_SERVER)], d)
    b = int(np.argmax(TABLE1_RATES))
    k = scaling.configurations[0][:, b]
    load = zeta * scaling.max_scaling * d[b] * servers
    need = math.ceil((load - k.min() * servers) / (k.max() - k.min()) - 1e-9)
    return (
        f"every maximal configuration of Table 1 holds >= {k.min()} high-memory VMs, so with a "
        f"backlogged high-memory queue no server empties and M14's configurations freeze; at "
        f"{servers} servers the frozen mix must have >= {need} servers with {k.max()} "
        f"high-memory slots to serve its load {load:.4g}, else the queue grows for ever"
    )


@dataclass(frozen=True)
class Table1Sweep:
    """Every policy at every x, under Poisson and log-normal arrivals (Figs. 5 and 6)."""

    points: dict[tuple, Point]  # (policy, x, arrivals) -> mean queue size
    unstable: dict[tuple, int]  # (policy, x, arrivals) -> replications flagged unstable
    replications: int
    figures: list[Path]
    claims: list[Claim]  # how the queues scale with x (_scaling_claims)


def _table1_sweep(
    ctx: Context,
    name: str,
    xs: tuple,
    spec_of: Callable[[str, Any, int, bool], SimulationSpec],
    *,
    x: str,
    what: str,
    title: str,
) -> Table1Sweep:
    """Run ``spec_of(policy, x, arrivals, lognormal)`` for every policy, x and arrival process,
    plot the mean queue size against x (log scale) and check how it scales with x."""
    arrivals = QUICK_ARRIVALS if ctx.quick else ARRIVALS
    reps = 3 if ctx.quick else 5
    specs = {
        (p, v, a): spec_of(p, v, arrivals, a == "log-normal")
        for p in POLICIES
        for v in xs
        for a in ("Poisson", "log-normal")
    }
    pts, unstable = _sweep(ctx, specs, reps, name)
    figures = line_plot(
        list(pts.values()),
        ctx.out / name.replace("-", "_"),
        x=x,
        y="mean queue size",
        hue="algorithm (arrivals)",
        title=title,
        logy=True,
    )
    return Table1Sweep(pts, unstable, reps, figures, _scaling_claims(pts, xs, what))


def run_fig5(ctx: Context) -> Outcome:
    servers = FIG5_QUICK_SERVERS if ctx.quick else FIG5_SERVERS
    sweep = _table1_sweep(
        ctx,
        "psychas2018-fig5",
        servers,
        lambda p, n, arrivals, lognormal: table1_spec(p, n, ZETA, arrivals, lognormal),
        x="number of servers",
        what="servers",
        title="psychas2018 Fig. 5: Table 1 types, zeta = 0.89",
    )
    pts, unstable, reps, claims = sweep.points, sweep.unstable, sweep.replications, sweep.claims
    small, rest = servers[0], servers[1:]
    for a in ("Poisson", "log-normal"):
        pairs = {n: (pts[("vm-stalling", n, a)], pts[("m14", n, a)]) for n in rest}
        claims.append(
            Claim(
                f"Algorithm 1 and M14 behave similarly above {small} servers ({a} arrivals; "
                "taken as: both stable, mean queues within a factor 2 or 95% intervals "
                "overlapping)",
                all(_similar(*pair) for pair in pairs.values()),
                "; ".join(f"{n}: Alg. 1 {_fmt(p)}, M14 {_fmt(m)}" for n, (p, m) in pairs.items()),
            )
        )
        alg, m14 = pts[("vm-stalling", small, a)], pts[("m14", small, a)]
        claims.append(
            Claim(
                f"... and at {small} servers too, as the paper's Fig. 5 shows ({a} arrivals)",
                _similar(alg, m14),
                f"Alg. 1 {_fmt(alg)}, M14 {_fmt(m14)} ({unstable[('m14', small, a)]} of {reps} "
                "M14 runs flagged unstable); " + m14_trap(small),
            )
        )
    return Outcome(sweep.figures, claims, [])


def _similar(p: Point, m: Point) -> bool:
    """Both stable, and mean queues within a factor 2 or not told apart (95% intervals
    overlap)."""
    close = 0.5 * m.mean <= p.mean <= 2 * m.mean
    return p.stable and m.stable and (close or (p.lo <= m.hi and m.lo <= p.hi))


def run_fig6(ctx: Context) -> Outcome:
    zetas = FIG6_QUICK_ZETAS if ctx.quick else FIG6_ZETAS
    sweep = _table1_sweep(
        ctx,
        "psychas2018-fig6",
        zetas,
        lambda p, z, arrivals, lognormal: table1_spec(
            p, 20, z, arrivals, lognormal, **({"beta_bar": 0.98} if p == "vm-stalling" else {})
        ),
        x="traffic intensity zeta",
        what="zeta",
        title="psychas2018 Fig. 6: 20 servers, Table 1 types, beta_bar = 0.98",
    )
    pts, claims = sweep.points, sweep.claims
    for a in ("Poisson", "log-normal"):
        hi, lo = zetas[-1], zetas[0]
        claims.append(
            Claim(
                f"M14 deteriorates at high traffic: above Algorithm 1 at zeta = {hi} ({a})",
                _above(pts[("m14", hi, a)], pts[("vm-stalling", hi, a)]),
                f"M14 {_fmt(pts[('m14', hi, a)])}, Algorithm 1 {_fmt(pts[('vm-stalling', hi, a)])}",
            )
        )
        claims.append(
            Claim(
                f"G16 deteriorates at low traffic: above Algorithm 1 at zeta = {lo} ({a})",
                _above(pts[("g16", lo, a)], pts[("vm-stalling", lo, a)]),
                f"G16 {_fmt(pts[('g16', lo, a)])}, Algorithm 1 {_fmt(pts[('vm-stalling', lo, a)])}",
            )
        )
    return Outcome(sweep.figures, claims, [])


def _fmt(p: Point) -> str:
    if not p.stable:
        return "unstable"
    return f"{p.mean:.3g} [{p.lo:.3g}, {p.hi:.3g}]"


def _above(p: Point, q: Point) -> bool:
    """p clearly above q (:func:`compare`): p unstable while q is stable, or 95% intervals
    apart; two unstable runs are not ordered."""
    return compare(p, q).order == ABOVE


def _scaling_claims(pts: dict[tuple, Point], xs, what: str) -> list[Claim]:
    claims = []
    for a in ("Poisson", "log-normal"):
        alg = [pts[("vm-stalling", x, a)] for x in xs]
        g16 = [pts[("g16", x, a)] for x in xs]
        claims.append(
            Claim(
                f"Algorithm 1 is stable at every {what} and below G16 ({a} arrivals)",
                all(p.stable for p in alg)
                and all(_above(g, p) for g, p in zip(g16, alg, strict=True)),
                "; ".join(
                    f"{x}: Alg. 1 {_fmt(p)}, G16 {_fmt(g)}"
                    for x, p, g in zip(xs, alg, g16, strict=True)
                ),
            )
        )
    return claims


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


def run_fig7(ctx: Context) -> Outcome:
    vt = vm_trace(ctx.out, TRACE_JOBS)  # no simulation: the paper's window in both variants
    n_full = max(int(vt.arrival[-1] // FIG7_WINDOW_S), 1)  # windows inside the trace window
    edges = np.arange(n_full + 1) * FIG7_WINDOW_S
    full = np.histogram(vt.arrival, bins=edges)[0]
    points = [
        Point("arrivals", float(h), float(n), math.nan, math.nan)
        for h, n in zip(edges[:-1] / 3600.0, full, strict=True)
    ]
    figures = line_plot(
        points,
        ctx.out / "psychas2018_fig7",
        x="time (hours)",
        y="arrivals per 20-minute window",
        hue="trace",
        title=f"psychas2018 Fig. 7: arrivals per 20 minutes, {vt.label}",
    )
    dispersion = float(full.var(ddof=1) / full.mean()) if full.size > 1 else math.nan
    p_value = (
        float(stats.chi2.sf(dispersion * (full.size - 1), full.size - 1))
        if full.size > 1
        else math.nan
    )
    claims = [
        Claim(
            "the traffic is variable, not Poisson (taken as: counts per 20-minute window "
            "over-dispersed, chi-square dispersion test p < 0.01)",
            full.size > 1 and p_value < 0.01,
            f"{full.size} full windows, counts {full.min():,} to {full.max():,}; variance/mean "
            f"{dispersion:.4g} (1 for Poisson), p = {p_value:.3g}",
        )
    ]
    notes = [
        f"trace: {vt.label}; {vt.arrival.size:,} arrivals over {vt.arrival[-1] / 3600:.3g} hours"
    ]
    return Outcome(figures, claims, notes)


def run_fig8(ctx: Context) -> Outcome:
    vt = vm_trace(ctx.out, TRACE_JOBS)
    paper_l = FIG8_QUICK_SERVERS if ctx.quick else FIG8_SERVERS
    runs = 1 if ctx.quick else FIG8_RUNS
    deterministic = ("vm-stalling", "m14")
    grid = [(p, n) for n in paper_l for p in deterministic]
    records = ctx.run(
        [trace_spec(vt, cluster_size(vt, n), p) for p, n in grid], experiment="psychas2018-fig8"
    )
    g16 = ctx.run(
        [trace_spec(vt, cluster_size(vt, n), "g16") for n in paper_l],
        replications=runs,
        experiment="psychas2018-fig8",
    )
    grid += [("g16", n) for n in paper_l]
    pts: dict[tuple[str, int], Point] = {}
    for (policy, n), recs in zip(grid, records + g16, strict=True):
        values = np.array([_trace_queue(r) for r in recs])
        lo, hi = (math.nan, math.nan)
        if values.size > 1:
            est = t_interval(float(values.mean()), values)
            lo, hi = est.ci95
        mean = float(values.mean())
        pts[(policy, n)] = Point(
            label(policy), float(cluster_size(vt, n)), mean, lo, hi, stable=not math.isnan(mean)
        )
    figures = line_plot(
        list(pts.values()),
        ctx.out / "psychas2018_fig8",
        x="number of servers" + ("" if vt.natural else " (stand-in trace)"),
        y="mean queue size",
        hue="algorithm",
        title="psychas2018 Fig. 8: trace replay, " + vt.label,
        logy=True,
    )
    q = {k: v.mean for k, v in pts.items()}
    table = "; ".join(
        f"{n} ({cluster_size(vt, n)} servers): "
        + ", ".join(f"{label(p)} {_fmt_trace(q[(p, n)])}" for p in POLICIES)
        for n in paper_l
    )
    small, large = paper_l[0], paper_l[-1]
    claims = [
        Claim(
            "Algorithm 1 has the best overall performance at every number of servers (taken as: "
            "its mean queue at most 1.1 x the better of M14 and G16)",
            all(q[("vm-stalling", n)] <= 1.1 * min(q[("m14", n)], q[("g16", n)]) for n in paper_l),
            table,
        ),
        Claim(
            "G16 deteriorates as the number of servers scales up (taken as: its mean queue at "
            f"{cluster_size(vt, large)} servers at least its mean queue at "
            f"{cluster_size(vt, small)})",
            q[("g16", large)] >= q[("g16", small)],
            f"G16 {_fmt_trace(q[('g16', small)])} at {cluster_size(vt, small)}, "
            f"{_fmt_trace(q[('g16', large)])} at {cluster_size(vt, large)} servers",
        ),
        Claim(
            "M14 deteriorates as the number of servers scales down (taken as: its excess over "
            f"Algorithm 1's mean queue is larger at {cluster_size(vt, small)} than at "
            f"{cluster_size(vt, large)} servers)",
            _excess(q, "m14", small) > _excess(q, "m14", large),
            f"M14 - Algorithm 1: {_fmt_trace(_excess(q, 'm14', small))} at "
            f"{cluster_size(vt, small)}, {_fmt_trace(_excess(q, 'm14', large))} at "
            f"{cluster_size(vt, large)} servers",
        ),
    ]
    notes = [
        f"trace: {vt.label}; {vt.arrival.size:,} arrivals; types (sizes) "
        + ", ".join(f"1/{round(1 / s)}: {sh:.1%}" for s, sh in zip(vt.sizes, vt.share, strict=True))
        + f"; mean offered work {vt.offered:.4g} servers",
        "Algorithm 1 and M14 are deterministic on a fixed trace (their 3 runs coincide: one is "
        f"run); G16 {runs} run(s) with its own random stream, mean with a t-interval",
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
    return Outcome(figures, claims, notes)


def _trace_queue(record: dict[str, Any]) -> float:
    v = record.get("mean_number_in_queue")
    return math.nan if v is None else float(v)


def _fmt_trace(value: float) -> str:
    return "unstable" if math.isnan(value) else f"{value:.4g}"


def _excess(q: dict[tuple[str, int], float], policy: str, n: int) -> float:
    return q[(policy, n)] - q[("vm-stalling", n)]


for _name_, _fig, _run, _title, _scale, _data in (
    (
        "psychas2018-fig3",
        "Fig. 3",
        run_fig3,
        "M14 unstable, Algorithm 1 stable (Example 1)",
        "paper: 400,000 arrivals per policy; --quick: 40,000",
        (),
    ),
    (
        "psychas2018-fig4",
        "Fig. 4",
        run_fig4,
        "G16's queue far above Algorithm 1's (Example 2)",
        "paper: 200,000 arrivals per policy; --quick: 20,000",
        (),
    ),
    (
        "psychas2018-fig5",
        "Fig. 5",
        run_fig5,
        "mean queue vs number of servers (Table 1 types)",
        "paper: 20..200 servers, 5 runs of 100,000 arrivals; --quick: 3 sizes, 3 runs",
        (),
    ),
    (
        "psychas2018-fig6",
        "Fig. 6",
        run_fig6,
        "mean queue vs traffic intensity, 20 servers",
        "paper: zeta 0.80..0.95, 5 runs of 100,000 arrivals; --quick: 3 values, 3 runs",
        (),
    ),
    (
        "psychas2018-fig7",
        "Fig. 7",
        run_fig7,
        "trace: arrivals per 20-minute window",
        f"window of {TRACE_JOBS:,} arrivals (also with --quick: no simulation)",
        (ALIBABA,),
    ),
    (
        "psychas2018-fig8",
        "Fig. 8",
        run_fig8,
        "trace: mean queue vs number of servers",
        f"window of {TRACE_JOBS:,} arrivals, {FIG8_SERVERS[0]}..{FIG8_SERVERS[-1]} servers "
        f"(scaled on a stand-in trace), G16 {FIG8_RUNS} runs; --quick: the same window, "
        f"{len(FIG8_QUICK_SERVERS)} cluster sizes, 1 G16 run",
        (ALIBABA,),
    ),
):
    register(
        Reproduction(
            name=_name_,
            paper="psychas2018",
            figure=_fig,
            title=_title,
            run=_run,
            scale=_scale,
            data=_data,
        )
    )
