"""Array indexing in schedlab's compiled code: no wraparound of negative indices (decision 0008).

Numba indexes arrays as Python does: a negative index counts from the end, so every access with
a signed index computes ``i < 0 ? i + n : i`` (a compare, an add and a select, and the array's
length kept in a register or reloaded). The engine and the policies never index from the end:
-1 means "no job" and is tested before any access, and slots, positions and classes are never
negative. Removing the wraparound from their code made the pooled event loop ~20% faster.

:func:`install` replaces Numba's ``fix_integer_index`` (the step every integer index goes
through) with one that leaves a signed index as it is when the function being compiled belongs
to schedlab (its mangled name starts with ``_ZN8schedlab``). Everything else keeps Python's
semantics: Numba's own implementations, user policies in other packages, constant indices such
as ``a[-1]`` or ``a[i, -1]`` (folded at compile time, no cost). tests/engine/test_indexing.py runs
pooled simulations with ``NUMBA_BOUNDSCHECK=1``, where a negative index raises IndexError.
Compiled code is cached in a directory keyed by the engine's sources, this file included, so code
compiled with and without the change never mix.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

MANGLED_PREFIX = "_ZN8schedlab"  # Numba's mangled name of a function of the schedlab package


def _is_schedlab(builder: Any) -> bool:
    return builder.function.name.startswith(MANGLED_PREFIX)


def _is_constant(value: Any) -> bool:
    """``value`` is known when compiling: a constant, or an element of a tuple of indices whose
    element was a constant (``a[0, -1]``; Numba passes each index as an ``extractvalue``)."""
    while isinstance(value, ir.CastInstr):
        value = value.operands[0]
    if isinstance(value, ir.Constant):
        return True
    if not isinstance(value, ir.ExtractValue) or len(value.indices) != 1:
        return False
    (k,) = value.indices
    tuple_value = value.aggregate
    while isinstance(tuple_value, ir.InsertValue):
        if list(tuple_value.indices) == [k]:
            return _is_constant(tuple_value.value)
        tuple_value = tuple_value.aggregate
    return isinstance(tuple_value, ir.Constant)


def install() -> bool:
    """Compile schedlab's own functions without negative-index wraparound. Returns False (and
    changes nothing) when this Numba has no ``fix_integer_index`` to wrap."""
    import numba  # noqa: F401  (whole first: numba.np.arrayobj alone is a circular import)
    from numba.core import types
    from numba.np import arrayobj

    python_semantics = getattr(arrayobj, "fix_integer_index", None)
    if python_semantics is None:
        return False
    if getattr(python_semantics, "schedlab", False):
        return True

    def fix_integer_index(context, builder, idxty, idx, size):
        if idxty.signed and _is_schedlab(builder) and not _is_constant(idx):
            return context.cast(builder, idx, idxty, types.intp)
        return python_semantics(context, builder, idxty, idx, size)

    fix_integer_index.schedlab = True
    arrayobj.fix_integer_index = fix_integer_index
    return True
