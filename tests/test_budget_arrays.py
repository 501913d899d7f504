"""Issue 28 item 6: the memory budget counts the arrays sized by the cluster and the time series,
and refuses a spec whose arrays exceed the memory in one line with the estimate, before building
any of them (docs/guarantees.md)."""

from __future__ import annotations

import copy
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
        (with_(SLOTTED, "cluster", "servers", 10**9), "cluster.servers"),
        (with_(QUICKSTART, "run", "timeseries", 10**10), "run.timeseries"),
    ],
)
def test_oversized_arrays_are_refused_in_one_line(spec, field, monkeypatch):
    monkeypatch.setattr(budget, "physical_memory", lambda: 16 * 2**30)
    with pytest.raises(SpecError) as err:
        compile_model(parse_spec(spec))
    text = str(err.value)
    assert err.value.field == field and "GiB of memory" in text and "\n" not in text


def test_estimate_covers_the_arrays_a_big_cluster_builds():
    """The per-server estimate is at least the bytes of the engine's per-server arrays (capacity
    and usage rows, f8 per resource, and the per-server counters) and at most 16 times them
    (policy tables add per-server rows too)."""
    spec = parse_spec(with_(VM_BATCH, "cluster", "servers", 100_000))
    model = compile_model(spec)
    servers, resources = model.capacity.shape
    engine = servers * (2 * 8 * resources + 1 + 4)  # capacity, used, stalled, n_on_server
    counted = budget.array_bytes(spec) - budget.BYTES_PER_SAMPLE * spec.run.timeseries
    assert engine <= counted <= 16 * engine
