"""The Python API (issue 17 item 1, issue 12 item 5): sweeps as tables, short reprs, replications
in parallel with a correct interval, the docs notebook runs."""

from __future__ import annotations

import json
import math
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import schedlab
from schedlab.api import PANDAS_MISSING, UnknownName
from schedlab.experiments.runner import Task, estimated_cost
from schedlab.measurement.metrics import Estimate
from schedlab.model.spec import parse_spec
from schedlab.simulation.result import steady_state_only
from tests.helpers.specs import paper004_spec, pooled_spec

ROOT = Path(__file__).resolve().parents[1]


def experiment(replications: int = 3) -> dict:
    return {
        "name": "api",
        "replications": replications,
        "base": pooled_spec(4, 0.5, policy="server-filling", arrivals=3000, seed=5),
        "sweep": {"workload.load": [0.3, 0.6]},
        "variants": [
            {"label": "SF", "policy": {"name": "server-filling"}},
            {"label": "FCFS", "policy": {"name": "fcfs"}},
        ],
        "outputs": {"metrics": ["mean_response_time", "mean_number_in_system"]},
    }


@pytest.fixture(scope="module")
def swept():
    return schedlab.sweep(experiment(), workers=1)


def test_sweep_returns_every_run_and_a_summary_per_point(swept):
    assert len(swept) == 2 * 2 * 3
    assert swept.to_arrow().num_rows == 12
    assert swept.axes == ["variant", "workload.load"]
    summary = swept.summary().to_pylist()
    assert [(r["variant"], r["workload.load"]) for r in summary] == [
        ("FCFS", 0.3),
        ("FCFS", 0.6),
        ("SF", 0.3),
        ("SF", 0.6),
    ]
    # independent check: mean of the replication means, Student t with R - 1 degrees of freedom
    for point in summary:
        means = np.array(
            [
                r["mean_response_time"]
                for r in swept.rows
                if r["variant"] == point["variant"] and r["workload.load"] == point["workload.load"]
            ]
        )
        assert point["runs"] == means.size == 3
        half = stats.t.ppf(0.975, 2) * means.std(ddof=1) / math.sqrt(3)
        assert point["mean_response_time"] == pytest.approx(means.mean())
        assert point["mean_response_time_lo"] == pytest.approx(means.mean() - half)
        assert point["mean_response_time_hi"] == pytest.approx(means.mean() + half)


def test_unknown_metric_names_the_closest(swept):
    with pytest.raises(UnknownName, match="did you mean 'mean_response_time'"):
        swept.summary(["mean_respons_time"])


def test_sweep_reprs_are_short_and_html_is_a_table(swept):
    text = repr(swept)
    assert "\n" not in text and "12 runs at 4 points" in text
    page = swept._repr_html_()
    assert page.count("<tr>") == 5  # header + 4 points
    assert "mean_response_time" in page


def test_to_pandas_or_a_clear_message(swept, monkeypatch):
    pytest.importorskip("pandas")
    frame = swept.to_pandas()
    assert frame.shape[0] == 12
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ModuleNotFoundError) as missing:
        swept.to_pandas()
    assert str(missing.value) == PANDAS_MISSING


def test_stored_sweep_resumes(tmp_path):
    first = schedlab.sweep(experiment(1), workers=1, out=tmp_path / "res")
    again = schedlab.sweep(experiment(1), workers=1, out=tmp_path / "res")
    assert (first.ran, again.ran, again.cached) == (4, 0, 4)
    assert again.rows == first.rows
    saved = (tmp_path / "res" / "experiments" / "api.toml").read_text()
    assert tomllib.loads(saved) == experiment(1)  # kept as TOML, as `schedlab run` reads it


def test_estimate_and_result_reprs():
    est = Estimate(np.float64(1.6312), (np.float64(1.5712), np.float64(1.6912)), 19)
    assert repr(est) == "Estimate(mean=1.631, ci95=(1.571, 1.691))"
    result = schedlab.simulate(pooled_spec(2, 0.5, arrivals=3000))
    text = repr(result)
    assert "np.float64" not in text
    assert len(text.splitlines()) <= 6
    assert text.startswith("Result(policy='fcfs', family='pooled', load=0.5")
    assert "<table>" in result._repr_html_()


def test_parallel_replications_equal_serial_and_combine_with_t():
    spec = pooled_spec(4, 0.6, arrivals=4000, replications=4)
    serial = schedlab.simulate(spec)
    parallel = schedlab.simulate(spec, workers=2)
    means = np.array([r["mean_response_time"].mean for r in serial.replications])
    assert [r["mean_response_time"].mean for r in parallel.replications] == list(means)
    assert parallel["mean_response_time"] == serial["mean_response_time"]
    half = stats.t.ppf(0.975, 3) * means.std(ddof=1) / 2.0
    lo, hi = parallel["mean_response_time"].ci95
    assert (lo, hi) == pytest.approx((means.mean() - half, means.mean() + half))


