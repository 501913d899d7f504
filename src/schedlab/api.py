"""The Python API: :func:`simulate` (one spec, replications in parallel if asked) and
:func:`sweep` (an experiment spec, the same file ``schedlab run`` takes) returning
:class:`SweepResults`, a table of runs with per-point summaries.

```python
import schedlab

res = schedlab.sweep("src/schedlab/examples/sf-vs-fcfs.toml", workers=2, out="out/sf-vs-fcfs")
res.summary()            # one row per point (variant x swept axes): mean and 95% CI per metric
res.to_pandas()          # one row per run (the optional extra: pip install 'schedlab[pandas]')
```
"""

from __future__ import annotations

import html
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.errors import SchedlabError, unknown_name

if TYPE_CHECKING:
    import pyarrow as pa

    from schedlab.experiments.spec import Experiment
    from schedlab.model.spec import SimulationSpec
    from schedlab.simulation.result import Result

Progress = Callable[[int, int], None]
PANDAS_MISSING = "to_pandas() needs pandas, an optional extra: pip install 'schedlab[pandas]'"


class UnknownName(SchedlabError):
    """An unknown metric or column was asked for; the message suggests the closest name."""


def _load_plugins(plugins: Sequence[str | Path]) -> None:
    from schedlab.plugins import load_plugin

    for path in plugins:
        load_plugin(path)


# --- simulate ----------------------------------------------------------------------------------


def simulate(
    spec: SimulationSpec | dict[str, Any] | str | Path,
    *,
    workers: int | None = None,
    client: Any = None,
    progress: Progress | None = None,
    plugins: Sequence[str | Path] = (),
) -> Result:
    """Run a simulation spec (object, dict or TOML path) and return its :class:`Result`.

    With ``run.replications = R > 1`` the R independent replications are combined: each metric is
    the mean of the replication means with a Student-t 95% interval (R - 1 degrees of freedom);
    if any replication is unstable the combined result is unstable and its means are NaN.
    ``result.replications`` holds the individual results. ``workers=W`` runs the replications on
    W local processes, ``client`` (a ``distributed.Client`` or a scheduler address) on a Dask
    cluster; the results are the same as serially (each replication has its own random streams).
    ``plugins`` are policy plugin files to import first (see docs/writing-policies.md).
    """
    from schedlab.errors import SpecError
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import errors_located_in
    from schedlab.simulation.simulate import as_spec, simulate_model
    from schedlab.spec_kind import expect_kind

    _load_plugins(plugins)
    if isinstance(spec, dict):
        expect_kind(spec, "simulation")
    path = spec if isinstance(spec, str | Path) else None
    with errors_located_in(path):
        model = compile_model(as_spec(spec))
    replications = model.spec.run.replications
    if replications == 1 or (client is None and (workers or 1) == 1):
        try:
            return simulate_model(model, progress=progress)
        except (ValueError, ArithmeticError) as exc:  # a value no check above foresaw
            raise SpecError(
                f"the spec's values cannot be simulated: {exc}", file=str(path) if path else None
            ) from None
    return _parallel_replications(model.spec, replications, workers, client, progress)


def _parallel_replications(
    spec: SimulationSpec,
    replications: int,
    workers: int | None,
    client: Any,
    progress: Progress | None,
) -> Result:
    from concurrent.futures import as_completed

    from schedlab.experiments.run_rows import canonical_json
    from schedlab.experiments.runner import (
        Task,
        dask_client,
        default_workers,
        replicate,
        worker_pool,
    )
    from schedlab.plugins import loaded_plugin_files
    from schedlab.simulation.result import combine_replications

    spec_json = canonical_json(spec)
    plugins = loaded_plugin_files()
    per_run = spec.run.arrivals or 0
    results: dict[int, Result] = {}

    def finished(replication: int, result: Result) -> None:
        results[replication] = result
        if progress is not None:
            progress(len(results) * per_run, replications * per_run)

    if client is not None:
        from dask.distributed import as_completed as dask_completed

        dask, owned = dask_client(client)
        try:
            futures = {
                dask.submit(replicate, Task(spec_json, r), plugins, pure=False): r
                for r in range(replications)
            }
            for fut in dask_completed(list(futures)):
                finished(futures[fut], fut.result())
        finally:
            if owned:
                dask.close()
    else:
        with worker_pool(min(workers or default_workers(), replications), [spec_json]) as pool:
            futures = {
                pool.submit(replicate, Task(spec_json, r), plugins): r for r in range(replications)
            }
            for fut in as_completed(futures):
                finished(futures[fut], fut.result())
    return combine_replications([results[r] for r in range(replications)])


