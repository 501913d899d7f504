"""`make run` / `schedlab demo`: ServerFilling vs FCFS, grosof2023's Fig. 2 setting, several loads.

Both policies see the same job sequence at each load (common random numbers). FCFS's exact
stability limit comes from its saturated system (schedlab.analysis.saturated), drawn on the plot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from schedlab.analysis.saturated import fcfs_saturated
from schedlab.api import simulate
from schedlab.model.spec import SimulationSpec, parse_spec, read_toml
from schedlab.report.figures import Point, line_plot
from schedlab.report.labels import policy_label
from schedlab.simulation.result import Result

DEMO_LOADS = (0.3, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
DEMO_POLICIES = ("server-filling", "fcfs")


def quickstart_spec() -> SimulationSpec:
    """The quickstart spec shipped with the package (grosof2023 Fig. 2 setting)."""
    path = resources.files("schedlab") / "examples" / "quickstart.toml"
    with resources.as_file(path) as p:
        data, source = read_toml(p)
    return parse_spec(data, source=source, file=str(p))


@dataclass(frozen=True)
class DemoRow:
    policy: str
    load: float
    result: Result


def run_demo(
    arrivals: int,
    loads: tuple[float, ...] = DEMO_LOADS,
    seed: int = 1,
    on_result: Callable[[DemoRow], None] | None = None,
) -> list[DemoRow]:
    base = quickstart_spec().model_dump(by_alias=True, exclude_unset=True)
    rows = []
    for load in loads:
        for policy in DEMO_POLICIES:
            data = {
                **base,
                "workload": {**base["workload"], "load": load},
                "policy": {"name": policy},
                "run": {**base["run"], "arrivals": arrivals, "seed": seed},
            }
            row = DemoRow(policy, load, simulate(parse_spec(data)))
            rows.append(row)
            if on_result is not None:
                on_result(row)
    return rows


def fcfs_limit() -> float:
    """FCFS's exact load limit in the demo setting (needs 1,2,4,8 equally likely, mean 1/need)."""
    return fcfs_saturated(8, [1, 2, 4, 8], [0.25] * 4, [1.0, 2.0, 4.0, 8.0]).load_limit


def plot_demo(rows: list[DemoRow], out: Path) -> list[Path]:
    points = []
    for r in rows:
        est = r.result["mean_response_time"]
        points.append(
            Point(
                series=r.policy,
                x=r.load,
                mean=est.mean,
                lo=est.ci95[0],
                hi=est.ci95[1],
                stable=r.result.stable,
                reliable="mean_response_time" not in r.result.unreliable,
            )
        )
    limit = fcfs_limit()
    return line_plot(
        points,
        out / "demo_response_time",
        x="load",
        y="mean_response_time",
        hue="policy",
        title="k = 8, needs uniform on {1,2,4,8}, exponential sizes (grosof2023 Fig. 2 setting)",
        logy=True,
        names={p: policy_label(p) for p in DEMO_POLICIES},
        vlines=[(limit, f"FCFS stability limit ρ* = {limit:.4f} (exact)")],
    )
