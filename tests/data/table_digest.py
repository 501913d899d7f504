"""A digest of a canonical table's contents (columns, types, values, nulls), independent of the
Parquet writer and of the provenance metadata, for comparing readers across implementations."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa


def table_digest(table: pa.Table) -> dict[str, str]:
    """Column name -> sha256 of its type and values (JSON of the Python values, nulls as null)."""
    out = {}
    for name in table.column_names:
        col = table.column(name)
        h = hashlib.sha256(str(col.type).encode())
        for chunk_start in range(0, len(col), 65536):
            values = col.slice(chunk_start, 65536).to_pylist()
            h.update(json.dumps(values).encode())
        out[name] = h.hexdigest()
    return out
