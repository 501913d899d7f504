"""The memory pre-check compares its estimate with a budget (issue 45, item 7): by default a
fraction of the memory this process can still take (the machine's available memory, ``ulimit -v``
and ``-d``, the cgroup's memory.max), else $SCHEDLAB_MEMORY_BUDGET; a spec over it is refused in
one line before any array is allocated. ``servers = 1e8`` under ``ulimit -v 6000000`` used to pass
the check (its 23.5 GiB estimate is under the machine's memory) and end in an ArrayMemoryError
traceback after allocating 4 GB."""

from __future__ import annotations

import os
import resource
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

SRC = str(Path(schedlab.__file__).resolve().parents[1])
QUICKSTART = (Path(schedlab.__file__).parent / "examples" / "quickstart.toml").read_text()
ULIMIT_V_KB = 6_000_000


def _limited() -> None:
    """``ulimit -v 6000000`` (KiB) in the child."""
    limit = ULIMIT_V_KB * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_a_hundred_million_servers_under_ulimit_v_is_one_line_before_allocating(tmp_path):
    spec = tmp_path / "big.toml"
    spec.write_text(
        QUICKSTART.replace("servers = 8 ", "servers = 100_000_000 ").replace(
            "arrivals = 1_000_000", "arrivals = 2000"
        )
    )
    env = {k: v for k, v in os.environ.items() if k != budget.BUDGET_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "simulate", str(spec)],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": SRC, "COLUMNS": "1000"},
        preexec_fn=_limited,
        timeout=600,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said and len(said.strip().splitlines()) == 1, said
    assert f"{spec}:4: cluster.servers: the cluster (100,000,000 servers)" in said
    assert "left under the address-space limit (ulimit -v)" in said


def test_the_budget_is_the_least_room_plus_the_interpreter(monkeypatch):
    monkeypatch.delenv(budget.BUDGET_ENV, raising=False)
    room, _ = budget.available_memory()
    assert 0 < room <= budget.physical_memory()
    assert budget.memory_budget().bytes == pytest.approx(
        budget.BASE_BYTES + budget.BUDGET_FRACTION * room, rel=0.05
    )


@pytest.mark.parametrize(
    ("given", "bytes_"),
    [("123456789", 123456789), ("512M", 2**29), ("8G", 8 * 2**30), ("1.5GiB", 1.5 * 2**30)],
)
def test_the_environment_sets_the_budget(monkeypatch, given, bytes_):
    monkeypatch.setenv(budget.BUDGET_ENV, given)
    assert budget.memory_budget().bytes == bytes_


def test_a_budget_that_is_no_amount_is_refused_in_one_line_and_a_spec_over_it_too(monkeypatch):
    spec = parse_spec(tomllib.loads(QUICKSTART.replace("arrivals = 1_000_000", "arrivals = 2000")))
    monkeypatch.setenv(budget.BUDGET_ENV, "lots")
    with pytest.raises(SpecError, match=r"SCHEDLAB_MEMORY_BUDGET: 'lots' is no amount of memory"):
        compile_model(spec)
    monkeypatch.setenv(budget.BUDGET_ENV, "100M")  # under the interpreter's 0.37 GiB
    with pytest.raises(SpecError, match=r"more than the memory budget of 0.0977 GiB"):
        compile_model(spec)
    monkeypatch.setenv(budget.BUDGET_ENV, "1G")
    assert compile_model(spec).spec.cluster.servers == 8
