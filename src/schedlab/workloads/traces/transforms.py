"""Transforms of a canonical job table, as the papers preprocessed their traces.

Each function takes and returns a canonical table (:mod:`.canonical`) and records itself, with its
parameters, in the table's provenance metadata. ``schedlab trace convert`` exposes each as an
option and applies them in this order: ``normalize`` (capacity normalization, always; the
format's default server unless given), ``server_need``, ``max_resource``, ``round_pow2``, then,
after sorting by arrival, ``window_jobs`` / ``window_time`` and ``time_scale``.

* :func:`normalize` — demands as fractions of one server's capacity (the Google traces are
  already normalized by the largest machine; Alibaba requests are in cores, SWF in processors).
* :func:`server_need` — the pooled family's integer server need, from SWF processors (or nodes)
  or from the demand.
* :func:`max_resource` — one resource per job, the maximum of its normalized resources (psychas2019
  §VII-B: "we used the maximum of the two requirements"; psychas2022 §7.2).
* :func:`round_pow2` — demands rounded up to powers of 1/2, i.e. job types (psychas2022 §7.2:
  "rounding it up to the closest power of 1/2"; psychas2019 §V: sizes in (0, 1/2^J] rounded up to
  1/2^J).
* :func:`window_jobs`, :func:`window_time` — a contiguous part of the trace (psychas2019 §VII-B and
  psychas2018 §7.3: about a million tasks, ~1.5 days; psychas2022 §7.2: the first million).
* :func:`time_scale` — arrival times multiplied by beta; 1/beta is psychas2019's "traffic scaling"
  (§VII-B, Fig. 5: 1/beta from 1 to 1.6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schedlab.workloads.traces.canonical import (
    add_transform,
    demand_columns,
    get_meta,
    with_meta,
)
from schedlab.workloads.traces.report import TraceError

NeedSource = Literal["procs", "requested", "nodes", "demand"]
NEED_SOURCES: tuple[str, ...] = ("procs", "requested", "nodes", "demand")


def _replace(table: pa.Table, name: str, values: pa.Array | np.ndarray) -> pa.Table:
    arr = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values)
    if name in table.column_names:
        return table.set_column(table.column_names.index(name), name, arr)
    return table.append_column(name, arr)


def normalize(table: pa.Table, capacity: Mapping[str, float]) -> pa.Table:
    """Divide ``demand_<r>`` by ``capacity[r]``: demands become fractions of a server with that
    capacity (in the table's current units). The metadata's ``capacity`` (the server the demands
    are relative to, in the source's native units) is updated accordingly."""
    meta = get_meta(table)
    native = dict(meta.get("capacity", {}))
    for r, cap in capacity.items():
        col = f"demand_{r}"
        if col not in table.column_names:
            have = ", ".join(c.removeprefix("demand_") for c in demand_columns(table)) or "none"
            raise TraceError(f"normalize: the table has no resource '{r}' (it has {have})")
        if not (cap > 0 and math.isfinite(cap)):
            raise TraceError(f"normalize: capacity of '{r}' must be a positive number, not {cap}")
        table = _replace(table, col, pc.divide(table.column(col), float(cap)))
        native[r] = native.get(r, 1.0) * float(cap)
    meta["capacity"] = native
    return add_transform(with_meta(table, meta), "normalize", capacity=dict(capacity))


def max_resource(table: pa.Table, resources: Sequence[str] | None = None) -> pa.Table:
    """Add ``demand`` = the maximum over the (normalized) ``demand_<r>`` columns (all of them, or
    ``resources``). The per-resource columns are kept, for multi-resource replays."""
    cols = demand_columns(table) if resources is None else [f"demand_{r}" for r in resources]
    missing = [c for c in cols if c not in table.column_names]
    if not cols or missing:
        raise TraceError(
            "max_resource: the table has no "
            + (", ".join(missing) if missing else "demand_<resource> columns")
        )
    value = table.column(cols[0])
    for c in cols[1:]:
        value = pc.max_element_wise(value, table.column(c), skip_nulls=False)
    return add_transform(
        _replace(table, "demand", value),
        "max_resource",
        resources=[c.removeprefix("demand_") for c in cols],
    )


def pow2_ceil(values: np.ndarray, floor_exponent: int | None = None) -> np.ndarray:
    """The smallest power of two (1, 1/2, 1/4, ...; 2, 4, ... above 1) that is >= each value;
    0 stays 0 unless ``floor_exponent`` J is given, which also raises every value below 1/2^J to
    1/2^J. NaN stays NaN."""
    v = np.asarray(values, dtype=np.float64)
    out = np.zeros_like(v)
    pos = v > 0
    exp = np.ceil(np.log2(v[pos]))
    rounded = np.exp2(exp)
    low = rounded < v[pos]  # guard against log2 rounding
    rounded[low] *= 2
    out[pos] = rounded
    out[np.isnan(v)] = np.nan
    if floor_exponent is not None:
        smallest = 2.0 ** (-floor_exponent)
        out = np.where(np.isnan(out), out, np.maximum(out, smallest))
    return out


def round_pow2(
    table: pa.Table, columns: Sequence[str] | None = None, floor_exponent: int | None = None
) -> pa.Table:
    """Round demands up to powers of 1/2 (job types). ``columns`` defaults to ``demand`` if the
    table has it, else every ``demand_<r>`` column."""
    if columns is None:
        columns = ["demand"] if "demand" in table.column_names else demand_columns(table)
    if not columns:
        raise TraceError("round_pow2: the table has no demand column")
    if floor_exponent is not None and floor_exponent < 0:
        raise TraceError("round_pow2: the floor exponent J (smallest type 1/2^J) must be >= 0")
    for c in columns:
        if c not in table.column_names:
            raise TraceError(f"round_pow2: the table has no column '{c}'")
        values = table.column(c).to_numpy(zero_copy_only=False)
        table = _replace(table, c, pow2_ceil(values, floor_exponent))
    return add_transform(table, "round_pow2", columns=list(columns), floor_exponent=floor_exponent)


def server_need(table: pa.Table, source: str = "procs", units: float = 1.0) -> pa.Table:
    """Set ``need``, the pooled family's integer server need.

    * ``procs``: SWF allocated processors (requested where allocated is unknown); k = MaxProcs;
    * ``requested``: SWF requested processors (allocated where unknown); k = MaxProcs;
    * ``nodes``: SWF processors in whole nodes, ceil(procs / (MaxProcs / MaxNodes)); k = MaxNodes;
    * ``demand``: ceil(units * max_r demand_r): ``units`` unit servers per normalized server
      (e.g. 64 for Alibaba 2017 CPU cores); at least 1.
    """
    meta = get_meta(table)
    names = table.column_names
    if source in ("procs", "requested", "nodes"):
        if "procs_allocated" not in names or "procs_requested" not in names:
            raise TraceError(
                f"server need from '{source}' needs SWF processor columns; use 'demand' "
                "(with units) for other traces"
            )
        alloc = table.column("procs_allocated").to_numpy(zero_copy_only=False).astype(float)
        req = table.column("procs_requested").to_numpy(zero_copy_only=False).astype(float)
        first, second = (req, alloc) if source == "requested" else (alloc, req)
        procs = np.where(first > 0, first, second)
        if source == "nodes":
            header = meta.get("header", {})
            max_procs, max_nodes = header.get("MaxProcs"), header.get("MaxNodes")
            if not max_procs or not max_nodes:
                raise TraceError(
                    "server need from 'nodes' needs MaxProcs and MaxNodes in the header"
                )
            per_node = float(max_procs) / float(max_nodes)
            need = np.ceil(procs / per_node - 1e-9)
            meta["k"] = int(max_nodes)
        else:
            need = procs
            if meta.get("header", {}).get("MaxProcs"):
                meta["k"] = int(meta["header"]["MaxProcs"])
    elif source == "demand":
        if not units > 0:
            raise TraceError("server need from 'demand' needs units > 0")
        cols = ["demand"] if "demand" in names else demand_columns(table)
        if not cols:
            raise TraceError("server need from 'demand': the table has no demand column")
        d = np.max(
            np.column_stack([table.column(c).to_numpy(zero_copy_only=False) for c in cols]),
            axis=1,
        )
        need = np.maximum(np.ceil(d * units - 1e-9), 1.0)
        meta.pop("k", None)
    else:
        raise TraceError(
            f"unknown server-need source '{source}'; use one of {', '.join(NEED_SOURCES)}"
        )
    bad = ~np.isfinite(need) | (need < 1)
    arr = pa.array(np.where(bad, 0, need).astype(np.int64), mask=bad)
    table = with_meta(_replace(table, "need", arr), meta)
    return add_transform(table, "server_need", source=source, units=units)


def window_jobs(table: pa.Table, count: int, start: int = 0) -> pa.Table:
    """Jobs ``start .. start + count - 1`` in arrival order (the table is in arrival order)."""
    if count < 0 or start < 0:
        raise TraceError("window_jobs: start and count must be >= 0")
    return add_transform(table.slice(start, count), "window_jobs", start=start, count=count)


def window_time(table: pa.Table, end: float, start: float = 0.0) -> pa.Table:
    """Jobs arriving in [first + start, first + end), with ``first`` the first arrival time."""
    if not end > start:
        raise TraceError(f"window_time: the end ({end:g}) must be after the start ({start:g})")
    if table.num_rows == 0:
        return add_transform(table, "window_time", start=start, end=end)
    arrival = table.column("arrival")
    first = pc.min(arrival).as_py()
    mask = pc.and_(pc.greater_equal(arrival, first + start), pc.less(arrival, first + end))
    return add_transform(table.filter(mask), "window_time", start=start, end=end, origin=first)


def time_scale(table: pa.Table, beta: float) -> pa.Table:
    """Multiply arrival times by ``beta`` (> 0); durations are unchanged. 1/beta is psychas2019's
    traffic scaling (§VII-B): beta < 1 compresses arrivals and raises the load by 1/beta."""
    if not (beta > 0 and math.isfinite(beta)):
        raise TraceError(f"time_scale: beta must be a positive number, not {beta}")
    scaled = pc.multiply(table.column("arrival"), float(beta))
    return add_transform(_replace(table, "arrival", scaled), "time_scale", beta=beta)
