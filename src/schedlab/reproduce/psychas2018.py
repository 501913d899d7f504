"""Paper 001 (Psychas & Ghaderi, "On Non-Preemptive VM Scheduling in the Cloud", POMACS 2018,
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
from typing import Any

import numpy as np

from schedlab.experiments.stats import summarize
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.optim.vm_capacity import ServerType, max_scaling
from schedlab.report.figures import Point, line_plot
from schedlab.reproduce.psychas2019 import LongRun, run_long
from schedlab.reproduce.registry import Claim, Context, Outcome, Reproduction, register

SEED = 2018
ZETA = 0.89
NAMES = {"vm-stalling": "Algorithm 1", "m14": "M14", "g16": "G16"}
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


def _name(policy: str) -> str:
    return NAMES.get(policy, policy)


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
        Point(_name(run.policy), float(run.time[i]), float(run.queue[i]), math.nan, math.nan)
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
        title="Paper 001 Fig. 3 (Example 1): capacity 6, sizes 4 and 1, zeta = 0.89",
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
    return Outcome(figures, claims, [f"{_name(p)}: {r.seconds:.1f} s" for p, r in runs.items()])


def run_fig4(ctx: Context) -> Outcome:
    arrivals = 20_000 if ctx.quick else 200_000
    runs = {p: run_long(ctx, example2_spec(p, arrivals), _no_extras) for p in POLICIES}
    figures = line_plot(
        [pt for r in runs.values() for pt in _series(r)],
        ctx.out / "psychas2018_fig4",
        x="time (mean service times)",
        y="total queue size",
        hue="algorithm",
        title="Paper 001 Fig. 4 (Example 2): servers and VMs of 1, 2, 4, 8 units, zeta = 0.89",
        logy=True,
    )
    alg, g16 = runs["vm-stalling"], runs["g16"]
    claims = [
        Claim(
            "G16's queue is far above Algorithm 1's (taken as: time-average at least 5 times)",
            g16.mean_queue > 5 * alg.mean_queue,
            f"time-average total queue after the first quarter: G16 {g16.mean_queue:.4g} "
            f"(stable={g16.stable}), Algorithm 1 {alg.mean_queue:.4g} (stable={alg.stable}), "
            f"M14 {runs['m14'].mean_queue:.4g}",
        ),
        Claim(
            "Algorithm 1 is stable in Example 2",
            alg.stable,
            f"instability flag: {alg.instability or 'none'}",
        ),
    ]
    return Outcome(figures, claims, [f"{_name(p)}: {r.seconds:.1f} s" for p, r in runs.items()])


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
            f"{_name(policy)} ({arrival})", x, stat.mean, stat.lo, stat.hi, stat.stable
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


def run_fig5(ctx: Context) -> Outcome:
    servers = FIG5_QUICK_SERVERS if ctx.quick else FIG5_SERVERS
    arrivals = QUICK_ARRIVALS if ctx.quick else ARRIVALS
    reps = 3 if ctx.quick else 5
    specs = {
        (p, n, a): table1_spec(p, n, ZETA, arrivals, a == "log-normal")
        for p in POLICIES
        for n in servers
        for a in ("Poisson", "log-normal")
    }
    pts, unstable = _sweep(ctx, specs, reps, "psychas2018-fig5")
    figures = line_plot(
        list(pts.values()),
        ctx.out / "psychas2018_fig5",
        x="number of servers",
        y="mean queue size",
        hue="algorithm (arrivals)",
        title="Paper 001 Fig. 5: Table 1 types, zeta = 0.89",
        logy=True,
    )
    claims = _scaling_claims(pts, servers, "servers")
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
    return Outcome(figures, claims, [])


def _similar(p: Point, m: Point) -> bool:
    """Both stable, and mean queues within a factor 2 or not told apart (95% intervals
    overlap)."""
    close = 0.5 * m.mean <= p.mean <= 2 * m.mean
    return p.stable and m.stable and (close or (p.lo <= m.hi and m.lo <= p.hi))


def run_fig6(ctx: Context) -> Outcome:
    zetas = FIG6_QUICK_ZETAS if ctx.quick else FIG6_ZETAS
    arrivals = QUICK_ARRIVALS if ctx.quick else ARRIVALS
    reps = 3 if ctx.quick else 5
    specs = {
        (p, z, a): table1_spec(
            p,
            20,
            z,
            arrivals,
            a == "log-normal",
            **({"beta_bar": 0.98} if p == "vm-stalling" else {}),
        )
        for p in POLICIES
        for z in zetas
        for a in ("Poisson", "log-normal")
    }
    pts, _ = _sweep(ctx, specs, reps, "psychas2018-fig6")
    figures = line_plot(
        list(pts.values()),
        ctx.out / "psychas2018_fig6",
        x="traffic intensity zeta",
        y="mean queue size",
        hue="algorithm (arrivals)",
        title="Paper 001 Fig. 6: 20 servers, Table 1 types, beta_bar = 0.98",
        logy=True,
    )
    claims = _scaling_claims(pts, zetas, "zeta")
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
    return Outcome(figures, claims, [])


def _fmt(p: Point) -> str:
    if not p.stable:
        return "unstable"
    return f"{p.mean:.3g} [{p.lo:.3g}, {p.hi:.3g}]"


def _above(p: Point, q: Point) -> bool:
    """p clearly above q: p unstable while q is stable, or 95% intervals apart."""
    if not p.stable:
        return q.stable
    return q.stable and p.lo > q.hi


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


for _name_, _fig, _run, _title, _scale in (
    (
        "psychas2018-fig3",
        "Fig. 3",
        run_fig3,
        "M14 unstable, Algorithm 1 stable (Example 1)",
        "paper: 400,000 arrivals per policy; --quick: 40,000",
    ),
    (
        "psychas2018-fig4",
        "Fig. 4",
        run_fig4,
        "G16's queue far above Algorithm 1's (Example 2)",
        "paper: 200,000 arrivals per policy; --quick: 20,000",
    ),
    (
        "psychas2018-fig5",
        "Fig. 5",
        run_fig5,
        "mean queue vs number of servers (Table 1 types)",
        "paper: 20..200 servers, 5 runs of 100,000 arrivals; --quick: 3 sizes, 3 runs",
    ),
    (
        "psychas2018-fig6",
        "Fig. 6",
        run_fig6,
        "mean queue vs traffic intensity, 20 servers",
        "paper: zeta 0.80..0.95, 5 runs of 100,000 arrivals; --quick: 3 values, 3 runs",
    ),
):
    register(
        Reproduction(
            name=_name_, paper="psychas2018", figure=_fig, title=_title, run=_run, scale=_scale
        )
    )