# --- sweep -------------------------------------------------------------------------------------


def load_any_experiment(spec: Experiment | dict[str, Any] | str | Path) -> Experiment:
    """An experiment from a TOML path, a dict (the same fields) or an Experiment."""
    from schedlab.experiments.spec import Experiment, load_experiment, parse_experiment

    if isinstance(spec, Experiment):
        return spec
    if isinstance(spec, dict):
        return parse_experiment(spec)
    return load_experiment(spec)


def save_experiment(exp: Experiment, target: Path) -> None:
    """Keep the experiment spec (and a base spec file) with its results, for reports."""
    from schedlab import outputs

    folder = outputs.make_dirs(outputs.inside(target, "experiments"))
    outputs.write_text(outputs.inside(folder, f"{exp.spec.name}.toml"), exp.source)
    if isinstance(exp.spec.base, str):
        spec_folder = exp.path.parent if exp.path is not None else Path.cwd()
        outputs.write_text(
            outputs.inside(folder, f"{exp.spec.name}.base.toml"),
            (spec_folder / exp.spec.base).read_text(),
        )


def sweep(
    spec: Experiment | dict[str, Any] | str | Path,
    *,
    workers: int | None = None,
    client: Any = None,
    out: str | Path | None = None,
    progress: Progress | None = None,
    plugins: Sequence[str | Path] = (),
) -> SweepResults:
    """Run an experiment spec (the file ``schedlab run`` takes, or the same fields as a dict).

    ``workers`` local processes (default: every core) or a Dask ``client`` (a
    ``distributed.Client`` or a scheduler address) run the runs. With ``out`` the runs are stored
    in that result directory as they end and a rerun skips them (``schedlab results/plot/report``
    read it); without it they are kept in a temporary directory, removed on return.
    ``progress(done, total)`` is called as runs finish.
    """
    _load_plugins(plugins)
    exp = load_any_experiment(spec)
    if out is not None:
        return run_experiment(exp, Path(out), workers=workers, client=client, progress=progress)
    with tempfile.TemporaryDirectory(prefix="schedlab-sweep-") as tmp:
        res = run_experiment(exp, Path(tmp), workers=workers, client=client, progress=progress)
    res.directory = None
    return res


def run_experiment(
    exp: Experiment,
    target: Path,
    *,
    workers: int | None = None,
    client: Any = None,
    security: Any = None,
    progress: Progress | None = None,
) -> SweepResults:
    """Run (or resume) an experiment into the result directory ``target`` (``security``: Dask
    TLS settings, docs/guarantees.md#dask)."""
    from schedlab.experiments.runner import run_tasks
    from schedlab.experiments.store import ResultStore

    store = ResultStore(target)
    store.ensure_writable()
    tasks = exp.tasks()
    save_experiment(exp, target)
    done = run_tasks(
        tasks, store, workers=workers, cluster=client, security=security, progress=progress
    )
    hashes = list(dict.fromkeys(t.hash for t in tasks))
    return SweepResults(
        name=exp.spec.name,
        rows=store.read(hashes),
        metrics=list(exp.spec.outputs.metrics),
        directory=target,
        ran=done.ran,
        cached=done.cached,
        elsewhere=done.elsewhere,
    )


# --- results -----------------------------------------------------------------------------------


def axes_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The swept axes of stored runs, in order (``variant`` only when there are variants)."""
    names: list[str] = []
    for row in rows:
        for a in json.loads(row.get("axes") or "[]"):
            if a not in names:
                names.append(a)
    return [a for a in names if a != "variant" or any(r.get("variant") for r in rows)]


def known_metrics(rows: Sequence[dict[str, Any]]) -> list[str]:
    columns = set().union(*(r.keys() for r in rows)) if rows else set()
    return sorted(c for c in columns if f"{c}_lo" in columns)


def check_metrics(rows: Sequence[dict[str, Any]], metrics: Sequence[str]) -> None:
    """Raise :class:`UnknownName` (with the closest name) for a metric no run has."""
    known = known_metrics(rows)
    for m in metrics:
        if rows and m not in known:
            raise UnknownName(unknown_name("metric", m, known))


def point_summary(
    rows: Sequence[dict[str, Any]], metrics: Sequence[str], by: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One row per point (``experiment`` x variant x swept axes by default): its number of runs,
    and per metric the mean and 95% interval (``m``, ``m_lo``, ``m_hi``) over the replications
    (Student t) or of the single run (batch means), whether that interval can be trusted
    (``m_reliable``; ``m_note`` says why not); NaN for an unstable point (``stable`` false,
    ``instability`` says why). Every row has the same columns. Sorted by the key columns."""
    from schedlab.experiments.stats import point_order, summarize

    check_metrics(rows, metrics)
    if not rows or not metrics:
        return []
    by = list(by) if by is not None else ["experiment", *axes_of(rows)]
    stats = {m: {s.key: s for s in summarize(rows, by, m)} for m in metrics}
    first = stats[metrics[0]]
    out = []
    for key in sorted(first, key=point_order):
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["runs"] = first[key].n
        for m in metrics:
            s = stats[m][key]
            row[m], row[f"{m}_lo"], row[f"{m}_hi"] = s.mean, s.lo, s.hi
            row[f"{m}_reliable"], row[f"{m}_note"] = s.reliable, "" if s.reliable else s.note
        row["stable"] = first[key].stable
        row["instability"] = first[key].note if not first[key].stable else ""
        out.append(row)
    return out


