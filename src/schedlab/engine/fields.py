"""Field tables: a state (the engine's, a policy's) declared once as named, typed fields.

A :class:`Field` says a field's name, dtype code, shape rule, fill value and meaning. Everything
else about a state is generated from its table: the Python container, the allocation of one run,
the growth of the per-slot arrays, the Numba struct type and its cached constructor
(:mod:`schedlab.engine.generated`). ``engine/state.py`` declares the engine state this way;
``policy_api/contract.py`` builds ``StateField``/``PolicyState`` on it (decision 0002).

A shape rule (``size``) is None for a scalar, one length for a 1-D array or a pair of lengths for
a 2-D array (C-contiguous in both cases). A length is an int, a size name ("jobs": one entry per
job slot, grown with the slots; "classes", "servers", "resources", ... given at allocation), or a
:class:`Length`, a sum of sizes (``Length(5, classes=2, resources=1)``, shown as
"5 + 2*classes + resources"). Growth is along the first axis only: "jobs" may appear only as the
first length.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba.core import types

DTYPES = {"f8": np.float64, "i8": np.int64, "i4": np.int32, "i1": np.int8, "b1": np.bool_}
NUMBA_DTYPES = {
    "f8": types.float64,
    "i8": types.int64,
    "i4": types.int32,
    "i1": types.int8,
    "b1": types.boolean,
}


@dataclass(frozen=True)
class Length:
    """A length that is a sum of sizes: ``constant + sum(coefficient * sizes[name])``."""

    constant: int
    terms: tuple[tuple[str, int], ...]

    def __init__(self, constant: int = 0, **coefficients: int) -> None:
        object.__setattr__(self, "constant", int(constant))
        object.__setattr__(self, "terms", tuple(sorted(coefficients.items())))

    def __str__(self) -> str:
        parts = [str(self.constant)] if self.constant else []
        parts += [name if c == 1 else f"{c}*{name}" for name, c in self.terms]
        return " + ".join(parts) or "0"


Dim = int | str | Length
Size = None | Dim | tuple[Dim, ...]


ROLES = ("event", "constant", "buffer", "record")


@dataclass(frozen=True)
class Field:
    """One named field of a state: ``dtype`` is "f8", "i8", "i4", "i1" or "b1" (float64, int64,
    int32, int8, bool); ``size`` the shape rule (module docstring); ``fill`` the value of every
    entry at allocation and of the new entries when the state grows; ``doc`` what it holds.
    ``role`` says who writes it: "event", the events (the default: a snapshot copies these);
    "constant", set when the state is built; "buffer", an input or output the caller fills or
    empties at every call (the engine's block of jobs to arrive, its action log); "record", a
    measurement of jobs or a time series (written only for the jobs and times measured)."""

    name: str
    dtype: str
    size: Size = None
    fill: float = 0
    doc: str = ""
    role: str = "event"

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"field {self.name!r}: dtype must be one of {sorted(DTYPES)}")
        if self.role not in ROLES:
            raise ValueError(f"field {self.name!r}: role must be one of {ROLES}")
        self._check_name_and_size()

    def _check_name_and_size(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"field name {self.name!r} must be a public identifier")
        if isinstance(self.size, tuple) and (len(self.size) != 2 or "jobs" in self.size[1:]):
            raise ValueError(f"field {self.name!r}: 2-D only, 'jobs' only as first dimension")

    @property
    def dims(self) -> tuple[Dim, ...]:
        """The lengths of the array's dimensions; () for a scalar."""
        if self.size is None:
            return ()
        return self.size if isinstance(self.size, tuple) else (self.size,)

    @property
    def per_job(self) -> bool:
        """One entry (row) per job slot: grown with the slots."""
        return bool(self.dims) and self.dims[0] == "jobs"

    def numba_type(self) -> types.Type:
        """The field's type in a struct: the scalar, or a C-contiguous array of it."""
        base = NUMBA_DTYPES[self.dtype]
        if not self.dims:
            return base
        return base[::1] if len(self.dims) == 1 else base[:, ::1]

    def shape(self, sizes: Mapping[str, int], owner: str) -> tuple[int, ...]:
        """The array's shape for these sizes (every size name used must be given)."""
        return tuple(_length(d, sizes, owner, self.name) for d in self.dims)

    def initial(self, sizes: Mapping[str, int], value: Any, owner: str, copy: bool = True) -> Any:
        """The field's initial contents: ``value`` (converted to the dtype; an array must have
        the field's shape and is copied unless ``copy`` is False and it has the field's dtype and
        layout already), or ``fill`` everywhere when ``value`` is None."""
        dtype = DTYPES[self.dtype]
        if not self.dims:
            if value is None:
                value = self.fill
            return dtype(value).item() if self.dtype != "b1" else bool(value)
        shape = self.shape(sizes, owner)
        if value is None:
            return np.full(shape, self.fill, dtype=dtype)
        array = np.ascontiguousarray(value, dtype=dtype)
        if array.shape != shape:
            raise ValueError(
                f"state {owner!r} field {self.name!r}: shape {array.shape}, expected {shape}"
            )
        return array.copy() if copy and array is value else array

    def grown(self, array: np.ndarray, rows: int) -> np.ndarray:
        """``array`` with at least ``rows`` rows: itself when it has them, else a new array whose
        first rows are its contents and the others ``fill`` (arrays never shrink)."""
        if array.shape[0] >= rows:
            return array
        out = np.full((rows, *array.shape[1:]), self.fill, dtype=array.dtype)
        out[: array.shape[0]] = array
        return out

    def describe(self) -> str:
        """E.g. "f8[jobs, resources]" (the dtype code and the shape rule)."""
        dims = ", ".join(str(d) for d in self.dims)
        return f"{self.dtype}[{dims}]" if self.dims else str(self.dtype)


def _length(dim: Dim, sizes: Mapping[str, int], owner: str, field_name: str) -> int:
    if isinstance(dim, int):
        return dim
    if isinstance(dim, str):
        return _size(sizes, dim, owner, field_name)
    return dim.constant + sum(c * _size(sizes, n, owner, field_name) for n, c in dim.terms)


def _size(sizes: Mapping[str, int], name: str, owner: str, field_name: str) -> int:
    if name not in sizes:
        raise ValueError(f"state {owner!r} field {field_name!r}: no size {name!r} given")
    return int(sizes[name])


def sizes_of(fields: tuple[Field, ...], arrays: Any) -> dict[str, int]:
    """The sizes an allocated state was made with, read from its arrays' shapes (every size
    name that is some field's length on its own)."""
    sizes: dict[str, int] = {}
    for f in fields:
        for dim, length in zip(f.dims, np.shape(getattr(arrays, f.name)), strict=True):
            if isinstance(dim, str):
                sizes[dim] = int(length)
    return sizes


def allocate(
    fields: tuple[Field, ...],
    sizes: Mapping[str, int],
    values: Mapping[str, Any],
    owner: str,
    copy: bool = True,
) -> list[Any]:
    """The initial contents of every field, in table order (:meth:`Field.initial`; ``values``
    by field name)."""
    unknown = set(values) - {f.name for f in fields}
    if unknown:
        raise ValueError(f"state {owner!r} has no field(s) {sorted(unknown)}")
    return [f.initial(sizes, values.get(f.name), owner, copy) for f in fields]


def container(name: str, fields: tuple[Field, ...], doc: str) -> type:
    """A namedtuple class with one attribute per field, each documented by its table row."""
    cls = namedtuple(name, [f.name for f in fields])  # type: ignore[misc]
    cls.__doc__ = doc
    for f in fields:
        getattr(cls, f.name).__doc__ = f"{f.describe()}: {f.doc}"
    return cls


def struct_fields(fields: tuple[Field, ...]) -> list[tuple[str, types.Type]]:
    """The (name, Numba type) members of the struct type of a field table."""
    return [(f.name, f.numba_type()) for f in fields]
