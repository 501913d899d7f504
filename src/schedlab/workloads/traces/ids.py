"""Source ids (``job/task``, ``job/task/instance``): integer parts kept as hidden columns while a
table is read and sorted, turned into one string column only when it is written.

Readers emit the integer parts as ``_id0``, ``_id1``, ... (cheap to sort and spill);
:func:`materialize` replaces them by ``source_id``, formatting millions of ids per second in one
compiled pass straight into an Arrow string array.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from schedlab._jit import kernel

ID_PREFIX = "_id"
SEP = ord("/")


@kernel(nogil=True)
def _digits(v: int) -> int:
    n = 1
    if v < 0:
        n += 1
        v = -v
    while v >= 10:
        v //= 10
        n += 1
    return n


@kernel(nogil=True)
def _part(j, i, p0, p1, p2):
    if j == 0:
        return p0[i]
    if j == 1:
        return p1[i]
    return p2[i]


@kernel(nogil=True)
def _format(k, p0, p1, p2, sep):
    """Offsets and UTF-8 bytes of ``a/b/c`` (the first ``k`` of the parts) for each row."""
    n = p0.shape[0]
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for i in range(n):
        length = k - 1
        for j in range(k):
            length += _digits(_part(j, i, p0, p1, p2))
        total += length
        offsets[i + 1] = total
    data = np.empty(total, np.uint8)
    for i in range(n):
        pos = offsets[i]
        for j in range(k):
            if j:
                data[pos] = sep
                pos += 1
            v = _part(j, i, p0, p1, p2)
            if v < 0:
                data[pos] = 45  # '-'
                pos += 1
                v = -v
            end = pos + _digits(v)
            q = end
            while True:
                q -= 1
                data[q] = 48 + v % 10
                v //= 10
                if v == 0:
                    break
            pos = end
    return offsets, data


def format_ids(*parts: np.ndarray) -> pa.Array:
    """``a/b/c`` strings from one to three integer arrays of equal length."""
    if not 1 <= len(parts) <= 3:
        raise ValueError("source ids have one to three parts")
    arrays = [np.ascontiguousarray(p, dtype=np.int64) for p in parts]
    while len(arrays) < 3:
        arrays.append(arrays[0])
    offsets, data = _format(len(parts), arrays[0], arrays[1], arrays[2], SEP)
    if offsets[-1] != data.size or data.size > np.iinfo(np.int32).max:
        raise ValueError("source ids too long for one string array")
    return pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))


def id_columns(names: list[str]) -> list[str]:
    """The hidden id-part columns of a table, in order."""
    return sorted((c for c in names if c.startswith(ID_PREFIX)), key=lambda c: int(c[3:]))


def materialize(table: pa.Table) -> pa.Table:
    """Replace the hidden ``_id*`` columns by the string column ``source_id``."""
    cols = id_columns(table.column_names)
    if not cols:
        return table
    ids = format_ids(*(table.column(c).to_numpy() for c in cols))
    table = table.drop_columns(cols)
    if "source_id" in table.column_names:
        table = table.drop_columns(["source_id"])
    return table.append_column("source_id", ids)