def _require_pandas() -> None:
    try:
        import pandas  # noqa: F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError(PANDAS_MISSING) from None


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}" if math.isfinite(x) else "—"
    return str(x)


@dataclass
class SweepResults:
    """The runs of a sweep: one record per run (spec hash, axes, metrics with ``_lo``/``_hi``,
    stability, timing). ``summary()`` aggregates them per point."""

    name: str
    rows: list[dict[str, Any]]
    metrics: list[str]
    directory: Path | None = None
    ran: int = 0
    cached: int = 0
    elsewhere: int = 0  # runs another sweep on the same directory stored

    @property
    def axes(self) -> list[str]:
        return axes_of(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def to_arrow(self) -> pa.Table:
        """One row per run, every stored column."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.rows)

    def to_pandas(self) -> Any:
        """One row per run as a pandas DataFrame (pandas is the optional extra ``[pandas]``)."""
        _require_pandas()
        return self.to_arrow().to_pandas()

    def summary_rows(self, metrics: Sequence[str] | None = None) -> list[dict[str, Any]]:
        rows = point_summary(self.rows, list(metrics or self.metrics), ["experiment", *self.axes])
        if len({r["experiment"] for r in rows}) <= 1:
            for r in rows:
                del r["experiment"]
        return rows

    def summary(self, metrics: Sequence[str] | None = None) -> pa.Table:
        """One row per point (variant x swept axes): ``runs``, and for each metric (default: the
        experiment's ``outputs.metrics``) its mean and 95% CI as ``m``, ``m_lo``, ``m_hi``;
        NaN where the point is unstable. Unknown metrics raise with a suggestion."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.summary_rows(metrics))

    def __repr__(self) -> str:
        points = len({r.get("point") for r in self.rows})
        where = f", stored in {self.directory}" if self.directory else ""
        return (
            f"SweepResults({self.name!r}: {len(self.rows)} runs at {points} points; "
            f"axes {', '.join(self.axes) or 'none'}; metrics {', '.join(self.metrics)}{where})"
        )

    def _repr_html_(self) -> str:
        rows = self.summary_rows()
        metrics = self.metrics
        keys = [c for c in (rows[0] if rows else {}) if c not in _value_columns(metrics)]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in [*keys, *metrics])
        body = []
        for r in rows:
            cells = [html.escape(_fmt(r[c])) for c in keys]
            for m in metrics:
                if not r["stable"]:
                    cells.append('<span style="color:#b00">unstable</span>')
                elif not r[f"{m}_reliable"]:  # no interval that cannot be right (as the CLI)
                    note = html.escape(r[f"{m}_note"])
                    flag = '<span style="color:#a60">unreliable</span>'
                    cells.append(f"{flag} ({_fmt(r[m])}; {note})")
                elif math.isfinite(r[f"{m}_lo"]):
                    cells.append(f"{_fmt(r[m])} [{_fmt(r[f'{m}_lo'])}, {_fmt(r[f'{m}_hi'])}]")
                else:
                    cells.append(_fmt(r[m]))
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        return (
            f"<p><b>{html.escape(self.name)}</b>: {len(self.rows)} runs; "
            "mean [95% CI] per point</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )


def _value_columns(metrics: Sequence[str]) -> set[str]:
    names = {"stable", "instability"}
    for m in metrics:
        names |= {m, f"{m}_lo", f"{m}_hi", f"{m}_reliable", f"{m}_note"}
    return names
