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


POW10 = np.array([10**k for k in range(1, 20)], dtype=np.uint64)


@kernel(nogil=True)
def _digits(u: np.uint64) -> int:
    """Decimal digits of ``u`` (unsigned: compared with powers of ten, no division)."""
    n = 1
    for p in POW10:
        if u < p:
            return n
        n += 1
    return n


@kernel(nogil=True)
def _magnitude(v: int) -> np.uint64:
    """``|v|`` as unsigned, exact for -2**63 too (whose negation overflows int64)."""
    return np.uint64(-(v + 1)) + np.uint64(1) if v < 0 else np.uint64(v)


@kernel(nogil=True)
def _put(data, pos, v):
    """Write ``v`` in decimal at ``data[pos:]``; returns the position after it."""
    if v < 0:
        data[pos] = 45  # '-'
        pos += 1
    u = _magnitude(v)
    end = pos + _digits(u)
    q = end
    while True:
        q -= 1
        data[q] = np.uint8(48 + u % np.uint64(10))
        u //= np.uint64(10)
        if u == 0:
            break
    return end


@kernel(nogil=True)
def _format(parts, sep):
    """Offsets and UTF-8 bytes of ``a/b/c`` (the rows of ``parts``, one to three) for each
    column."""
    k, n = parts.shape
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for i in range(n):
        length = k - 1
        for j in range(k):
            v = parts[j, i]
            length += _digits(_magnitude(v)) + (v < 0)
        total += length
        offsets[i + 1] = total
    data = np.empty(total, np.uint8)
    for i in range(n):
        pos = offsets[i]
        for j in range(k):
            if j:
                data[pos] = sep
                pos += 1
            pos = _put(data, pos, parts[j, i])
    return offsets, data


def format_ids(*parts: np.ndarray) -> pa.Array:
    """``a/b/c`` strings from one to three integer arrays of equal length."""
    if not 1 <= len(parts) <= 3:
        raise ValueError("source ids have one to three parts")
    offsets, data = _format(np.stack([np.asarray(p, dtype=np.int64) for p in parts]), SEP)
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
