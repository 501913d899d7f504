"""Policy plugins (issue 17 item 2): a policy defined in a file outside the package reaches the
CLI (``--plugin``), Python (``plugins=`` / ``schedlab.load_plugin``), sweep workers, and Numba's
on-disk cache; installed packages declare an entry point in the group ``schedlab.policies``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab._jit import kernel_cache_dir
from schedlab.cli import app
from schedlab.errors import PluginError
from schedlab.plugins import load_plugin
from schedlab.policies.registry import ENTRY_POINT_GROUP, get_policy, load_entry_points
from tests.helpers.specs import pooled_spec

SRC = str(Path(schedlab.__file__).resolve().parents[1])
runner = CliRunner()

# Last-come first-served with first-fit placement: non-preemptive, size-blind and
# work-conserving on one server, so its M/M/1 mean response time is FCFS's, 1 / (mu - lambda).
LCFS_PLUGIN = '''
"""A user's policy outside the package: LCFS first fit."""
import numpy as np

from schedlab.engine.actions import start
from schedlab.engine.constants import Q_TAIL
from schedlab.engine.loop import run_engine
from schedlab.policy_api import Policy, PolicyState, engine_sizes, first_fit, kernel, register

STATE = PolicyState("lcfs_plugin", [])


@kernel
def decide(st, ps):
    j = st.ctr[Q_TAIL]
    while j != -1:
        before = st.q_prev[j]
        s = first_fit(st, j, 1.0)
        if s >= 0:
            start(st, j, s, 1.0)
        j = before


@kernel
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def init(st, model, config):
    return STATE.allocate(engine_sizes(st), {})


register(Policy(name="lcfs-first-fit", family="pooled", families=("pooled", "packing"),
                title="LCFS first fit", paper="a test plugin", section="",
                summary="newest waiting job first", runner=run, state=STATE, init=init))
