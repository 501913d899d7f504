"""Metrics of a finished run, with 95% batch-means confidence intervals and an instability test.

Everything here is computed from sums the compiled loop streamed into the state (engine.accounting,
engine.loop): nothing per job is kept. Measurement window, for a run of N arrivals: jobs from
arrival number ``floor(warmup * N)`` on (per-job metrics) and times from that job's arrival to the
last arrival (time averages); for a run of horizon H: jobs arriving in [warmup * H, H] and times in
that interval. The window is cut into B batches (``run.batches``, default 20): equal time spans for
time averages, equal numbers of consecutive arrivals (or equal arrival-time spans, horizon runs)
for per-job metrics. Each metric's 95% interval is the Student-t interval of the batch means
(B - 1 degrees of freedom) around the overall estimate. Quantiles come from the mergeable sketch of
:mod:`schedlab.engine.sketch` (relative error 0.5%, interpolated within a bucket by
:mod:`schedlab.measurement.quantiles`), with a sectioning interval from the batch quantiles
(interpolated too: never rounded to the buckets).

Per-job metrics: response time (finish - arrival), waiting time (first start - arrival),
slowdown response / work and bounded slowdown max(response / max(work, tau), 1) with tau =
``run.slowdown_threshold`` (10 time units by default: the usual 10 s of the HPC literature,
Feitelson et al., "Theory and practice in parallel job scheduling", 1997, when the time unit is
the second, as in every converted trace), over completed measured jobs, with their p50, p90, p95
and p99; the loss probability (loss family only) over measured arrivals. A finite log replay
(``finite``) also has its makespan: from the first measured arrival to the last completion, a
measured value of the one replay (no interval: it is not an estimate of a mean).

Instability: :func:`schedlab.measurement.stability.trend` (a regression of the number in system over
the window); known stability limits are applied where the result is assembled
(simulation/simulate.py). A finite replay has no steady state to have or miss: a growing number in
system is reported as a backlog note (``RunMetrics.backlog``), never as instability.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from schedlab.engine import constants as K
from schedlab.engine import sketch
from schedlab.engine.state import State
from schedlab.measurement.quantiles import quantiles
from schedlab.measurement.stability import trend

QUANTILES = (0.5, 0.9, 0.95, 0.99)
BACKLOG = "backlog grew over the whole log: a transient, not a steady state"


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% confidence interval (Student t with ``dof`` degrees).

    ``reliable`` is False when this metric's interval cannot be taken as an estimate (set where
    the result is assembled, measurement/reliability.py; the reason is in ``Result.unreliable``).
    ``batches``: the batch values the interval came from, in batch order (NaN for a batch
    without a value): another run of the same jobs has the same batches, so two runs compare
    batch by batch (paired batch means, experiments/stats.py)."""

    mean: float
    ci95: tuple[float, float]
    dof: int = 0
    reliable: bool = True
    batches: tuple[float, ...] = field(default=(), repr=False, compare=False)

    def __repr__(self) -> str:
        lo, hi = self.ci95
        flag = "" if self.reliable else ", reliable=False"
        return f"Estimate(mean={_short(self.mean)}, ci95=({_short(lo)}, {_short(hi)}){flag})"

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
        half = self.half_width * t_quantile(0.5 + level / 2, self.dof) / _t975(self.dof)
        return (self.mean - half, self.mean + half)

    def covers(self, value: float, level: float = 0.95) -> bool:
        lo, hi = self.interval(level)
        return lo <= value <= hi

    def to_dict(self) -> dict[str, object]:
        return {
            "mean": _finite(self.mean),
            "ci95": [_finite(self.ci95[0]), _finite(self.ci95[1])],
            "reliable": self.reliable,
        }


