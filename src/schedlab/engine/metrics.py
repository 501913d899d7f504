"""Metrics of a finished run, with 95% batch-means confidence intervals and an instability test.

Measurement window: jobs from index ``floor(warmup * N)`` on (response-time metrics) and times from
that job's arrival to the last arrival (time-average metrics). The window is cut into B batches
(``run.batches``, default 20): equal time spans for time averages, equal numbers of consecutive
arrivals for per-job metrics. Each metric's 95% interval is the Student-t interval of the batch
means (B - 1 degrees of freedom) around the overall estimate. Quantiles get a sectioning interval
from the batch quantiles.

Instability: :func:`schedlab.engine.stability.trend` (a regression of the number in system over
the window); known stability limits are applied where the result is assembled
(simulation/simulate.py).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from schedlab.engine import constants as K
from schedlab.engine.stability import trend
from schedlab.engine.state import State

QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% confidence interval (Student t with ``dof`` degrees)."""

    mean: float
    ci95: tuple[float, float]
    dof: int = 0

    def __repr__(self) -> str:
        lo, hi = self.ci95
        return f"Estimate(mean={_short(self.mean)}, ci95=({_short(lo)}, {_short(hi)}))"

    def short(self) -> str:
        """``1.63 [1.57, 1.69]`` (the interval left out when there is none)."""
        if not math.isfinite(self.ci95[0]):
            return _short(self.mean)
        return f"{_short(self.mean)} [{_short(self.ci95[0])}, {_short(self.ci95[1])}]"

    @property
    def half_width(self) -> float:
        return (self.ci95[1] - self.ci95[0]) / 2.0

    def interval(self, level: float) -> tuple[float, float]:
        """The interval at another confidence level, from the same batch means."""
        if self.dof < 1:
            return (math.nan, math.nan)
        half = (
            self.half_width * stats.t.ppf(0.5 + level / 2, self.dof) / stats.t.ppf(0.975, self.dof)
        )
        return (self.mean - half, self.mean + half)

    def covers(self, value: float, level: float = 0.95) -> bool:
        lo, hi = self.interval(level)
        return lo <= value <= hi

    def to_dict(self) -> dict[str, object]:
        return {"mean": _finite(self.mean), "ci95": [_finite(self.ci95[0]), _finite(self.ci95[1])]}


def _short(x: float) -> str:
    """A plain float with 4 significant digits (never ``np.float64(...)``)."""
    return f"{float(x):.4g}"


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def t_interval(center: float, samples: np.ndarray) -> Estimate:
    """center +- t_{0.975, n-1} * sd(samples) / sqrt(n)."""
    samples = samples[np.isfinite(samples)]
    n = samples.size
    if n < 2 or not math.isfinite(center):
        return Estimate(center, (math.nan, math.nan))
    half = stats.t.ppf(0.975, n - 1) * samples.std(ddof=1) / math.sqrt(n)
    return Estimate(center, (center - half, center + half), n - 1)


def _index_batches(lo: int, hi: int, batches: int) -> list[tuple[int, int]]:
    edges = np.linspace(lo, hi, batches + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges) if b > a]


def _job_metric(
    values: np.ndarray, valid: np.ndarray, spans: list[tuple[int, int]], offset: int
) -> Estimate:
    """Mean of values[valid] with a batch-means interval over consecutive-arrival batches."""
    if not valid.any():
        return Estimate(math.nan, (math.nan, math.nan))
    means = np.array(
        [
            values[a - offset : b - offset][valid[a - offset : b - offset]].mean()
            if valid[a - offset : b - offset].any()
            else math.nan
            for a, b in spans
        ]
    )
    return t_interval(float(values[valid].mean()), means)


def _quantile_metric(
    values: np.ndarray, valid: np.ndarray, spans: list[tuple[int, int]], offset: int, q: float
) -> Estimate:
    if not valid.any():
        return Estimate(math.nan, (math.nan, math.nan))
    per_batch = np.array(
        [
            np.quantile(values[a - offset : b - offset][valid[a - offset : b - offset]], q)
            if valid[a - offset : b - offset].any()
            else math.nan
            for a, b in spans
        ]
    )
    return t_interval(float(np.quantile(values[valid], q)), per_batch)


