"""Source ids formatted by the compiled pass equal Python's own decimal formatting."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.workloads.traces.ids import format_ids

EDGES = np.array(
    [0, 1, -1, 9, 10, -10, 99, 100, 2**63 - 1, -(2**63), -(2**63) + 1]
    + [10**k for k in range(19)]
    + [10**k - 1 for k in range(1, 19)]
    + [-(10**k) for k in range(19)],
    dtype=np.int64,
)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_ids_are_the_decimal_parts_joined_by_slashes(k: int) -> None:
    """Every width from 1 to 20 characters, both signs, and -2**63 (whose negation overflows:
    the former formatter looped past the start of its buffer on it)."""
    rng = np.random.default_rng(k)
    random = rng.integers(-(2**63), 2**63 - 1, 2000, endpoint=True, dtype=np.int64)
    parts = [np.concatenate([np.roll(EDGES, j), random[j::k][: 2000 // k]]) for j in range(k)]
    n = min(p.size for p in parts)
    parts = [p[:n] for p in parts]
    want = ["/".join(str(int(p[i])) for p in parts) for i in range(n)]
    assert format_ids(*parts).to_pylist() == want
