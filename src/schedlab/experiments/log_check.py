"""Simulated against what the cluster really did (``schedlab compare`` on an SWF-derived trace).

* The log itself: the waits the jobs had on the real machine (SWF field 3, kept as ``trace_wait``
  by ``schedlab trace convert``), summarized as the simulated policies are: mean and p95 wait and
  the mean bounded slowdown max((wait + run) / max(run, tau), 1) with the same tau
  (``run.slowdown_threshold``; Feitelson et al. 1997's bounded slowdown). Jobs whose logged wait
  is unknown (-1) are left out, and counted.
* Validation: a given policy (``schedlab compare`` gives EASY backfilling with the users'
  requested times, Mu'alem & Feitelson 2001, the scheduler closest to what these machines ran),
  replayed at the log's own arrival times: its mean wait against the logged mean wait, and the
  correlation of the per-job waits, joined on the log's job id (Pearson on the waits, Spearman on
  their ranks). A real scheduler does more than the replay (priorities, fair share, advance
  reservations, downtime; docs/traces.md), so agreement is partial by nature: the line says how
  far the model is from the machine, not which is right.
* Views for the report: the validation run's per-job table (a Gantt chart of a window) and the
  time series (utilization, queue length) of the top three choices at the log's own load.

Compare's runs at the log's own load keep their per-job tables (``OUT/jobs/``), and the check
reads them: the validation is compare's own EASY run when it made one, and the time series are
drawn from the top three's per-job tables (:func:`series_from_jobs`), so the log is not replayed
again (issue 43). Memory: the jobs of one table at a time, never k per job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SERIES_POINTS = 500  # time series samples of each view run
LOG_ROW = "the log itself"  # its name in compare's table


@dataclass(frozen=True)
class LoggedWaits:
    """The log's own waits (time unit of the trace: seconds for SWF)."""

    jobs: int  # with a known logged wait
    unknown: int  # logged wait -1 (left out)
    mean_wait: float
    p95_wait: float
    mean_bounded_slowdown: float
    tau: float
    mean_response_time: float  # wait + run

    def record(self, load: float) -> dict[str, Any]:
        """The log as a row of compare's table (at the log's own ``load``; never ranked)."""
        return {
            "load": load,
            "rank": None,
            "policy": LOG_ROW,
            "mean_response_time": self.mean_response_time,
            "mean_waiting_time": self.mean_wait,
            "p95_waiting_time": self.p95_wait,
            "mean_bounded_slowdown": self.mean_bounded_slowdown,
            "lo": None,
            "hi": None,
            "stable": True,
            "reliable": True,
            "bound": False,
            "ratio_to_best": None,
        }

    def line(self) -> str:
        return (
            f"{LOG_ROW} ({self.jobs:,} jobs as the machine ran them): mean wait "
            f"{self.mean_wait:.4g} s, p95 wait {self.p95_wait:.4g} s, mean bounded slowdown "
            f"{self.mean_bounded_slowdown:.4g} (tau = {self.tau:g} s)"
            + (f"; {self.unknown:,} job(s) without a logged wait left out" if self.unknown else "")
        )


def bounded_slowdown(wait: np.ndarray, run: np.ndarray, tau: float) -> np.ndarray:
    """max((wait + run) / max(run, tau), 1) per job (the engine's definition)."""
    return np.maximum((wait + run) / np.maximum(run, tau), 1.0)


def logged_waits(path: Path, tau: float, jobs: int | None = None) -> LoggedWaits | None:
    """The log's waits from a canonical table (its first ``jobs`` rows in arrival order, as a
    run of that many arrivals replays), or None when the table keeps no logged wait or no job id
    (not an SWF log)."""
    if not {"trace_wait", "source_id"} <= set(pq.read_schema(path).names):
        return None  # the validation joins on the log's job id
    table = pq.read_table(path, columns=["arrival", "duration", "trace_wait"])
    order = np.argsort(table.column("arrival").to_numpy(), kind="stable")[:jobs]
    wait = table.column("trace_wait").to_numpy(zero_copy_only=False).astype(float)[order]
    run = table.column("duration").to_numpy().astype(float)[order]
    known = np.isfinite(wait) & (wait >= 0)
    if not known.any():
        return None
    wait, run = wait[known], run[known]
    return LoggedWaits(
        jobs=int(known.sum()),
        unknown=int((~known).sum()),
        mean_wait=float(wait.mean()),
        p95_wait=float(np.percentile(wait, 95)),
        mean_bounded_slowdown=float(bounded_slowdown(wait, run, tau).mean()),
        tau=tau,
        mean_response_time=float((wait + run).mean()),
    )


@dataclass(frozen=True)
class Validation:
    """A policy (``described``) at the log's own load against the log."""

    described: str  # e.g. "EASY with requested times (easy-backfill, durations = estimate)"
    load: float  # the log's own load
    simulated_mean_wait: float
    logged_mean_wait: float
    pearson: float
    spearman: float
    jobs: int  # joined on job id, both waits known

    def line(self) -> str:
        ratio = (
            self.simulated_mean_wait / self.logged_mean_wait if self.logged_mean_wait else math.nan
        )
        return (
            f"validation: {self.described} at the "
            f"log's own load {self.load:.3g}: mean wait {self.simulated_mean_wait:.4g} s against "
            f"the logged {self.logged_mean_wait:.4g} s (x{ratio:.3g}); per-job waits, joined on "
            f"the log's job id ({self.jobs:,} jobs): Pearson r = {self.pearson:.3f}, Spearman "
            f"rho = {self.spearman:.3f} (a real scheduler also has priorities, fair share, "
            "reservations and downtime: docs/traces.md)"
        )


