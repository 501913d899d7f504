"""Stability limit of FCFS in the multiserver-job model, from its saturated system.

Under FCFS with head-of-line blocking the jobs enter service in arrival order, so the stability
region is set by the *saturated* system (Baccelli & Foss 1995; used for the multiserver-job model
by Rumyantsev & Morozov 2017 and Grosof et al. 2022): an infinite queue, jobs entering service
whenever the head of the line fits. With exponential durations this is a finite CTMC on (jobs in
service per class, class of the blocked head job). FCFS is stable iff the arrival rate is below
the saturated throughput X, i.e. iff rho < rho* = X * E[S], with E[S] = E[need * duration] / k
(grosof2023 §3.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve


@dataclass(frozen=True)
class SaturatedFCFS:
    throughput: float  # jobs per unit time
    load_limit: float  # rho* = throughput * E[S]
    states: int


def fcfs_saturated(
    k: int, needs: list[int], probabilities: list[float], rates: list[float]
) -> SaturatedFCFS:
    """Exact saturated throughput of FCFS for classes with server needs, probabilities and
    exponential service rates (rate = 1 / mean duration)."""
    if len(needs) != len(probabilities) or len(needs) != len(rates):
        raise ValueError("needs, probabilities and rates must have the same length")
    if any(n < 1 or n > k for n in needs):
        raise ValueError("every need must be between 1 and k")
    if any(r <= 0 for r in rates) or any(p <= 0 for p in probabilities):
        raise ValueError("rates and probabilities must be positive")
    p = np.asarray(probabilities, dtype=float) / sum(probabilities)
    n_cls = len(needs)
    bounds = [k // n for n in needs]
    index: dict[tuple[tuple[int, ...], int], int] = {}
    for counts in product(*(range(b + 1) for b in bounds)):
        used = sum(c * n for c, n in zip(counts, needs, strict=True))
        if used > k:
            continue
        for h in range(n_cls):
            if used + needs[h] > k:
                index[(counts, h)] = len(index)

    def fill(counts: tuple[int, ...], h: int, prob: float, out: dict[int, float]) -> None:
        """Admit head jobs while they fit; accumulate the resulting blocked states."""
        used = sum(c * n for c, n in zip(counts, needs, strict=True))
        if used + needs[h] > k:
            out[index[(counts, h)]] = out.get(index[(counts, h)], 0.0) + prob
            return
        admitted = list(counts)
        admitted[h] += 1
        for nxt in range(n_cls):
            fill(tuple(admitted), nxt, prob * p[nxt], out)

    rows, cols, vals = [], [], []
    for (counts, h), i in index.items():
        for c in range(n_cls):
            if counts[c] == 0:
                continue
            rate = counts[c] * rates[c]
            after = list(counts)
            after[c] -= 1
            targets: dict[int, float] = {}
            fill(tuple(after), h, 1.0, targets)
            for jdx, prob in targets.items():
                if jdx != i:
                    rows.append(i)
                    cols.append(jdx)
                    vals.append(rate * prob)
    n = len(index)
    q = sparse.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
    q = q - sparse.diags(np.asarray(q.sum(axis=1)).ravel())
    a = q.T.tolil()
    a[0, :] = 1.0  # replace one balance equation by normalization
    b = np.zeros(n)
    b[0] = 1.0
    pi = spsolve(a.tocsr(), b)
    departure = np.zeros(n)
    for (counts, _), i in index.items():
        departure[i] = sum(c * r for c, r in zip(counts, rates, strict=True))
    throughput = float(pi @ departure)
    mean_size = float(np.dot(p, np.asarray(needs) / np.asarray(rates))) / k
    return SaturatedFCFS(throughput=throughput, load_limit=throughput * mean_size, states=n)