def test_an_unstable_replication_makes_the_combined_estimate_nan():
    spec = paper004_spec(0.95, "fcfs", 30000, replications=2, allow_unstable=True)
    result = schedlab.simulate(spec, workers=2)
    assert not result.stable
    steady = [name for name in result.metrics if steady_state_only(name)]
    assert steady and all(math.isnan(result.metrics[name].mean) for name in steady)
    assert json.loads(json.dumps(result.to_dict()))["metrics"]["mean_response_time"]["mean"] is None


def test_longest_runs_are_ranked_first():
    def task(policy: str, arrivals: int, load: float) -> Task:
        spec = pooled_spec(8, load, policy=policy, arrivals=arrivals)
        return Task.of(parse_spec(spec))

    tasks = [
        task("server-filling", 1000, 0.5),
        task("server-filling", 10000, 0.5),
        task("server-filling-srpt", 1000, 0.5),
        task("server-filling", 1000, 0.9),
    ]
    order = sorted(range(4), key=lambda i: estimated_cost(tasks[i]), reverse=True)
    assert order == [1, 2, 3, 0]


def test_the_docs_notebook_runs_in_a_real_kernel(tmp_path):
    """docs/notebook.ipynb executed by nbclient in an IPython kernel, rich displays included
    (a sweep shown as HTML, an Estimate, a Result): no cell errors."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    notebook = nbformat.read(ROOT / "docs" / "notebook.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute()  # raises CellExecutionError naming the cell on any error
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html_shown = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<table>" in h and "mean [95% CI] per point" in h for h in html_shown)
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "mean_response_time" in printed


def _family_sweep(base: dict, metrics: list[str]) -> schedlab.SweepResults:
    return schedlab.sweep(
        {
            "name": "family",
            "replications": 2,
            "base": base,
            "outputs": {"metrics": metrics},
        },
        workers=1,
    )


def _small(example: str, arrivals: int) -> dict:
    spec = tomllib.loads((ROOT / "src" / "schedlab" / "examples" / example).read_text())
    spec["run"] = {**spec.get("run", {}), "arrivals": arrivals, "seed": 3}
    return spec


@pytest.mark.parametrize(
    ("example", "arrivals", "metric"),
    [
        ("quickstart.toml", 2000, "mean_response_time"),
        ("vm-batch.toml", 2000, "mean_number_in_system"),
        ("dra-worst-case.toml", 4000, "reward_rate"),
    ],
)
def test_html_repr_of_every_family_has_a_cell_per_point_and_metric(example, arrivals, metric):
    """Pooled, packing and loss sweeps display as HTML (the notebook's path); every summary row
    has the same columns, so no row lacks a reliability field the first one has."""
    res = _family_sweep(_small(example, arrivals), [metric])
    rows = res.summary_rows()
    assert len({tuple(r) for r in rows}) == 1 and f"{metric}_reliable" in rows[0]
    shown = res._repr_html_()
    assert shown.count("<tr>") == 1 + len(rows)  # header + one row per point
    assert f"<th>{metric}</th>" in shown


def test_html_repr_marks_an_unreliable_interval_per_metric():
    """A point whose interval is unreliable for one metric shows that metric as unreliable with
    the reason and no interval, and the other metric with its interval."""
    rows = [
        {"experiment": "x", "point": 0, "variant": "", "stable": True, "instability": "",
         "a": 1.0, "a_lo": 0.9, "a_hi": 1.1, "b": 2.0, "b_lo": -1.0, "b_hi": 5.0}
    ]  # fmt: skip
    res = schedlab.SweepResults("x", rows, ["a", "b"])
    summary = res.summary_rows()
    assert [r["a_reliable"] for r in summary] == [True]
    shown = res._repr_html_()
    assert "unreliable" in shown.split("<td>")[-1]  # b, the last cell
    assert "[" in shown.split("<td>")[-2]  # a keeps its interval


def test_a_dask_client_gives_the_serial_numbers(swept):
    from dask.distributed import Client, LocalCluster

    spec = pooled_spec(4, 0.6, arrivals=4000, replications=3)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        on_dask = schedlab.sweep(experiment(), client=client)
        replicated = schedlab.simulate(spec, client=client)
    assert {r["spec_hash"]: r["mean_response_time"] for r in on_dask.rows} == {
        r["spec_hash"]: r["mean_response_time"] for r in swept.rows
    }
    assert replicated["mean_response_time"] == schedlab.simulate(spec)["mean_response_time"]
