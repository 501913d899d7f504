"""Inputs for the tests of what the commands write (tests/commands/test_output_safety.py,
tests/commands/test_cli_paths_fuzz.py): a one-server spec file's text, and a result folder of
hand-made runs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SPEC = """[cluster]
servers = 1
[workload]
load = 0.5
classes = [{ need = 1, duration = { dist = "exponential", mean = 1.0 } }]
[policy]
name = "fcfs"
[run]
arrivals = 400
batches = 4
"""


def make_store(folder: Path, experiment: str, n: int = 2) -> list[str]:
    """A result folder with ``n`` hand-made runs (their spec_hash is their file name)."""
    (folder / "runs").mkdir(parents=True)
    hashes = []
    for i in range(n):
        h = f"{experiment}{i:04d}"
        row = {
            "spec_hash": h,
            "experiment": experiment,
            "point": i,
            "policy": "fcfs",
            "load": 0.3 + 0.2 * i,
            "replication": 0,
            "axes": '["load"]',
            "mean_response_time": 1.0 + i,
            "mean_response_time_lo": 0.9 + i,
            "mean_response_time_hi": 1.1 + i,
            "stable": True,
            "code_hash": "c",
        }
        pq.write_table(pa.Table.from_pylist([row]), folder / "runs" / f"{h}.parquet")
        hashes.append(h)
    return hashes
