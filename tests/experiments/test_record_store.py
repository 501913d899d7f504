"""A run record's stored file is the one PyArrow's own inference gives (issue 33 item 2: the store
builds the one-row table from Arrow buffers and writes it in one call, so that no sweep process
imports pandas and a run's store write is short)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schedlab import outputs
from schedlab.experiments.runner import Task, execute
from schedlab.experiments.store import RECORD_OPTIONS, ResultStore
from schedlab.model.spec import parse_spec
from tests.helpers.specs import pooled_spec

EDGES = {
    "none": None,
    "yes": True,
    "no": False,
    "zero": 0,
    "int64_min": -(2**63),
    "int64_max": 2**63 - 1,
    "negative": -7,
    "half": 1.5,
    "nan": math.nan,
    "minus_zero": -0.0,
    "infinite": -math.inf,
    "tiny": 5e-324,
    "empty": "",
    "unicode": "héllo ✓ 日本",
    "numpy_float": np.float64(2.5),  # anything else goes through pa.array
    "numpy_int32": np.int32(3),
    "numpy_bool": np.bool_(True),
}


def pyarrow_file(row: dict, path) -> bytes:
    """The file of ``row`` as PyArrow infers its table (the store's format before issue 33)."""
    pq.write_table(outputs.marked(pa.Table.from_pylist([row])), path, **RECORD_OPTIONS)
    return path.read_bytes()


def same(a: dict, b: dict) -> bool:
    nan = [k for k, v in a.items() if isinstance(v, float) and math.isnan(v)]
    return a.keys() == b.keys() and all(math.isnan(b[k]) for k in nan) and all(
        a[k] == b[k] and type(a[k]) is type(b[k]) for k in a if k not in nan
    )  # fmt: skip


@pytest.mark.parametrize("name", ["every kind", *EDGES])
def test_a_stored_record_is_the_file_pyarrow_infers(tmp_path, name):
    row = {"spec_hash": "h", **(EDGES if name == "every kind" else {name: EDGES[name]})}
    stored = ResultStore(tmp_path / "store").write(row)
    assert stored.read_bytes() == pyarrow_file(row, tmp_path / "pyarrow.parquet")


def test_a_run_record_is_stored_as_pyarrow_infers_it_and_read_back_unchanged(tmp_path):
    task = Task.of(parse_spec(pooled_spec(2, 0.7, arrivals=500)), replication=1)
    row = {**execute(task), "axis": None}
    stored = ResultStore(tmp_path / "store").write(row)
    assert stored.read_bytes() == pyarrow_file(row, tmp_path / "pyarrow.parquet")
    assert same(row, ResultStore(tmp_path / "store").read([task.hash])[0])
