"""Issue 28 item 9: whatever a plugin policy asks of the engine, a run ends with a result or one
line, never a crash (an out-of-range ``start()`` segfaulted, exit 139) or a hang.

The plugin (tests/fixtures/plugins/fuzz_actions.py) draws random actions with random, partly
invalid job and server indices. Every case runs in one child process with a timeout, so a crash
fails the test with the seed of the case that crashed instead of killing pytest."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import schedlab
from schedlab.errors import InvariantViolation, PolicyError
from tests.helpers.specs import pooled_spec

PLUGIN = Path(__file__).parent / "fixtures" / "plugins" / "fuzz_actions.py"
SRC = str(Path(schedlab.__file__).resolve().parents[1])
CASES = 40

DRIVER = """
import json, sys
import schedlab
from schedlab.errors import SchedlabError
schedlab.load_plugin(sys.argv[1])
for case in json.loads(sys.argv[2]):
    print("case", json.dumps(case), flush=True)
    spec = {
        "cluster": {"servers": case["servers"]},
        "workload": {"load": 0.7, "classes": [
            {"probability": 0.5, "need": 1, "duration": {"dist": "exponential", "mean": 1.0}},
            {"probability": 0.5, "need": case["servers"],
             "duration": {"dist": "exponential", "mean": 0.5}}]},
        "policy": {"name": "fuzz-actions", "seed": case["seed"], "p_bad": case["p_bad"],
                   "p_out": case["p_out"]},
        "run": {"arrivals": 300, "seed": case["seed"], "check": case["check"]},
    }
    try:
        result = schedlab.simulate(spec)
        print("result", result.events, flush=True)
    except SchedlabError as exc:
        assert "\\n" not in str(exc), str(exc)
        print("error", type(exc).__name__, str(exc), flush=True)
print("done", flush=True)
"""


def test_random_plugin_actions_end_with_a_result_or_one_line():
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    cases = [
        {
            "seed": rng.randrange(2**31),
            "p_bad": rng.choice([0.0, 0.01, 0.1, 0.5, 1.0]),
            "p_out": rng.choice([0.0, 0.2, 1.0]),
            "check": rng.random() < 0.8,
            "servers": rng.choice([1, 2, 5]),
        }
        for _ in range(CASES)
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, str(PLUGIN), json.dumps(cases)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": SRC},
            timeout=300,
        )
    except subprocess.TimeoutExpired as exc:
        last = [ln for ln in (exc.stdout or b"").decode().splitlines() if ln.startswith("case")]
        pytest.fail(f"fuzz seed {seed}: hung at {last[-1:]}")
    lines = done.stdout.splitlines()
    last = [ln for ln in lines if ln.startswith("case")][-1:]
    assert done.returncode == 0, (
        f"fuzz seed {seed}: exit {done.returncode} at {last}\n{done.stderr}"
    )
    assert lines[-1] == "done", f"fuzz seed {seed}: {done.stderr}"
    outcomes = [ln.split()[0] for ln in lines if ln.split()[0] in ("result", "error")]
    assert len(outcomes) == CASES, f"fuzz seed {seed}"
    errors = [ln for ln in lines if ln.startswith("error")]
    assert all(ln.split()[1] == "InvariantViolation" for ln in errors), errors


@pytest.fixture(scope="module")
def fuzz_policy(registry_restored):
    """The fuzz plugin, registered for this module only (conftest's registry_restored)."""
    schedlab.load_plugin(PLUGIN)


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5, 6, 8])
def test_an_out_of_range_index_is_one_line_naming_policy_action_and_index(fuzz_policy, kind):
    actions = ("start", "preempt", "migrate", "reject", "set_allocation", "stall", "activate")
    action = (*actions, "wake_at", "kill")[kind]
    spec = pooled_spec(2, 0.5, policy="fuzz-actions", arrivals=200, seed=4)
    spec["policy"].update(p_bad=1.0, p_out=1.0, kind=kind)
    with pytest.raises(InvariantViolation) as caught:
        schedlab.simulate(spec)
    message = str(caught.value)
    assert message.startswith("policy 'fuzz-actions' broke the model at t = ")
    index = "server" if action in ("stall", "activate") else "job slot"
    assert f": {action} of {index} " in message and "which does not exist" in message
    assert "\n" not in message


def test_a_plugin_raising_while_deciding_is_one_line_naming_its_file_and_line(fuzz_policy):
    spec = pooled_spec(2, 0.5, policy="fuzz-actions", arrivals=200, seed=4)
    spec["policy"].update(p_bad=0.0, kind=7, raise_after=3)
    with pytest.raises(PolicyError) as caught:
        schedlab.simulate(spec)
    line = next(
        i for i, text in enumerate(PLUGIN.read_text().splitlines(), 1) if "gives up" in text
    )
    assert str(caught.value) == (
        f"policy 'fuzz-actions' ({PLUGIN}:{line}) raised ValueError: "
        "the fuzz policy gives up on purpose"
    )
