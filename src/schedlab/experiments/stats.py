"""Per-point statistics over stored runs: means with 95% intervals, paired comparisons.

* One replication per point: the run's own batch-means interval; likewise when every replication
  gave the same value (replays of one log are identical: never a zero-width interval).
* Several replications: the mean of the replication means with a Student-t interval.
* A point with any unstable replication is unstable: no finite mean is reported for it.
* A stable point is unreliable for a metric (``reliable = False``, reason in ``note``) when its
  interval of that metric cannot be taken as an estimate (measurement/reliability.py: no finite
  interval, lower bound <= 0 for a positive metric, half-width over 50% of the mean; a lower bound
  below 0 is then cut at 0), one of its runs is shorter than the relaxation-time rule, or one of
  its runs has that metric unreliable (``<metric>_reliable``, experiments/run_rows.py): judged per
  metric, never from the run's other metrics.
* Sequential sizing: :func:`rescaled_interval` turns a 95% t-interval into one at another level
  (same standard error and degrees of freedom), :func:`replications_needed` estimates the
  replications that bring a 95% half-width down to a target fraction of the mean, and
  :func:`joint_widening` widens several 95% intervals to a joint 95% level (Bonferroni).
* Paired comparisons (difference or ratio to a reference) pair runs of the same point and
  replication, which saw the same job sequence (common random numbers), and take the t-interval
  of the per-replication differences/ratios. With one replication (a log's replay) they pair the
  two runs batch by batch (:func:`paired_batches`): batch b holds the same jobs in both runs (the
  arrivals numbered [b m, (b + 1) m), measurement/metrics.py), so the batch differences give the
  difference's interval and Fieller's theorem the ratio's (docs/statistics.md, "Paired
  comparisons on a log"). Runs stored without batch values fall back to combining the two
  batch-means intervals as if independent (:func:`unpaired`: conservative when the runs share
  their jobs).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

from schedlab.experiments.run_rows import BATCHES, metric_reliable
from schedlab.measurement.metrics import t_interval, t_quantile
from schedlab.measurement.reliability import interval_problem


@dataclass(frozen=True)
class PointStat:
    key: tuple[Any, ...]
    n: int
    mean: float
    lo: float
    hi: float
    stable: bool
    note: str = ""
    reliable: bool = True


def point_order(key: tuple[Any, ...]) -> list[tuple[int, Any]]:
    """Sort key of a point's axis values: numbers by value (1, 4, 16, not "1", "16", "4"),
    before any other value, ordered by its text."""
    return [(0, v) if isinstance(v, int | float) else (1, str(v)) for v in key]


def _runs_problem(
    members: Sequence[dict[str, Any]], metric: str, own_intervals: bool = True
) -> str | None:
    """Why the runs make the point's ``metric`` unreliable: one is shorter than the
    relaxation-time rule, or (``own_intervals``) one's own interval of ``metric`` cannot be
    trusted (a paired comparison has an interval of its own, judged apart)."""
    if not all(r.get("long_enough", True) is not False for r in members):
        return "run shorter than the relaxation-time rule"
    if own_intervals and not all(metric_reliable(r, metric) for r in members):
        return "a run's own interval of it cannot be trusted (its unreliability column says why)"
    return None


def _judged(stat: PointStat, metric: str, members: Sequence[dict[str, Any]]) -> PointStat:
    """``stat`` marked unreliable when its interval or its runs say so; its interval cut at 0
    below (every metric is nonnegative, measurement/reliability.py)."""
    why = interval_problem(metric, stat.mean, stat.lo, stat.hi) or _runs_problem(members, metric)
    if why is None:
        return stat
    return replace(stat, lo=max(stat.lo, 0.0), reliable=False, note=f"unreliable: {why}")


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval of independent values (measurement.metrics.t_interval)."""
    mean = float(values.mean())
    estimate = t_interval(mean, values)
    return mean, estimate.ci95[0], estimate.ci95[1]


def rescaled_interval(
    mean: float, half_width: float, dof: int, level: float
) -> tuple[float, float]:
    """The Student-t interval at ``level`` with the standard error of a 95% interval of
    ``half_width`` on ``dof`` degrees of freedom (NaN without degrees of freedom)."""
    if dof < 1:
        return (math.nan, math.nan)
    scale = stats.t.ppf(0.5 + level / 2, dof) / stats.t.ppf(0.975, dof)
    return (mean - scale * half_width, mean + scale * half_width)


