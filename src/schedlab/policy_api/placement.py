"""Placement helpers shared by packing and loss policies (compiled)."""

from __future__ import annotations

from schedlab._jit import kernel
from schedlab.engine.actions import fits


@kernel(wraparound=False)
def first_fit(st, j, a):
    """The lowest-indexed server where job j (allocation a) fits now, or -1."""
    for s in range(st.capacity.shape[0]):
        if fits(st, j, s, a):
            return s
    return -1