def _short(x: float) -> str:
    """A plain float with 4 significant digits (never ``np.float64(...)``)."""
    return f"{float(x):.4g}"


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def t_quantile(p: float, dof: int) -> float:
    """The p-quantile of Student's t with ``dof`` degrees of freedom (what ``scipy.stats.t.ppf``
    computes, through ``scipy.special.stdtrit``, without importing scipy.stats: about a second
    of every run's start-up)."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, p))


# t_{0.975, dof} for dof = 1 .. 63, the numbers scipy.special.stdtrit gives (checked against it
# by tests/measurement/test_t975.py): the intervals of runs of up to 64 batches or replications
# need no scipy import (0.2-0.4 s of a short run's start-up, issue 33).
# fmt: off
T975 = (
    12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934,
    2.5705818356363146, 2.4469118511449786, 2.364624251592784, 2.306004135204166,
    2.262157162798205, 2.228138851986274, 2.200985160091639, 2.1788128296672284,
    2.1603686564627913, 2.144786687917804, 2.131449545559776, 2.1199052992212546,
    2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
    2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245,
    2.0595385527532972, 2.0555294386428735, 2.0518305164802846, 2.0484071417952454,
    2.045229642132703, 2.0422724563012378, 2.039513446396408, 2.0369333434601016,
    2.0345152974493383, 2.0322445093177186, 2.030107928250343, 2.0280940009804502,
    2.0261924630291093, 2.0243941639119694, 2.022690920036761, 2.021075390306273,
    2.019540970441376, 2.0180817028184443, 2.016692199227824, 2.0153675744437636,
    2.014103388880846, 2.012895598919429, 2.0117405137297655, 2.010634757624232,
    2.0095752371292392, 2.008559112100761, 2.007583770315836, 2.006646805061688,
    2.0057459953178687, 2.0048792881880564, 2.0040447832891455, 2.003240718847872,
    2.002465459291007, 2.0017174841452356, 2.000995378088267, 2.0002978220142604,
    1.999623584994939, 1.9989715170333788, 1.998340542520741,
)
# fmt: on


@functools.lru_cache(maxsize=256)
def _t975(dof: int) -> float:
    if 1 <= dof <= len(T975):
        return T975[dof - 1]
    return t_quantile(0.975, dof)


def t_interval(center: float, samples: np.ndarray) -> Estimate:
    """center +- t_{0.975, n-1} * sd(samples) / sqrt(n); the samples are kept in the estimate
    (``Estimate.batches``)."""
    kept = tuple(float(x) for x in samples)
    samples = samples[np.isfinite(samples)]
    n = samples.size
    if n < 2 or not math.isfinite(center):
        return Estimate(center, (math.nan, math.nan), batches=kept)
    half = _t975(n - 1) * samples.std(ddof=1) / math.sqrt(n)
    return Estimate(center, (center - half, center + half), n - 1, batches=kept)


def _ratio_metric(num: np.ndarray, den: np.ndarray) -> Estimate:
    """sum(num) / sum(den) with a batch-means interval over the batches' num / den."""
    total = den.sum()
    if total <= 0:
        return Estimate(math.nan, (math.nan, math.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_batch = np.where(den > 0, num / np.where(den > 0, den, 1.0), math.nan)
    return t_interval(float(num.sum() / total), per_batch)


def _quantile_metrics(sketches: np.ndarray, name: str, least: float = 0.0) -> dict[str, Estimate]:
    """``p50_<name>`` ... for QUANTILES: the whole window's quantile with a sectioning interval
    from the batches' quantiles. ``least``: the smallest value the metric takes (1 for bounded
    slowdowns: a value interpolated in the bucket (1 / (1 + ALPHA), 1] may lie up to 0.5% below it,
    never the true value)."""
    per_batch = np.cumsum(sketches, axis=1)
    whole = np.cumsum(sketches.sum(axis=0))[None, :]
    out = {}
    for q in QUANTILES:
        center = float(np.maximum(quantiles(whole, q)[0], least))
        out[f"p{round(q * 100)}_{name}"] = (
            t_interval(center, np.maximum(quantiles(per_batch, q), least))
            if math.isfinite(center)
            else Estimate(math.nan, (math.nan, math.nan))
        )
    return out


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
    backlog: str | None = None  # a finite replay whose number in system grew (BACKLOG)


def loss_rates(st: State) -> dict[str, Estimate]:
    """Loss family (psychas2022 §2, §7): the reward rate per server (time average over the window,
    batch-means CI). Migrations and preemptions are whole-run counts without an interval (the
    engine's counters are not batched): they are in the counters, not the metrics."""
    n_servers = float(st.capacity.shape[0])
    return {"reward_rate_per_server": _time_metric(st.acc, K.A_REWARD, n_servers)}


def compute_metrics(
    st: State,
    *,
    batches: int,
    resources: tuple[str, ...],
    class_names: tuple[str, ...],
    loss: bool,
    finite: bool = False,
) -> RunMetrics:
    """All metrics of one finished run (module docstring for the method)."""
    j = st.jacc
    done = j[:, K.J_DONE]
    m: dict[str, Estimate] = {}
    m["mean_response_time"] = _ratio_metric(j[:, K.J_RESPONSE], done)
    m["mean_waiting_time"] = _ratio_metric(j[:, K.J_WAITING], done)
    m["mean_slowdown"] = _ratio_metric(j[:, K.J_SLOWDOWN], done)
    m["mean_bounded_slowdown"] = _ratio_metric(j[:, K.J_BSLD], done)
    if st.ctr[K.QUANTILES]:  # (run.quantiles)
        m.update(_quantile_metrics(st.sk_response, "response_time"))
        m.update(_quantile_metrics(st.sk_waiting, "waiting_time"))
        m.update(_quantile_metrics(st.sk_bsld, "bounded_slowdown", least=1.0))
    acc = st.acc
    m["mean_number_in_system"] = _time_metric(acc, K.A_SYSTEM)
    m["mean_number_in_queue"] = _time_metric(acc, K.A_QUEUE)
    total_capacity = st.capacity.sum(axis=0)
    for r, name in enumerate(resources):
        m[f"utilization[{name}]"] = _time_metric(
            acc, K.A_FIRST_RESOURCE + r, float(total_capacity[r])
        )
    if loss:  # rewards are defined in the loss family only (psychas2022)
        m["reward_rate"] = _time_metric(acc, K.A_REWARD)
    if acc[:, K.A_TIME].sum() > 0:
        m["throughput"] = _time_metric(acc, K.A_COMPLETIONS)
    if loss:
        m["loss_probability"] = _ratio_metric(j[:, K.J_LOST], j[:, K.J_ARRIVED])
        m.update(loss_rates(st))
    n_res = len(resources)
    n_cls = len(class_names)
    if n_cls > 1:
        for c, name in enumerate(class_names):
            base = K.J_FIRST_CLASS + K.J_PER_CLASS * c
            m[f"mean_response_time[{name}]"] = _ratio_metric(
                j[:, base + K.J_C_RESPONSE], j[:, base + K.J_C_DONE]
            )
            m[f"mean_number_in_system[{name}]"] = _time_metric(acc, K.A_FIRST_RESOURCE + n_res + c)
            m[f"mean_number_in_queue[{name}]"] = _time_metric(
                acc, K.A_FIRST_RESOURCE + n_res + n_cls + c
            )
            if loss:
                m[f"loss_probability[{name}]"] = _ratio_metric(
                    j[:, base + K.J_C_LOST], j[:, base + K.J_C_ARRIVED]
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
        "peak_jobs_in_system": int(ctr[K.PEAK_IN_SYSTEM]),
        "peak_job_slots": int(ctr[K.PEAK_SLOTS]),
    }
    warnings: list[str] = []
    reason = trend(acc)
    backlog = None
    if finite and reason is not None:
        level = acc[:, K.A_SYSTEM] / acc[:, K.A_TIME]
        backlog = f"{BACKLOG} (number in system {level[0]:.4g} -> {level[-1]:.4g})"
        reason = None
    stuck = ctr[K.N_WAITING] + ctr[K.N_RUNNING]
    if finite and ctr[K.DRAIN] and not stuck and done.sum() > 0:
        span = float(st.clk[K.NOW] - st.clk[K.T_WARM])
        m["makespan"] = Estimate(span, (math.nan, math.nan))
    if stuck and ctr[K.DRAIN] and reason is None:
        reason = f"{stuck} jobs were never completed: the policy left them waiting forever"
    elif stuck and not ctr[K.DRAIN]:
        warnings.append(
            f"{stuck} jobs still in the system at the last arrival (run.drain = false): "
            "response-time metrics cover completed jobs only"
        )
    if ctr[K.OVERFLOW]:
        warnings.append(
            f"{int(ctr[K.OVERFLOW])} response/waiting times above {sketch.MAX_VALUE:g}: their "
            "percentiles are not guaranteed to 0.5%"
        )
    measured = int(done.sum())
    if not loss and measured < 30 * batches:
        warnings.append(
            f"only {measured} jobs measured after warm-up: confidence intervals are unreliable"
        )
    return RunMetrics(
        metrics=m, counters=counters, instability=reason, warnings=warnings, backlog=backlog
    )