def replications_needed(
    mean: float, half_width: float, dof: int, replications: int, target: float, cap: int
) -> int:
    """Replications for the 95% half-width to reach ``target`` x mean, from a current estimate
    with ``replications`` replications: the normal-approximation half-width shrinks as
    1/sqrt(n), plus 30% margin; at least one more, at most ``cap``. Call it only when the
    current half-width misses the target."""
    z_half = half_width * 1.96 / stats.t.ppf(0.975, max(dof, 1))
    factor = (z_half / mean / target) ** 2 * 1.3
    return int(min(cap, max(replications + 1, math.ceil(replications * factor))))


def joint_widening(count: int) -> float:
    """Factor that widens ``count`` (normal-approximation) 95% intervals so that they hold
    jointly at 95% (Bonferroni: each at level 1 - 0.05 / count)."""
    return float(stats.norm.ppf(1 - 0.025 / max(count, 1)) / stats.norm.ppf(0.975))


def _value(row: dict[str, Any], metric: str) -> float:
    v = row.get(metric)
    return math.nan if v is None else float(v)


def group(rows: Sequence[dict[str, Any]], by: Sequence[str]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[tuple(row.get(k) for k in by)].append(row)
    return dict(groups)


def _identical(members: Sequence[dict[str, Any]], metric: str) -> bool:
    """Replications that all gave the same value (a deterministic replay of one log): their
    t-interval would have zero width, so the point takes one run's batch-means interval."""
    values = {_value(r, metric) for r in members}
    return len(values) == 1


def summarize(rows: Sequence[dict[str, Any]], by: Sequence[str], metric: str) -> list[PointStat]:
    """One PointStat per distinct value of the ``by`` columns."""
    out = []
    for key, members in group(rows, by).items():
        unstable = [r for r in members if not r.get("stable", True)]
        if unstable:
            out.append(
                PointStat(
                    key,
                    len(members),
                    math.nan,
                    math.nan,
                    math.nan,
                    False,
                    unstable[0].get("instability", ""),
                )
            )
            continue
        if len(members) == 1 or _identical(members, metric):
            r = members[0]
            out.append(
                _judged(
                    PointStat(
                        key,
                        len(members),
                        _value(r, metric),
                        _value(r, f"{metric}_lo"),
                        _value(r, f"{metric}_hi"),
                        True,
                        "batch means",
                    ),
                    metric,
                    members,
                )
            )
            continue
        mean, lo, hi = _t_interval(np.array([_value(r, metric) for r in members]))
        stat = PointStat(key, len(members), mean, lo, hi, True, "t over replications")
        out.append(_judged(stat, metric, members))
    return out


def batch_values(row: dict[str, Any], metric: str) -> np.ndarray | None:
    """The stored batch values of ``metric`` in a run (experiments/run_rows.py), or None."""
    text = row.get(BATCHES)
    values = json.loads(text).get(metric) if text else None
    return None if values is None else np.array([math.nan if v is None else v for v in values])


@dataclass(frozen=True)
class Paired:
    """A paired comparison of two runs of the same jobs: the estimate and its 95% interval
    (``lo``/``hi``; infinite when Fieller's interval is unbounded), ``batches`` used."""

    mean: float
    lo: float
    hi: float
    batches: int


def fieller(
    y: float, x: float, vyy: float, vxx: float, vxy: float, t: float
) -> tuple[float, float]:
    """Fieller's interval for y / x, given the variances and covariance of the two estimates
    and the quantile ``t``: the R with (y - R x)^2 <= t^2 var(y - R x). Unbounded (-inf, inf)
    when x is not significantly different from zero (t^2 vxx >= x^2)."""
    a = x * x - t * t * vxx
    if a <= 0:
        return (-math.inf, math.inf)
    b = y * x - t * t * vxy
    c = y * y - t * t * vyy
    root = math.sqrt(max(b * b - a * c, 0.0))
    return ((b - root) / a, (b + root) / a)


def paired_batches(
    a: np.ndarray, b: np.ndarray, center_a: float, center_b: float, *, ratio: bool
) -> Paired:
    """``center_a - center_b`` or ``center_a / center_b`` with a 95% interval from the two
    runs' batch values ``a`` and ``b`` (batch i of both: the same jobs). Difference: the
    Student-t interval of the batch differences around the difference of the whole-run values.
    Ratio: Fieller's interval with the variances and the covariance of the batch values (the
    ratio estimator of sampling theory, whose delta-method interval it tends to when the
    denominator's relative error is small; unlike that interval it stays valid when it is not,
    as on a log whose best mean wait has a half-width of half its value)."""
    both = np.isfinite(a) & np.isfinite(b)
    a, b = a[both], b[both]
    n = int(a.size)
    if n < 2 or not (math.isfinite(center_a) and math.isfinite(center_b)):
        return Paired(math.nan, math.nan, math.nan, n)
    t = t_quantile(0.975, n - 1)
    if not ratio:
        mean = center_a - center_b
        half = t * float(np.std(a - b, ddof=1)) / math.sqrt(n)
        return Paired(mean, mean - half, mean + half, n)
    if center_b == 0:
        return Paired(math.nan, math.nan, math.nan, n)
    cov = np.cov(a, b, ddof=1) / n
    lo, hi = fieller(center_a, center_b, cov[0, 0], cov[1, 1], cov[0, 1], t)
    return Paired(center_a / center_b, lo, hi, n)


def unpaired(a: dict[str, Any], b: dict[str, Any], metric: str, *, ratio: bool) -> Paired:
    """The comparison of two runs from their own 95% intervals as if they were independent
    (the delta method for a ratio): what a comparison without batch values can say."""
    xa, xb = _value(a, metric), _value(b, metric)
    ha = (_value(a, f"{metric}_hi") - _value(a, f"{metric}_lo")) / 2
    hb = (_value(b, f"{metric}_hi") - _value(b, f"{metric}_lo")) / 2
    if ratio and (xa == 0 or xb == 0):  # no ratio to a zero (e.g. a median wait)
        return Paired(math.nan, math.nan, math.nan, 0)
    if ratio:
        mean = xa / xb
        half = abs(mean) * math.hypot(ha / xa, hb / xb)  # delta method
    else:
        mean = xa - xb
        half = math.hypot(ha, hb)
    return Paired(float(mean), float(mean - half), float(mean + half), 0)


def pair_of_runs(a: dict[str, Any], b: dict[str, Any], metric: str, *, ratio: bool) -> Paired:
    """Two runs of the same jobs compared batch by batch when both stored their batch values
    (:func:`paired_batches`), else from their intervals (:func:`unpaired`, ``batches`` 0)."""
    va, vb = batch_values(a, metric), batch_values(b, metric)
    if va is not None and vb is not None and va.size == vb.size:
        paired = paired_batches(va, vb, _value(a, metric), _value(b, metric), ratio=ratio)
        if paired.batches >= 2:
            return paired
    return unpaired(a, b, metric, ratio=ratio)


def compare(
    rows: Sequence[dict[str, Any]],
    by: Sequence[str],
    metric: str,
    column: str,
    reference: Any,
    *,
    ratio: bool,
) -> list[PointStat]:
    """Each value of ``column`` against ``reference`` at the same point (difference or ratio).

    ``by`` are the point columns other than ``column``; the result's key is by + (column value,).
    """
    rows_by = group(rows, [*by, column, "replication"])
    out = []
    others = sorted({r.get(column) for r in rows} - {reference}, key=lambda v: point_order((v,)))
    for key in sorted({tuple(r.get(k) for k in by) for r in rows}, key=point_order):
        for value in others:
            pairs = []
            unstable = False
            reps = sorted({k[-1] for k in rows_by if k[:-2] == key and k[-2] == value})
            for rep in reps:
                a = rows_by.get((*key, value, rep), [])
                b = rows_by.get((*key, reference, rep), [])
                if not a or not b:
                    continue
                if not (a[0].get("stable", True) and b[0].get("stable", True)):
                    unstable = True
                pairs.append((a[0], b[0]))
            if not pairs:
                continue
            full_key = (*key, value)
            if unstable:
                out.append(
                    PointStat(full_key, len(pairs), math.nan, math.nan, math.nan, False, "unstable")
                )
                continue
            members = [r for pair in pairs for r in pair]
            why = _runs_problem(members, metric)
            flag = {"reliable": False, "note": f"unreliable: {why}"} if why else {}
            xa = np.array([_value(a, metric) for a, _ in pairs])
            xb = np.array([_value(b, metric) for _, b in pairs])
            if len(pairs) >= 2:
                with np.errstate(divide="ignore", invalid="ignore"):  # a zero: no ratio
                    mean, lo, hi = _t_interval(xa / xb if ratio else xa - xb)
                stat = PointStat(full_key, len(pairs), mean, lo, hi, True, "paired t")
                out.append(replace(stat, **flag))
                continue
            a, b = pairs[0]
            paired = pair_of_runs(a, b, metric, ratio=ratio)
            how = "paired batch means" if paired.batches else "independent intervals (conservative)"
            stat = PointStat(full_key, 1, paired.mean, paired.lo, paired.hi, True, how)
            if paired.batches:  # its own interval: only a too short run makes it unreliable
                why = _runs_problem(members, metric, own_intervals=False)
                flag = {"reliable": False, "note": f"unreliable: {why}"} if why else {}
            out.append(replace(stat, **flag))
    return out
