"""Fixtures of the service tests: the KTH-SP2 excerpt converted, the specs ``schedlab serve``
takes, and a TestClient over a service with its event log."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.workloads.traces import convert
from tests.data import KTH

TOKEN = "a-test-token-of-32-characters-xx"
FCFS4 = """
[cluster]
servers = 4
[workload]
load = 0.5
[[workload.classes]]
probability = 0.5
need = 1
duration = { dist = "exponential", mean = 1.0 }
[[workload.classes]]
probability = 0.5
need = 2
duration = { dist = "exponential", mean = 1.0 }
[policy]
name = "fcfs"
[run]
arrivals = 1000  # not used online, but a spec has a length
"""


@pytest.fixture(scope="session")
def kth_table(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kth") / "kth300.parquet"
    convert(KTH, "swf", out)
    return out


@pytest.fixture(scope="session")
def kth_spec(kth_table) -> Path:
    """KTH SP2's 100 processors as one pooled server, EASY backfilling (docs/online.md)."""
    spec = kth_table.parent / "kth-cluster.toml"
    spec.write_text(
        f'[cluster]\nservers = 100\n[workload.arrivals]\nprocess = "trace"\npath = "{kth_table}"\n'
        '[policy]\nname = "easy-backfill"\n'
    )
    return spec


@pytest.fixture(scope="session")
def fcfs_spec(tmp_path_factory) -> Path:
    """FCFS on k = 4 pooled unit servers; classes of need 1 and 2."""
    spec = tmp_path_factory.mktemp("fcfs") / "fcfs4.toml"
    spec.write_text(FCFS4)
    return spec
