"""The pooled family's servers named lowest-free-first (issue 46; decision 0028).

A pooled-family job holds ``need`` of the k servers and the engine counts them without naming
them. The rule that names them is one, used by the jobs output's placement
(report/jobs_formats.placement) and by the online scheduler (online/servers.py): a job starting
takes the lowest-numbered free servers; a job leaving gives its servers back. :class:`FreeServers`
keeps the free servers as sorted, maximal intervals, so the cost of a start or a finish and the
memory held grow with the intervals, not with k (issue 43: one array of k per job held 24 GB on a
93,312-server log).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from itertools import chain
from typing import NamedTuple


class Interval(NamedTuple):
    """The servers ``lo`` to ``hi - 1``."""

    lo: int
    hi: int  # exclusive


def numbers(intervals: Iterable[Interval]) -> tuple[int, ...]:
    """The server numbers of ``intervals``, in their order."""
    return tuple(chain.from_iterable(range(a, b) for a, b in intervals))


class FreeServers:
    """The free servers among ``0 .. k - 1`` (all free at first), lowest first."""

    def __init__(self, k: int) -> None:
        self._lo = [0] if k > 0 else []
        self._hi = [int(k)] if k > 0 else []
        self.count = max(int(k), 0)  # free servers

    def take(self, n: int) -> list[Interval] | None:
        """The ``n`` lowest-numbered free servers, now held (None, and nothing taken, when fewer
        are free)."""
        if n > self.count:
            return None
        lo, hi = self._lo, self._hi
        taken = []
        rest = n
        i = 0
        while rest > 0:
            a, b = lo[i], hi[i]
            if b - a <= rest:
                taken.append(Interval(a, b))
                rest -= b - a
                i += 1
            else:
                taken.append(Interval(a, a + rest))
                lo[i] = a + rest
                rest = 0
        del lo[:i], hi[:i]
        self.count -= n
        return taken

    def give(self, intervals: Iterable[Interval]) -> None:
        """Servers held until now are free again (merged with their free neighbours)."""
        lo, hi = self._lo, self._hi
        for a, b in intervals:
            i = bisect_left(lo, a)
            left = i > 0 and hi[i - 1] == a
            right = i < len(lo) and lo[i] == b
            if left and right:
                hi[i - 1] = hi[i]
                del lo[i], hi[i]
            elif left:
                hi[i - 1] = b
            elif right:
                lo[i] = a
            else:
                lo.insert(i, a)
                hi.insert(i, b)
            self.count += b - a
