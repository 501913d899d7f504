"""Bad input gives one clear line naming the file/line/field, exit code 2, and no traceback."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app
from schedlab.errors import SpecError
from tests.helpers.specs import pooled_spec

QUICKSTART = (resources.files("schedlab") / "examples" / "quickstart.toml").read_text()
runner = CliRunner()


def run_cli(*args: str):
    return runner.invoke(app, list(args))


def expect_error(path: Path, *fragments: str) -> str:
    result = run_cli("simulate", "--spec", str(path))
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    for fragment in fragments:
        assert fragment in text, text
    return text


@pytest.mark.parametrize(
    ("old", "new", "fragments"),
    [
        ("load = 0.9", "load = 1.05", ["spec.toml:6", "workload.load", "--allow-unstable"]),
        ("load = 0.9", "rate = -3.0", ["spec.toml:6", "workload.rate", "greater than 0"]),
        ("need = 8", "need = 16", ["spec.toml:21", "workload.classes[3].need", "larger than"]),
        (
            'name = "server-filling"',
            'name = "server-filing"',
            ["policy.name", "did you mean 'server-filling'"],
        ),
        (
            "probability = 0.25               # size",
            "probabilty = 0.25 # size",
            ["spec.toml:8", "probabilty", "did you mean 'probability'"],
        ),
        ("[run]", "[run", ["spec.toml:25", "malformed TOML"]),
        ("mean = 0.5 }", "mean = -0.5 }", ["spec.toml:14", "duration.mean"]),
        (
            'dist = "exponential", mean = 0.25',
            'dist = "expo", mean = 0.25',
            ["workload.classes[2].duration", "unknown distribution 'expo'"],
        ),
        ("arrivals = 1_000_000", "arrivalz = 5", ["spec.toml:26", "run.arrivalz", "arrivals"]),
        ("need = 4", "need = 3", ["divisor-filling"]),
    ],
)
def test_spec_errors_through_the_cli(tmp_toml, old, new, fragments):
    assert old in QUICKSTART
    expect_error(tmp_toml(QUICKSTART.replace(old, new, 1)), *fragments)


def test_missing_file():
    result = run_cli("simulate", "--spec", "no/such/spec.toml")
    assert result.exit_code == 2
    assert "no/such/spec.toml: no such file" in result.output


def test_unstable_load_runs_with_flag(tmp_toml):
    path = tmp_toml(QUICKSTART.replace("load = 0.9", "load = 1.05"))
    result = run_cli(
        "simulate", "--spec", str(path), "--allow-unstable", "--arrivals", "60000", "--json"
    )
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(result.stdout)
    assert data["stable"] is False
    assert data["metrics"]["mean_response_time"] == {
        "mean": None,
        "ci95": [None, None],
        "reliable": False,
    }


def test_json_output_shape(tmp_toml):
    import json

    result = run_cli(
        "simulate", "--spec", str(tmp_toml(QUICKSTART)), "--arrivals", "20000", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"metrics", "stable", "events", "wall_s"} <= set(data)
    est = data["metrics"]["mean_response_time"]
    assert est["ci95"][0] <= est["mean"] <= est["ci95"][1]
    assert data["events"] == 40000  # every job arrives and completes


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s["cluster"].update(servers=0), "cluster.servers"),
        (lambda s: s["workload"]["classes"][0].update(need=0), "workload.classes[0].need"),
        (
            lambda s: s["workload"]["classes"][0].update(speedup="fast"),
            "workload.classes[0].speedup",
        ),
        (lambda s: s["workload"].update(rate=1.0), "workload"),
        (lambda s: s["run"].update(warmup=1.5), "run.warmup"),
        (lambda s: s.pop("policy"), "policy"),
        (lambda s: s["policy"].update(blocking="sometimes"), "policy.blocking"),
        (lambda s: s["policy"].update(colour=1), "policy.colour"),
    ],
)
def test_spec_errors_name_the_field(change, field):
    spec = pooled_spec(4, 0.5)
    change(spec)
    with pytest.raises(SpecError) as info:
        schedlab.simulate(spec)
    assert info.value.field == field, str(info.value)


def test_packing_demand_larger_than_every_server():
    spec = {
        "cluster": {
            "pools": [
                {"count": 2, "capacity": {"cpu": 1.0, "mem": 1.0}},
                {"count": 1, "capacity": {"cpu": 2.0, "mem": 0.5}},
            ]
        },
        "workload": {
            "load": 0.5,
            "classes": [{"demand": {"cpu": 1.5, "mem": 0.8}, "duration": 1.0}],
        },
        "policy": {"name": "fifo-ff"},
        "run": {"arrivals": 100},
    }
    with pytest.raises(SpecError, match="larger than every server") as info:
        schedlab.simulate(spec)
    assert info.value.field == "workload.classes[0].demand"


def test_packing_demand_sometimes_too_large_is_caught_per_job():
    spec = {
        "cluster": {"servers": 3, "capacity": 1.0},
        "workload": {
            "load": 0.5,
            "classes": [{"demand": {"dist": "uniform", "low": 0.5, "high": 1.5}, "duration": 1.0}],
        },
        "policy": {"name": "fifo-ff"},
        "run": {"arrivals": 100},
    }
    with pytest.raises(SpecError, match="more than any server offers"):
        schedlab.simulate(spec)


def test_unknown_resource_is_named():
    spec = {
        "cluster": {"servers": 2, "capacity": {"cpu": 1.0, "memory": 1.0}},
        "workload": {
            "load": 0.5,
            "classes": [{"demand": {"cpu": 0.5, "mem": 0.5}, "duration": 1.0}],
        },
        "policy": {"name": "fifo-ff"},
        "run": {"arrivals": 100},
    }
    with pytest.raises(SpecError, match="did you mean 'memory'") as info:
        schedlab.simulate(spec)
    assert info.value.field == "workload.classes[0].demand.mem"


def test_slotted_time_needs_whole_slot_durations():
    spec = pooled_spec(4, 0.5)
    spec["model"] = {"time": "slotted"}
    with pytest.raises(SpecError, match="whole-slot durations"):
        schedlab.simulate(spec)


def test_policy_in_the_wrong_family():
    spec = pooled_spec(4, 0.5, policy="server-filling")
    spec["model"] = {"family": "packing"}
    with pytest.raises(SpecError, match="serves the pooled family") as info:
        schedlab.simulate(spec)
    assert info.value.field == "model.family"
