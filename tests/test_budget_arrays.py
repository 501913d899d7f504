"""Issue 28 item 6: the memory budget counts the arrays sized by the cluster and the time series,
and refuses a spec whose arrays exceed the memory in one line with the estimate, before building
any of them (docs/guarantees.md)."""

from __future__ import annotations

import copy
import ctypes
import multiprocessing
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
    monkeypatch.setattr(budget, "physical_memory", lambda: 8 * 2**30)
    with pytest.raises(SpecError) as err:
        compile_model(parse_spec(spec))
    text = str(err.value)
    assert err.value.field == field and "GiB of memory" in text and "\n" not in text


def _status_kb(field: str) -> int:
    line = next(
        x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field)
    )
    return int(line.split()[1])


def _peak_growth(spec: dict, queue) -> None:
    """In a forked child: the peak resident memory gained while running ``spec``. The free heap
    inherited from the parent is returned first (reusing its resident pages would hide the
    allocations), and the peak reset (a child inherits its parent's)."""
    ctypes.CDLL(None).malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kb("VmRSS:")
    schedlab.simulate(spec)
    queue.put((_status_kb("VmHWM:") - before) * 1024)


def peak_growth(spec: dict) -> float:
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_peak_growth, args=(spec, queue))
    child.start()
    child.join()
    return float(queue.get())


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
    between 1,000 and 501,000 of them, in a forked child), and at most 3 times it."""
    schedlab.simulate(spec)  # compiled code loaded before the fork
    small, big = with_(spec, section, key, 1_000), with_(spec, section, key, 501_000)
    measured = (peak_growth(big) - peak_growth(small)) / 500_000
    counted = (
        budget.array_bytes(parse_spec(big)) - budget.array_bytes(parse_spec(small))
    ) / 500_000
    assert measured <= counted <= 3 * measured, (measured, counted)