def native_spec(base: dict[str, Any], policy: dict[str, Any], **run: Any) -> dict[str, Any]:
    """The comparison's workload replayed at the log's own arrival times (no load: the trace's
    own rate) under ``policy``, with ``run`` fields set (no per-job table unless asked: the
    comparison's own ``run.jobs`` is for its sweep's runs)."""
    workload = {k: v for k, v in base["workload"].items() if k != "load"}
    runs = {**base["run"], "jobs": False, **run}
    return {**base, "workload": workload, "policy": policy, "run": runs}


def _simulate(data: dict[str, Any]) -> Any:
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import parse_spec
    from schedlab.simulation.simulate import simulate_model

    return simulate_model(compile_model(parse_spec(data)))


def waits_joined(jobs: pa.Table, trace: Path) -> tuple[np.ndarray, np.ndarray]:
    """Simulated and logged waits of the jobs that ran to the end, joined on the log's job id
    (``log_job_id`` of the per-job table against ``source_id`` of the trace table); jobs with an
    unknown logged wait are left out."""
    done = jobs.filter(pa.compute.equal(jobs.column("status"), "done"))
    simulated = pa.table(
        {
            "id": done.column("log_job_id"),
            "simulated": pa.compute.subtract(done.column("start"), done.column("arrival")),
        }
    )
    logged = pq.read_table(trace, columns=["source_id", "trace_wait"]).rename_columns(
        ["id", "logged"]
    )
    joined = simulated.join(logged, "id", join_type="inner")
    sim = joined.column("simulated").to_numpy().astype(float)
    log = joined.column("logged").to_numpy(zero_copy_only=False).astype(float)
    known = np.isfinite(log) & (log >= 0)
    return sim[known], log[known]


def validation_of(jobs: pa.Table, trace: Path, described: str, load: float) -> Validation:
    """The validation (module docstring) of a replay at the log's own ``load`` whose per-job
    table is ``jobs``."""
    from scipy.stats import pearsonr, spearmanr

    sim, log = waits_joined(jobs, trace)
    varied = sim.size > 2 and np.ptp(sim) > 0 and np.ptp(log) > 0
    return Validation(
        described=described,
        load=float(load),
        simulated_mean_wait=float(sim.mean()) if sim.size else math.nan,
        logged_mean_wait=float(log.mean()) if log.size else math.nan,
        pearson=float(pearsonr(sim, log).statistic) if varied else math.nan,
        spearman=float(spearmanr(sim, log).statistic) if varied else math.nan,
        jobs=int(sim.size),
    )


def validate(
    base: dict[str, Any], trace: Path, policy: dict[str, Any], described: str
) -> tuple[Validation, Any]:
    """Replay the log under ``policy`` (a spec's ``[policy]`` table) at its own load (module
    docstring); the validation and the run's Result (its per-job table, for the Gantt chart)."""
    result = _simulate(native_spec(base, policy, jobs=True, check=False))
    return validation_of(result.jobs, trace, described, float(result.load)), result


def top_policies(ranked: list[Any], load: float, count: int = 3) -> list[str]:
    """The ``count`` best-ranked policies at the compared load nearest ``load`` (the log's own)."""
    loads = sorted({r.load for r in ranked if r.rank and not r.bound})
    if not loads:
        return []
    nearest = min(loads, key=lambda x: abs(x - load))
    rows = sorted(
        (r for r in ranked if r.load == nearest and r.rank and not r.group),
        key=lambda r: r.rank,
    )
    return [r.policy for r in rows if not r.bound][:count]


UTILIZATION = "utilization[servers]"  # the engine's time series column of the pooled servers


def series_from_jobs(jobs: pa.Table, k: int, points: int = SERIES_POINTS) -> pa.Table:
    """The utilization of the ``k`` servers and the number of waiting jobs at ``points`` evenly
    spaced times from 0 to the last finish, exact from a non-preemptive run's per-job table
    (a job waits over [arrival, start) and holds its need over [start, finish); a job still
    waiting or running at the end counts until then). Memory: a few arrays of the jobs."""
    arrival = jobs.column("arrival").to_numpy(zero_copy_only=False).astype(float)
    start = jobs.column("start").to_numpy(zero_copy_only=False).astype(float)
    finish = jobs.column("finish").to_numpy(zero_copy_only=False).astype(float)
    need = jobs.column("demand[servers]").to_numpy(zero_copy_only=False).astype(float)
    end = float(np.nanmax(np.concatenate([finish, start, arrival]), initial=0.0))
    start = np.where(np.isnan(start), np.inf, start)
    finish = np.where(np.isnan(finish), np.inf, finish)
    time = np.linspace(0.0, end, points)

    def count_at(t0: np.ndarray, t1: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """sum of ``weight`` over the jobs with t0 <= t < t1, at each sampled t."""
        begun = np.concatenate([[0.0], np.cumsum(weight[np.argsort(t0, kind="stable")])])
        ended = np.concatenate([[0.0], np.cumsum(weight[np.argsort(t1, kind="stable")])])
        began = begun[np.searchsorted(np.sort(t0), time, side="right")]
        over = ended[np.searchsorted(np.sort(t1), time, side="right")]
        return began - over

    return pa.table(
        {
            "time": time,
            UTILIZATION: count_at(start, finish, need) / float(k),
            "number_in_queue": count_at(arrival, start, np.ones_like(arrival)),
        }
    )
