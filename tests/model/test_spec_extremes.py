"""Issue 28 item 7: a value that passes validation never crashes the run. Every numeric field of
every example spec (found by walking the spec, not listed by hand), set to an extreme value TOML
can hold, gives either a one-line boundary error or a result: never a traceback, never a hang.

Each case runs in a forked process with a time limit (a hang inside compiled code cannot be
interrupted otherwise); the cases are derandomized, so a failure names its spec and value.
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import tomllib
import traceback
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SchedlabError

EXAMPLES = Path(schedlab.__file__).parent / "examples"
ARRIVALS = 300
TIMEOUT_S = 60.0

SLOTTED = {
    "cluster": {"servers": 2, "capacity": 1.0},
    "workload": {
        "rate": 2.0,
        "arrivals": {"process": "batch", "batch_size": 2},
        "classes": [{"demand": 0.3, "duration": 3}],
    },
    "model": {"family": "packing", "time": "slotted"},
    "policy": {"name": "fifo-ff"},
    "run": {"arrivals": ARRIVALS},
}

EXTREMES = [0, 0.0, 5e-324, 1e-300, 1e-9, -1, -1e300, 1e20, 1e300, 2**62, math.inf, -math.inf]
EXTREMES.append(math.nan)


def bases() -> dict[str, dict[str, Any]]:
    out = {p.name: tomllib.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*.toml"))}
    out["slotted (inline)"] = SLOTTED
    for data in out.values():
        if "run" in data:  # a simulation spec
            data["run"]["arrivals"] = ARRIVALS
        else:  # an experiment spec: its sweep sets the length
            data["sweep"]["run.arrivals"] = [ARRIVALS]
    return out


BASES = bases()


def numeric_paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Paths to every int or float leaf (booleans excluded), lists included."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in numeric_paths(v, (*prefix, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in numeric_paths(v, (*prefix, i))]
    return [prefix] if isinstance(data, int | float) and not isinstance(data, bool) else []


CASES = [(name, path) for name, data in BASES.items() for path in numeric_paths(data)]


def run_case(path: Path) -> None:
    """Simulate a spec file (an experiment: its first point), small: the cases are short."""
    data = tomllib.loads(path.read_text())
    if "base" in data:
        from schedlab.experiments.spec import load_experiment

        point = load_experiment(path).points()[0]
        schedlab.simulate(point.spec)
    else:
        schedlab.simulate(path)


def _child(path: Path, queue) -> None:
    try:
        run_case(path)
        queue.put(("result", ""))
    except SchedlabError as err:
        queue.put(("error", str(err)))
    except BaseException:  # the point of the test: report any other exception
        queue.put(("traceback", traceback.format_exc()))


def outcome(path: Path, *, fork: bool = True) -> tuple[str, str]:
    """("result" | "error" | "traceback" | "hang" | "crash", text) of running the spec file."""
    if not fork:
        queue: Any = multiprocessing.get_context("fork").SimpleQueue()
        _child(path, queue)
        return queue.get()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(path, queue))
    proc.start()
    proc.join(TIMEOUT_S)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return ("hang", f"no answer in {TIMEOUT_S:g} s")
    if queue.empty():
        return ("crash", f"exit code {proc.exitcode}")
    return queue.get()


def mutated(name: str, path: tuple, value: Any) -> dict:
    data = copy.deepcopy(BASES[name])
    node = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return data


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A folder for the mutated specs (with the examples, which an experiment's base names); each
    example is run once first so the forked cases inherit its compiled code."""
    out = tmp_path_factory.mktemp("extremes")
    for example in EXAMPLES.glob("*.toml"):
        (out / example.name).write_text(example.read_text())
    for name, data in BASES.items():
        (out / "warm.toml").write_text(tomli_w.dumps(data))
        assert outcome(out / "warm.toml", fork=False) == ("result", ""), name
    return out


def test_every_example_has_numeric_fields():
    names = {name for name, _ in CASES}
    assert names == set(BASES) and len(CASES) > 40


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(case=st.sampled_from(CASES), value=st.sampled_from(EXTREMES))
def test_extreme_values_give_one_line_or_a_result(folder, case, value):
    name, path = case
    spec = folder / "spec.toml"
    spec.write_text(tomli_w.dumps(mutated(name, path, value)))
    kind, text = outcome(spec)
    where = f"{name} {'.'.join(map(str, path))} = {value!r}"
    assert kind in ("result", "error"), f"{where}: {kind}\n{text}"
    if kind == "error":
        assert "\n" not in text.strip() and "np.float64" not in text, f"{where}: {text}"
