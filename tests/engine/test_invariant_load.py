"""The array fields of a borrowed struct are loaded with ``!invariant.load``
(engine/borrowed_structs.py, docs/decisions/0008 point 2, on decision 0004's borrowed pointers); an
owned struct's are not."""

from __future__ import annotations

import re

import numpy as np
from numba.core import types
from numba.experimental import structref

from schedlab._jit import kernel
from schedlab.engine.borrowed_structs import borrow
from schedlab.engine.generated import ArrayStructType

TYPE = ArrayStructType([("xs", types.float64[::1]), ("ns", types.int64[::1])])
INVARIANT_LOAD = re.compile(r"= load [^\n]*!invariant\.load")


@kernel(cache=False)
def _make(xs, ns):
    s = structref.new(TYPE)
    s.xs = xs
    s.ns = ns
    return s


@kernel(cache=False)
def _read_borrowed(state, i):
    st = borrow(state)
    return st.xs[i] + st.ns[i]


@kernel(cache=False)
def _read_owned(state, i):
    return state.xs[i] + state.ns[i]


def _ir(dispatcher, *args) -> str:
    dispatcher(*args)
    return dispatcher.inspect_llvm(dispatcher.signatures[-1])


def test_borrowed_array_fields_are_invariant_loads():
    state = _make(np.array([1.5, 2.5]), np.array([10, 20]))
    assert _read_borrowed(state, 1) == _read_owned(state, 1) == 22.5
    borrowed = _ir(_read_borrowed, state, 1)
    assert len(INVARIANT_LOAD.findall(borrowed)) >= 2  # a data pointer or length of each array
    assert not INVARIANT_LOAD.search(_ir(_read_owned, state, 1))