def _time_metric(acc: np.ndarray, column: int, scale: float = 1.0) -> Estimate:
    time = acc[:, K.A_TIME]
    total = time.sum()
    if total <= 0:
        return Estimate(math.nan, (math.nan, math.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_batch = acc[:, column] / time / scale
    return t_interval(float(acc[:, column].sum() / total / scale), per_batch)


@dataclass(frozen=True)
class RunMetrics:
    metrics: dict[str, Estimate]
    counters: dict[str, int]
    instability: str | None
    warnings: list[str]


def loss_rates(st: State) -> dict[str, Estimate]:
    """Loss family (paper 002 §2, §7): the reward rate per server (time average over the window,
    batch-means CI) and migrations and preemptions per unit time over the whole run (counts of
    the engine's counters divided by the run's length; no interval: the counters are not
    batched)."""
    n_servers = float(st.capacity.shape[0])
    out = {"reward_rate_per_server": _time_metric(st.acc, K.A_REWARD, n_servers)}
    length = float(st.clk[K.NOW])
    for name, column in (("migration_rate", K.MIGRATIONS), ("preemption_rate", K.PREEMPTIONS)):
        rate = st.ctr[column] / length if length > 0 else math.nan
        out[name] = Estimate(float(rate), (math.nan, math.nan))
    return out


def compute_metrics(
    st: State,
    *,
    warmup_jobs: int,
    batches: int,
    resources: tuple[str, ...],
    class_names: tuple[str, ...],
    loss: bool,
) -> RunMetrics:
    """All metrics of one finished run (module docstring for the method)."""
    n = st.arrival.shape[0]
    lo = min(warmup_jobs, n - 1)
    spans = _index_batches(lo, n, batches)
    status = st.status[lo:]
    done = status == K.DONE
    arrival = st.arrival[lo:]
    response = st.t_finish[lo:] - arrival
    waiting = st.t_start[lo:] - arrival
    m: dict[str, Estimate] = {}
    m["mean_response_time"] = _job_metric(response, done, spans, lo)
    m["mean_waiting_time"] = _job_metric(waiting, done, spans, lo)
    for q in QUANTILES:
        m[f"p{round(q * 100)}_response_time"] = _quantile_metric(response, done, spans, lo, q)
    acc = st.acc
    m["mean_number_in_system"] = _time_metric(acc, K.A_SYSTEM)
    m["mean_number_in_queue"] = _time_metric(acc, K.A_QUEUE)
    total_capacity = st.capacity.sum(axis=0)
    for r, name in enumerate(resources):
        m[f"utilization[{name}]"] = _time_metric(
            acc, K.A_FIRST_RESOURCE + r, float(total_capacity[r])
        )
    m["reward_rate"] = _time_metric(acc, K.A_REWARD)
    window = st.batch_edges
    finish = st.t_finish[np.isfinite(st.t_finish)]
    counts = np.histogram(finish, bins=window)[0]
    lengths = np.diff(window)
    if lengths.sum() > 0:
        m["throughput"] = t_interval(float(counts.sum() / lengths.sum()), counts / lengths)
    if loss:
        m["loss_probability"] = _job_metric(
            (status == K.LOST).astype(float), np.ones_like(done), spans, lo
        )
        m.update(loss_rates(st))
    n_res = len(resources)
    n_cls = len(class_names)
    if n_cls > 1:
        cls = st.job_class[lo:]
        for c, name in enumerate(class_names):
            mine = cls == c
            m[f"mean_response_time[{name}]"] = _job_metric(response, done & mine, spans, lo)
            m[f"mean_number_in_system[{name}]"] = _time_metric(acc, K.A_FIRST_RESOURCE + n_res + c)
            m[f"mean_number_in_queue[{name}]"] = _time_metric(
                acc, K.A_FIRST_RESOURCE + n_res + n_cls + c
            )
            if loss:
                m[f"loss_probability[{name}]"] = _job_metric(
                    (status == K.LOST).astype(float), mine, spans, lo
                )
    ctr = st.ctr
    counters = {
        "arrivals": int(ctr[K.ARRIVED]),
        "completions": int(ctr[K.N_DONE]),
        "lost": int(ctr[K.N_LOST]),
        "still_in_system": int(ctr[K.N_WAITING] + ctr[K.N_RUNNING]),
        "starts": int(ctr[K.STARTS]),
        "preemptions": int(ctr[K.PREEMPTIONS]),
        "migrations": int(ctr[K.MIGRATIONS]),
        "rejections": int(ctr[K.REJECTIONS]),
        "dropped": int(ctr[K.DROPPED]),
        "reallocations": int(ctr[K.REALLOCATIONS]),
        "stalls": int(ctr[K.STALLS]),
        "decisions": int(ctr[K.DECISIONS]),
        "events": int(ctr[K.EVENTS]),
    }
    warnings: list[str] = []
    reason = trend(acc)
    stuck = ctr[K.N_WAITING] + ctr[K.N_RUNNING]
    if stuck and ctr[K.DRAIN] and reason is None:
        reason = f"{stuck} jobs were never completed: the policy left them waiting forever"
    elif stuck and not ctr[K.DRAIN]:
        warnings.append(
            f"{stuck} jobs still in the system at the last arrival (run.drain = false): "
            "response-time metrics cover completed jobs only"
        )
    measured = int(done.sum())
    if not loss and measured < 30 * batches:
        warnings.append(
            f"only {measured} jobs measured after warm-up: confidence intervals are unreliable"
        )
    return RunMetrics(metrics=m, counters=counters, instability=reason, warnings=warnings)