'''

ENTRY_POINT_MODULE = """
from schedlab.policies.packing import fifo_ff
from schedlab.policy_api import Policy, register

register(Policy(name="ep-fcfs", family="pooled", title="FCFS from an entry point",
                paper="a test entry point", section="", summary="FCFS from an installed package",
                runner=fifo_ff.run, state=fifo_ff.STATE, init=fifo_ff.init,
                config=fifo_ff.FifoFirstFitConfig))
"""


@pytest.fixture(autouse=True, scope="module")
def _registry(registry_restored):
    """Plugins register globally: this module's leave the registry as it was."""


def mm1(policy: str, arrivals: int = 40_000) -> dict:
    return pooled_spec(1, 0.5, policy=policy, arrivals=arrivals, seed=3)


@pytest.fixture(scope="module")
def plugin_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("user") / "lcfs_plugin.py"
    path.write_text(LCFS_PLUGIN)
    return path


def shell(*args: str, pythonpath: str = SRC) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "schedlab.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": pythonpath},
        timeout=600,
    )


def test_a_plugin_policy_runs_from_python_with_the_mm1_mean(plugin_file):
    result = schedlab.simulate(mm1("lcfs-first-fit"), plugins=[plugin_file])
    assert get_policy("lcfs-first-fit").about.reference == "a test plugin"
    assert result.stable
    assert result["mean_response_time"].covers(1 / (1 - 0.5), level=0.999)
    # compiled once, cached on disk next to the built-in policies' code
    cached = list(Path(kernel_cache_dir()).rglob("lcfs_plugin.*.nbi"))
    assert cached, "the plugin's compiled code is not in schedlab's Numba cache"
    assert load_plugin(plugin_file) == ["lcfs-first-fit"]  # loading again is a no-op


def test_a_plugin_policy_reaches_the_cli(plugin_file, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "[cluster]\nservers = 1\n[workload]\nload = 0.5\n[[workload.classes]]\nneed = 1\n"
        'duration = { dist = "exponential", mean = 1.0 }\n[policy]\nname = "lcfs-first-fit"\n'
        "[run]\narrivals = 40000\nseed = 3\n"
    )
    done = shell("simulate", spec, "--plugin", plugin_file, "--format", "json")
    assert done.returncode == 0, done.stderr
    in_process = schedlab.simulate(mm1("lcfs-first-fit"), plugins=[plugin_file])
    data = json.loads(done.stdout)
    assert data["policy"] == "lcfs-first-fit"
    assert data["metrics"]["mean_response_time"]["mean"] == in_process["mean_response_time"].mean
    listed = shell("policies", "--plugin", plugin_file, "--format", "json")
    assert "lcfs-first-fit" in [p["name"] for p in json.loads(listed.stdout)]
    without = shell("simulate", spec)
    assert without.returncode == 2
    assert "unknown policy 'lcfs-first-fit'" in without.stderr


def test_sweep_workers_load_the_plugin(plugin_file):
    experiment = {
        "name": "plugin-sweep",
        "base": mm1("lcfs-first-fit", arrivals=5000),
        "sweep": {"workload.load": [0.3, 0.5]},
        "variants": [
            {"label": "LCFS", "policy": {"name": "lcfs-first-fit"}},
            {"label": "FCFS", "policy": {"name": "fcfs"}},
        ],
    }
    parallel = schedlab.sweep(experiment, workers=2, plugins=[plugin_file])
    serial = schedlab.sweep(experiment, workers=1)
    assert {r["policy"] for r in parallel.rows} == {"lcfs-first-fit", "fcfs"}
    by_hash = {r["spec_hash"]: r["mean_response_time"] for r in serial.rows}
    assert {r["spec_hash"]: r["mean_response_time"] for r in parallel.rows} == by_hash


def test_compare_ranks_a_plugin_policy_beside_the_built_ins(plugin_file, tmp_path):
    """``schedlab compare SPEC --plugin FILE``: the plugin's policy is a candidate like a built-in
    one, its runs happen in the worker processes (2 workers), and it is ranked."""
    spec = tmp_path / "mm1.toml"
    spec.write_text(
        "[cluster]\nservers = 1\n[workload]\nload = 0.5\n[[workload.classes]]\nneed = 1\n"
        'duration = { dist = "exponential", mean = 1.0 }\n[policy]\nname = "fcfs"\n'
        "[run]\narrivals = 5000\nseed = 3\n"
    )
    args = ["compare", spec, "--loads", "0.5", "--replications", "2", "--format", "json"]
    args += ["--policy", "lcfs-first-fit", "--policy", "fcfs", "--out", tmp_path / "out"]
    done = shell(*args, "--workers", "2", "--plugin", plugin_file)
    assert done.returncode == 0, done.stderr
    ranked = {r["policy"] for r in json.loads(done.stdout)}
    assert {"lcfs-first-fit", "fcfs"} <= ranked
    without = shell(*args[:-2], "--out", tmp_path / "out2")
    assert without.returncode == 2 and "lcfs-first-fit" in without.stderr


def test_a_plugins_first_run_times_its_loop_after_compiling(tmp_path, monkeypatch):
    """The loop's time, from which the printed events/s comes, starts once the plugin's runner is
    compiled: a first run showed "0.01 M events/s", the compile counted in the loop. A plugin of
    its own (a name no other test compiles in this process) is compiled before the timed steps."""
    from schedlab.simulation import simulate as simulation

    path = tmp_path / "lcfs_first_run.py"
    path.write_text(LCFS_PLUGIN.replace("lcfs-first-fit", "lcfs-first-run"))
    timed = simulation.steps
    compiled_at_start = []

    def steps(run, *args, **kwargs):
        compiled_at_start.append(len(run.model.policy.kernels.runner.overloads))
        return timed(run, *args, **kwargs)

    monkeypatch.setattr(simulation, "steps", steps)
    schedlab.simulate(mm1("lcfs-first-run", arrivals=2000), plugins=[path])
    assert compiled_at_start == [1]


def test_plugin_spec_validation_is_the_built_in_one(plugin_file):
    load_plugin(plugin_file)
    spec = mm1("lcfs-first-fit")
    spec["policy"]["blocking"] = True
    with pytest.raises(schedlab.errors.SpecError, match="blocking"):
        schedlab.simulate(spec)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def broken(:\n", "bad_plugin.py:1: SyntaxError: invalid syntax"),
        ("import numpy\nraise RuntimeError('no licence')\n", "bad_plugin.py:2: RuntimeError"),
        (
            "from schedlab.policy_api import register\n"
            "from schedlab.policies.registry import get_policy\n"
            "register(get_policy('fcfs'))\n",
            "registered twice",
        ),
        (
            "from schedlab.policies.contract import Policy\n",  # policy API v1's import path
            "bad_plugin.py:1: ModuleNotFoundError: No module named 'schedlab.policies.contract'; "
            "a policy imports it from schedlab.policy_api",
        ),
    ],
)
def test_a_broken_plugin_is_one_line(tmp_path, source, message):
    path = tmp_path / "bad_plugin.py"
    path.write_text(source)
    with pytest.raises(PluginError, match=message.replace("(", r"\(")):
        load_plugin(path)
    result = runner.invoke(app, ["policies", "--plugin", str(path)])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    missing = runner.invoke(app, ["policies", "--plugin", str(tmp_path / "none.py")])
    assert missing.exit_code == 2 and "no such plugin file" in missing.output


@pytest.fixture()
def installed_package(tmp_path, monkeypatch) -> Path:
    """A package installed in tmp_path: a module and a dist-info declaring the entry point."""
    (tmp_path / "ep_policies.py").write_text(ENTRY_POINT_MODULE)
    info = tmp_path / "ep_policies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-policies\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nep-fcfs = ep_policies\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_an_entry_point_registers_its_policies(installed_package):
    assert "ep-fcfs" in load_entry_points()
    ep = schedlab.simulate(mm1("ep-fcfs", arrivals=5000))
    fcfs = schedlab.simulate(mm1("fcfs", arrivals=5000))
    assert ep["mean_response_time"] == fcfs["mean_response_time"]  # the same rule, same jobs
    done = shell(
        "policies", "--format", "json", pythonpath=os.pathsep.join([SRC, str(installed_package)])
    )
    assert done.returncode == 0, done.stderr
    assert "ep-fcfs" in [p["name"] for p in json.loads(done.stdout)]
