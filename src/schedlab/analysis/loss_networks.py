"""Blocking in a multi-rate loss system with complete sharing: the Kaufman-Roberts recursion.

A resource of C units is shared by K classes; class k arrives as a Poisson process, occupies b_k
units (an integer) for a generally distributed holding time and offers a_k = lambda_k / mu_k. An
arrival is admitted iff b_k units are free. The stationary distribution has product form
pi(n) ~ prod_k a_k^{n_k} / n_k! over {n : sum_k b_k n_k <= C}, and the occupancy
distribution q(c) = P(c units busy) satisfies (Kaufman 1981, Roberts 1981)

    c q(c) = sum_k a_k b_k q(c - b_k),   q(c) = 0 for c < 0,

so class k is blocked with probability B_k = sum_{c > C - b_k} q(c). With one class of size 1
this is Erlang B. In schedlab this is the loss family on ONE server of capacity C with first-fit
admission (psychas2022's model with L = 1: every admission that fits is taken).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def kaufman_roberts_occupancy(
    capacity: int, sizes: Sequence[int], offered: Sequence[float]
) -> np.ndarray:
    """q(0..C): the stationary distribution of the number of busy units."""
    b = np.asarray(sizes, dtype=np.int64)
    a = np.asarray(offered, dtype=float)
    if capacity < 1 or np.any(b < 1) or b.size != a.size or np.any(a < 0):
        raise ValueError("need capacity >= 1, integer sizes >= 1 and one offered load >= 0 each")
    q = np.zeros(int(capacity) + 1)
    q[0] = 1.0
    for c in range(1, capacity + 1):
        fit = b <= c
        q[c] = float(np.sum(a[fit] * b[fit] * q[c - b[fit]])) / c
        if q[c] > 1e250:  # rescale: only the ratios matter
            q[: c + 1] /= q[c]
    return q / q.sum()


def kaufman_roberts_blocking(
    capacity: int, sizes: Sequence[int], offered: Sequence[float]
) -> np.ndarray:
    """B_k, the blocking probability of each class (time congestion = call congestion, PASTA)."""
    q = kaufman_roberts_occupancy(capacity, sizes, offered)
    tail = np.cumsum(q[::-1])[::-1]  # tail[c] = P(busy >= c)
    return np.array([tail[max(capacity - int(bk) + 1, 0)] for bk in sizes])  # b > C: always
