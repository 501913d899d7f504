"""Issue 28 item 6: the memory budget counts the arrays sized by the cluster and the time series,
and refuses a spec whose arrays exceed the memory in one line with the estimate, before building
any of them (docs/guarantees.md)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import schedlab
from schedlab.errors import SpecError
from schedlab.model import budget
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec

EXAMPLES = Path(schedlab.__file__).parent / "examples"
QUICKSTART = tomllib.loads((EXAMPLES / "quickstart.toml").read_text())
VM_BATCH = tomllib.loads((EXAMPLES / "vm-batch.toml").read_text())
SLOTTED = {
    "cluster": {"servers": 2, "capacity": 1.0},
    "workload": {"load": 0.5, "classes": [{"demand": 0.3, "duration": 3}]},
    "model": {"family": "packing", "time": "slotted"},
    "policy": {"name": "fifo-ff"},
    "run": {"arrivals": 2000},
}


def with_(spec: dict, section: str, key: str, value) -> dict:
    out = copy.deepcopy(spec)
    out[section][key] = value
    return out


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (with_(QUICKSTART, "cluster", "servers", 1_000_000_000), "cluster.servers"),
        (with_(QUICKSTART, "cluster", "servers", 10**12), "cluster.servers"),
        (with_(VM_BATCH, "cluster", "servers", 10**9), "cluster.servers"),
        (with_(SLOTTED, "cluster", "servers", 10**8), "cluster.servers"),
        (with_(QUICKSTART, "run", "timeseries", 10**8), "run.timeseries"),
    ],
)
def test_oversized_arrays_are_refused_in_one_line(spec, field, monkeypatch):
    """The issue's specs (20, 8.5, 18.6 and 10.6 GB measured; an ArrayMemoryError at 10^12
    servers) on a machine of 8 GiB."""
    monkeypatch.setenv(budget.BUDGET_ENV, "8G")
    with pytest.raises(SpecError) as err:
        compile_model(parse_spec(spec))
    text = str(err.value)
    assert err.value.field == field and "GiB of memory" in text and "\n" not in text


CHILD = """
import ctypes, json, sys
from pathlib import Path
import schedlab

def status_kb(field):
    lines = Path("/proc/self/status").read_text().splitlines()
    return int(next(x for x in lines if x.startswith(field)).split()[1])

warm, spec = json.loads(sys.argv[1]), json.loads(sys.argv[2])
schedlab.simulate(warm)  # compiled code loaded first
ctypes.CDLL(None).malloc_trim(0)
Path("/proc/self/clear_refs").write_text("5")  # the peak restarts from here
before = status_kb("VmRSS:")
schedlab.simulate(spec)
print((status_kb("VmHWM:") - before) * 1024)
"""


def peak_growth(warm: dict, spec: dict) -> float:
    """The peak resident memory a run of ``spec`` gains, in a fresh interpreter (a fork of the
    test process would inherit its heap and peak: pytest-xdist workers run many tests)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(warm), json.dumps(spec)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(schedlab.__file__).parents[1])},
    )
    return float(done.stdout.split()[-1])


SMALL = {**SLOTTED, "run": {"arrivals": 2000}}
MEASURED = [
    (with_(QUICKSTART, "run", "arrivals", 2000), "cluster", "servers"),
    (with_(VM_BATCH, "run", "arrivals", 2000), "cluster", "servers"),
    (SMALL, "cluster", "servers"),
    (with_(QUICKSTART, "run", "arrivals", 2000), "run", "timeseries"),
]


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("spec", "section", "key"), MEASURED)
def test_estimate_is_within_a_factor_3_of_the_measured_peak(spec, section, key):
    """The bytes the budget counts per server (pooled, packing, slotted) and per time-series
    sample are at least the peak resident memory a run gains per server or sample (measured
    between 1,000 and 501,000 of them, in a fresh interpreter), and at most 3 times it."""
    small, big = with_(spec, section, key, 1_000), with_(spec, section, key, 501_000)
    measured = (peak_growth(spec, big) - peak_growth(spec, small)) / 500_000
    counted = (
        budget.array_bytes(parse_spec(big)) - budget.array_bytes(parse_spec(small))
    ) / 500_000
    assert measured <= counted <= 3 * measured, (measured, counted)
