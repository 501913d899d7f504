"""The canonical job table that traces are replayed from.

Columns (Parquet or CSV): ``arrival`` and ``duration`` (required, in the trace's time unit),
``need`` (server need, pooled family), ``demand_<resource>`` (normalized demand per named resource,
packing and loss families; ``demand`` for a single unnamed resource), and optionally ``estimate``
(the user's duration estimate), ``priority``, ``job_class`` and ``source_id``. The trace readers
(``schedlab trace convert``, :mod:`schedlab.workloads.traces`) write this table, sorted by arrival,
with demands normalized to one server; see docs/traces.md. Mapping per family: pooled replays use
``need`` (whole servers, <= k); single-resource packing/loss clusters use ``demand`` (or the only
demand column); clusters with named resources use ``demand_<resource>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from schedlab.errors import SpecError

SCALAR_DEMAND = "demand"


@dataclass(frozen=True)
class TraceTable:
    """A trace mapped onto one model: arrays sorted by arrival, times starting at 0."""

    arrival: np.ndarray
    duration: np.ndarray
    demand: np.ndarray  # (N, R)
    estimate: np.ndarray
    path: str
    job_class: np.ndarray | None = None  # the table's job_class column (-1 where missing)

    @property
    def rate(self) -> float:
        span = float(self.arrival[-1] - self.arrival[0])
        return (len(self.arrival) - 1) / span if span > 0 else float(len(self.arrival))

    @property
    def mean_duration(self) -> float:
        return float(self.duration.mean())

    @property
    def mean_demand(self) -> np.ndarray:
        """Demand per resource weighted by duration, so that load = rate * mean_demand * mean
        duration / capacity counts each job's demand-time product exactly."""
        return (self.demand * self.duration[:, None]).mean(axis=0) / self.mean_duration


def _read(path: Path, field: str) -> pa.Table:
    if not path.exists():
        raise SpecError(f"{path}: no such file", field=field)
    try:
        if path.suffix in (".parquet", ".pq"):
            return pq.read_table(path)
        return pacsv.read_csv(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SpecError(f"{path}: cannot read job table: {exc}", field=field) from None


def _column(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(float)


def read_trace_table(
    path: Path, *, family: str, resources: tuple[str, ...], capacity: np.ndarray, field: str
) -> TraceTable:
    """Read a canonical job table and map its demands onto the model's resources."""
    table = _read(Path(path), field)
    names = set(table.column_names)
    for required in ("arrival", "duration"):
        if required not in names:
            raise SpecError(f"{path}: the job table has no '{required}' column", field=field)
    if table.num_rows == 0:
        raise SpecError(f"{path}: the job table is empty", field=field)
    arrival = _column(table, "arrival")
    duration = _column(table, "duration")
    if family == "pooled":
        if "need" not in names:
            raise SpecError(
                f"{path}: the pooled family needs a 'need' column (server need); make one with "
                "`schedlab trace convert --need-from procs` (SWF) or `--need-from demand "
                "--need-units N` (N unit servers per server)",
                field=field,
            )
        demand = _column(table, "need")[:, None]
        whole = np.isfinite(demand[:, 0]) & (demand[:, 0] >= 1) & (demand[:, 0] % 1 == 0)
        if not whole.all():
            row = int(np.argmin(whole))
            raise SpecError(
                f"{path}: row {row + 1}: need {demand[row, 0]:g} is not a whole number of "
                "servers >= 1",
                field=field,
            )
    elif resources == ("resource",):
        cols = [c for c in table.column_names if c.startswith("demand")]
        if SCALAR_DEMAND in names:
            demand = _column(table, SCALAR_DEMAND)[:, None]
        elif len(cols) == 1:
            demand = _column(table, cols[0])[:, None]
        else:
            raise SpecError(
                f"{path}: a single-resource cluster needs one demand column; this table has "
                f"{', '.join(cols) or 'none'} (map them to one with the max-of-resources "
                "transform of `schedlab trace convert`)",
                field=field,
            )
    else:
        missing = [r for r in resources if f"demand_{r}" not in names]
        if missing:
            raise SpecError(
                f"{path}: no demand column for resource(s) {', '.join(missing)}", field=field
            )
        demand = np.column_stack([_column(table, f"demand_{r}") for r in resources])
    estimate = _column(table, "estimate") if "estimate" in names else np.full(len(arrival), np.nan)
    bad = ~(
        np.isfinite(arrival)
        & np.isfinite(duration)
        & (duration > 0)
        & np.all(np.isfinite(demand) & (demand >= 0), axis=1)
    )
    if bad.any():
        row = int(np.argmax(bad))
        raise SpecError(
            f"{path}: row {row + 1}: arrival, duration (> 0) and demand must be finite numbers",
            field=field,
        )
    fits = np.zeros(len(arrival), dtype=bool)
    for cap in np.unique(capacity, axis=0):
        fits |= np.all(demand <= cap + 1e-12, axis=1)
    if not fits.all():
        row = int(np.argmin(fits))
        if family == "pooled":
            raise SpecError(
                f"{path}: row {row + 1}: need {demand[row, 0]:g} exceeds the cluster's "
                f"{float(capacity[0, 0]):g} servers ({int((~fits).sum())} jobs do); set "
                "cluster.servers to the trace's k (`schedlab trace info` shows it)",
                field=field,
            )
        raise SpecError(
            f"{path}: row {row + 1}: demand {demand[row].tolist()} is larger than every server",
            field=field,
        )
    order = np.argsort(arrival, kind="stable")
    arrival = arrival[order] - arrival[order][0]
    job_class = None
    if "job_class" in names:
        column = table.column("job_class").fill_null(-1)
        job_class = column.to_numpy(zero_copy_only=False).astype(np.int32)[order]
    return TraceTable(
        arrival=arrival,
        duration=duration[order],
        demand=demand[order],
        estimate=estimate[order],
        path=str(path),
        job_class=job_class,
    )


def job_sizes(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The ``demand`` and ``duration`` columns of a single-resource job table, in table order
    (the size law of a trace: :meth:`schedlab.optim.rounded_bounds.SizeLaw.from_samples`)."""
    table = pq.read_table(path, columns=["demand", "duration"])
    return _column(table, "demand"), _column(table, "duration")
