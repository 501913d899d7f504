"""The job-size law of a pooled (multiserver-job) model: S = K D / k as a finite mixture.

grosof2023 (Grosof, Scully, Harchol-Balter, Scheller-Wolf, POMACS 2023), §3.1: a job with server
need k_j and duration d_j has size s_j = k_j d_j / k, and load rho = lambda E[S]. The
resource-pooled M/G/1 (SRPT-1, Gittins-1) serves these sizes on one server of speed 1.

Within a job class the need K and the duration D are independent (that is how
:mod:`schedlab.simulation.generate` samples them), so class c contributes, for each value n of its
need, the component (n / k) D_c with weight p_c P(K_c = n). A :class:`SizeLaw` is that mixture;
each component remembers its server need, so the law of the sizes of need-i jobs (S_i, which the
Gittins rank of §5.1 uses) is the sub-mixture of the components with need i.

Every quantity is computed exactly (closed forms, finite sums over atoms) for fixed,
exponential, hyperexponential (a mixture of exponential phases), uniform, discrete, empirical,
Pareto, bounded Pareto and log-normal durations; geometric and Poisson durations become atoms
truncated where the tail mass is below 1e-16 (renormalized). Any other law can be given as a
frozen ``scipy.stats`` continuous distribution (:class:`NumericComponent`); its partial moments
are then computed by ``scipy.integrate.quad``. The components are defined once, in
:mod:`schedlab.model.laws`; each spec distribution gives its own (``dist.components()``).

Conventions: ``cdf(x) = P(S <= x)`` (right-continuous), ``pdf`` is the density of the absolutely
continuous part (right-continuous at jumps), ``partial_moment(n, x) = E[S^n 1{S <= x}]`` and
``partial_moment(n, x, strict=True) = E[S^n 1{S < x}]``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate

from schedlab.model.distributions import _Dist
from schedlab.model.laws import (  # re-exported: the components of every SizeLaw
    AtomsComponent,
    Component,
    ExponentialComponent,
    LogNormalComponent,
    NumericComponent,
    ParetoComponent,
    UniformComponent,
)

__all__ = [
    "AtomsComponent",
    "Component",
    "ExponentialComponent",
    "JobClassLaw",
    "LogNormalComponent",
    "NumericComponent",
    "ParetoComponent",
    "SizeLaw",
    "UniformComponent",
    "as_size_law",
    "components_of",
    "integrate_pieces",
]

ArrayLike = float | Sequence[float] | np.ndarray


def _arr(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _out(values: np.ndarray, like: ArrayLike) -> Any:
    """A float for scalar input, an array otherwise."""
    return float(values) if np.ndim(like) == 0 else values


def components_of(dist: Any) -> list[tuple[float, Component]]:
    """A duration (or size) law as weighted components: a schedlab distribution (its
    ``components()``), a Component, or a frozen scipy.stats continuous distribution."""
    if isinstance(dist, Component):
        return [(1.0, dist)]
    if isinstance(dist, _Dist):
        return dist.components()
    if hasattr(dist, "cdf") and hasattr(dist, "pdf") and hasattr(dist, "isf"):
        return [(1.0, NumericComponent(dist))]
    raise ValueError(f"cannot build a size law from {type(dist).__name__}")


def _need_atoms(need: Any) -> list[tuple[float, float]]:
    """(need value, probability) pairs of a server-need law (a number or a finite law)."""
    if isinstance(need, int | float):
        return [(float(need), 1.0)]
    comps = components_of(need)
    if len(comps) != 1 or not isinstance(comps[0][1], AtomsComponent):
        raise ValueError("a server need must take finitely many values (fixed, discrete, ...)")
    atoms = comps[0][1]
    return [(float(v), float(p)) for v, p in zip(atoms.values, atoms.probs, strict=True)]


@dataclass(frozen=True)
class JobClassLaw:
    """One job class of a pooled model: its share of arrivals, server need K (a number or a
    finite law) and duration law D (independent of K within the class)."""

    probability: float
    need: Any
    duration: Any


@dataclass(frozen=True)
class SizeLaw:
    """A finite mixture sum_i w_i L_i of size laws; component i has server need needs[i].

    Build it with :meth:`from_classes`, :meth:`from_model`, :meth:`from_distribution` or
    :meth:`from_sizes`. ``k`` is the number of pooled servers (sizes are need * duration / k)."""

    weights: tuple[float, ...]
    components: tuple[Component, ...]
    needs: tuple[float, ...]
    k: float = 1.0

    def __post_init__(self) -> None:
        if not self.components or not len(self.weights) == len(self.components) == len(self.needs):
            raise ValueError("a size law needs matching weights, components and needs")
        w = np.asarray(self.weights, dtype=float)
        if np.any(w <= 0) or not math.isclose(w.sum(), 1.0, rel_tol=1e-9):
            raise ValueError(f"mixture weights must be > 0 and sum to 1 (sum {w.sum()})")
        if not (self.k >= 1):
            raise ValueError(f"k must be >= 1, got {self.k}")

    # ---- constructors --------------------------------------------------------------------------

    @classmethod
    def from_classes(cls, classes: Iterable[JobClassLaw], k: float) -> SizeLaw:
        """S = K D / k for job classes (probability, need, duration), grosof2023 §3.1."""
        if not (k >= 1):
            raise ValueError(f"k must be >= 1 (the number of servers), got {k}")
        classes = list(classes)
        if not classes:
            raise ValueError("at least one job class is needed")
        total = sum(c.probability for c in classes)
        if any(c.probability <= 0 for c in classes) or not math.isclose(total, 1.0, rel_tol=1e-9):
            raise ValueError(f"class probabilities must be > 0 and sum to 1 (sum {total})")
        weights: list[float] = []
        comps: list[Component] = []
        needs: list[float] = []
        for c in classes:
            duration = components_of(c.duration)
            for need, pn in _need_atoms(c.need):
                if not (1 <= need <= k):
                    raise ValueError(f"server need {need:g} is outside [1, k = {k:g}]")
                for wd, comp in duration:
                    weights.append(c.probability * pn * wd)
                    comps.append(comp.scaled(need / k))
                    needs.append(need)
        w = np.asarray(weights)
        return cls(tuple((w / w.sum()).tolist()), tuple(comps), tuple(needs), float(k))

    @classmethod
    def from_model(cls, model: Any) -> SizeLaw:
        """The size law of a compiled pooled model (``schedlab.model.compile.compile_model``).

        Rigid classes only (elastic jobs have no fixed need). For a trace, the law is the
        empirical one of the trace's sizes need * duration / k, with the trace's needs."""
        if model.family != "pooled":
            raise ValueError(f"size laws are defined for the pooled family, not {model.family}")
        k = model.pooled_k
        if model.trace is not None:
            trace = model.trace.load()
            need = trace.demand[:, 0]
            size = need * trace.duration / k
            return cls.from_sizes(size, needs=need, k=k)
        for i, c in enumerate(model.classes):
            if c.elastic:
                raise ValueError(
                    f"class {i} ('{c.name}') is elastic: the multiserver-job size law needs "
                    "rigid jobs"
                )
        return cls.from_classes(
            [JobClassLaw(c.probability, c.demand[0], c.duration) for c in model.classes], k
        )

    @classmethod
    def from_distribution(cls, dist: Any, need: float = 1.0, k: float = 1.0) -> SizeLaw:
        """Sizes need * D / k for one duration law (k = need = 1: an M/G/1 with service D)."""
        return cls.from_classes([JobClassLaw(1.0, need, dist)], k)

    @classmethod
    def from_sizes(
        cls, sizes: ArrayLike, needs: ArrayLike | None = None, k: float = 1.0
    ) -> SizeLaw:
        """The empirical law of observed sizes (each equally likely), optionally with needs."""
        s = _arr(sizes).ravel()
        if s.size == 0 or np.any(~np.isfinite(s)) or np.any(s < 0):
            raise ValueError("sizes must be finite, >= 0, and at least one")
        n = np.ones_like(s) if needs is None else _arr(needs).ravel()
        if n.shape != s.shape:
            raise ValueError("one need per size")
        weights, comps, out_needs = [], [], []
        for value in np.unique(n):
            mine = s[n == value]
            weights.append(mine.size / s.size)
            comps.append(AtomsComponent(mine, np.full(mine.size, 1.0 / mine.size)))
            out_needs.append(float(value))
        return cls(tuple(weights), tuple(comps), tuple(out_needs), float(k))

    # ---- structure -----------------------------------------------------------------------------

    def need_probabilities(self) -> dict[float, float]:
        """P(K = i) for each server need i."""
        out: dict[float, float] = {}
        for w, n in zip(self.weights, self.needs, strict=True):
            out[n] = out.get(n, 0.0) + w
        return dict(sorted(out.items()))

    def by_need(self) -> dict[float, SizeLaw]:
        """The law S_i of the sizes of need-i jobs, for each need i (grosof2023 §5.1)."""
        out: dict[float, SizeLaw] = {}
        for need, total in self.need_probabilities().items():
            idx = [i for i, n in enumerate(self.needs) if n == need]
            out[need] = SizeLaw(
                tuple(self.weights[i] / total for i in idx),
                tuple(self.components[i] for i in idx),
                tuple(need for _ in idx),
                self.k,
            )
        return out

    def _w(self) -> np.ndarray:
        return np.asarray(self.weights)

    def _mix(self, method: str, x: ArrayLike, *args: Any) -> Any:
        xa = _arr(x)
        total = np.zeros(xa.shape)
        for w, c in zip(self.weights, self.components, strict=True):
            total = total + w * getattr(c, method)(*args, xa)
        return _out(total, x)

    # ---- distribution functions ----------------------------------------------------------------

    def cdf(self, x: ArrayLike) -> Any:
        """P(S <= x)."""
        return self._mix("cdf", x)

    def sf(self, x: ArrayLike) -> Any:
        """P(S > x)."""
        return self._mix("sf", x)

    def pdf(self, x: ArrayLike) -> Any:
        """Density of the absolutely continuous part of S (atoms excluded)."""
        return self._mix("pdf", x)

    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """Values and probabilities of the atoms of S (merged across components)."""
        vals, probs = [], []
        for w, c in zip(self.weights, self.components, strict=True):
            v, p = c.atoms()
            vals.append(v)
            probs.append(w * p)
        v = np.concatenate(vals)
        p = np.concatenate(probs)
        if v.size == 0:
            return v, p
        uniq, inv = np.unique(v, return_inverse=True)
        return uniq, np.bincount(inv, weights=p)

    @property
    def atom_mass(self) -> float:
        return float(self.atoms()[1].sum())

    def atom_at(self, x: ArrayLike) -> Any:
        """P(S = x)."""
        v, p = self.atoms()
        xa = _arr(x)
        if v.size == 0:
            return _out(np.zeros(xa.shape), x)
        i = np.clip(np.searchsorted(v, xa), 0, v.size - 1)
        return _out(np.where(v[i] == xa, p[i], 0.0), x)

    def partial_moment(self, n: int, x: ArrayLike, strict: bool = False) -> Any:
        """E[S^n 1{S <= x}] (``strict``: E[S^n 1{S < x}])."""
        if n < 0 or int(n) != n:
            raise ValueError(f"moment order must be a whole number >= 0, got {n}")
        total = _arr(self._mix("partial_moment", x, int(n)))
        if strict:
            xa = _arr(x)
            total = total - _arr(self.atom_at(xa)) * xa**n
        return _out(total, x)

    def cdf_moments(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(P(S <= x), E[S 1{S <= x}], E[S^2 1{S <= x}]) in one pass over the components."""
        xa = np.atleast_1d(_arr(x))
        cdf = np.zeros(xa.shape)
        m1 = np.zeros(xa.shape)
        m2 = np.zeros(xa.shape)
        for w, c in zip(self.weights, self.components, strict=True):
            cdf += w * c.cdf(xa)
            m1 += w * c.partial_moment(1, xa)
            m2 += w * c.partial_moment(2, xa)
        return cdf, m1, m2

    def moment(self, n: int) -> float:
        """E[S^n]."""
        return float(
            sum(w * c.moment(n) for w, c in zip(self.weights, self.components, strict=True))
        )

    @property
    def mean(self) -> float:
        return self.moment(1)

    @property
    def second_moment(self) -> float:
        return self.moment(2)

    @property
    def support(self) -> tuple[float, float]:
        lo = min(c.support[0] for c in self.components)
        hi = max(c.support[1] for c in self.components)
        return (lo, hi)

    def mean_min(self, x: ArrayLike) -> Any:
        """E[min(S, x)] = E[S 1{S <= x}] + x P(S > x)."""
        xa = _arr(x)
        return _out(_arr(self.partial_moment(1, xa)) + xa * _arr(self.sf(xa)), x)

    def second_min(self, x: ArrayLike) -> Any:
        """E[min(S, x)^2]."""
        xa = _arr(x)
        return _out(_arr(self.partial_moment(2, xa)) + xa * xa * _arr(self.sf(xa)), x)

    def isf(self, q: float) -> float:
        """Smallest x with P(S > x) <= q (bisection on the exact survival function)."""
        if not 0 < q < 1:
            raise ValueError(f"isf needs 0 < q < 1, got {q}")
        lo, hi = 0.0, max(c.isf(q) for c in self.components)
        if self.sf(lo) <= q:
            return 0.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if self.sf(mid) <= q:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-15 * hi:
                break
        return hi

    def isf_many(self, q: ArrayLike) -> np.ndarray:
        """:meth:`isf` for many q at once (vectorized bisection)."""
        qa = np.asarray(q, dtype=float).ravel()
        if np.any((qa <= 0) | (qa >= 1)):
            raise ValueError("isf needs 0 < q < 1")
        lo = np.zeros(qa.size)
        hi = np.array([max(c.isf(float(x)) for c in self.components) for x in qa])
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            below = np.asarray(self.sf(mid)) <= qa
            hi = np.where(below, mid, hi)
            lo = np.where(below, lo, mid)
        return hi

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n independent sizes."""
        which = rng.choice(len(self.components), size=n, p=self._w() / self._w().sum())
        out = np.empty(n)
        for i, c in enumerate(self.components):
            idx = np.flatnonzero(which == i)
            if idx.size:
                out[idx] = c.sample(rng, idx.size)
        return out

    def load(self, arrival_rate: float) -> float:
        """rho = lambda E[S] (grosof2023 §3.1)."""
        return arrival_rate * self.mean

    # ---- integration helpers -------------------------------------------------------------------

    def breakpoints(self) -> np.ndarray:
        """Sorted finite points worth splitting quadrature at: atoms, support ends, kinks, and
        the points where P(S > x) = 10^-1, ..., 10^-15."""
        return self._breakpoints

    @functools.cached_property
    def _breakpoints(self) -> np.ndarray:
        pts = {0.0}
        for c in self.components:
            pts.update(float(b) for b in c.breakpoints() if math.isfinite(b) and b >= 0)
        hi = self.support[1]
        for j in range(1, 16):
            x = self.isf(10.0**-j)
            if x < hi:
                pts.add(x)
        return np.array(sorted(pts))

    @property
    def atomic(self) -> bool:
        """Whether S takes finitely many values (no continuous part)."""
        return not any(c.continuous for c in self.components)

    def expect(
        self,
        fun: Callable[[float], float],
        *,
        continuous_only: bool = False,
        vectorized: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> float:
        """E[fun(S)]: a sum over the atoms (``vectorized``, if given, evaluates fun on all atoms
        at once) plus quadrature against the continuous density."""
        total = 0.0
        if not continuous_only:
            v, p = self.atoms()
            if vectorized is not None and v.size:
                total += float(np.dot(p, vectorized(v)))
            else:
                total += float(sum(pi * fun(float(vi)) for vi, pi in zip(v, p, strict=True)))
        if any(c.continuous for c in self.components):
            total += integrate_pieces(
                lambda x: fun(x) * float(self.pdf(x)), self.pieces(continuous=True)
            )
        return total

    def pieces(self, upto: float = math.inf, continuous: bool = False) -> list[tuple[float, float]]:
        """Intervals covering [0, upto] (or the continuous support) split at the breakpoints."""
        pts = self.breakpoints()
        if continuous:
            lo = min(c.support[0] for c in self.components if c.continuous)
            hi = max(c.support[1] for c in self.components if c.continuous)
        else:
            lo, hi = 0.0, self.support[1]
        hi = min(hi, upto)
        inner = [p for p in pts if lo < p < hi]
        edges = [lo, *inner, hi]
        return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


class IntegrationWarning(RuntimeWarning):
    """A quadrature whose error estimate exceeds the requested tolerance."""


def integrate_pieces(
    fun: Callable[[float], float],
    pieces: Sequence[tuple[float, float]],
    *,
    epsrel: float = 1e-10,
) -> float:
    """Sum of quad(fun) over the pieces (the last may end at inf); warns if inaccurate."""
    import warnings

    total = 0.0
    error = 0.0
    for a, b in pieces:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            value, err = integrate.quad(fun, a, b, limit=400, epsabs=0.0, epsrel=epsrel)
        total += value
        error += err
    if error > max(1e-7 * abs(total), 1e-300):
        warnings.warn(
            f"quadrature error estimate {error:.3g} on a value {total:.6g}",
            IntegrationWarning,
            stacklevel=2,
        )
    return float(total)


def as_size_law(law: Any) -> SizeLaw:
    """A SizeLaw as is; a distribution (schedlab or scipy) as the sizes of an M/G/1."""
    if isinstance(law, SizeLaw):
        return law
    if isinstance(law, _Dist | Component) or hasattr(law, "cdf"):
        return SizeLaw.from_distribution(law)
    raise TypeError(f"expected a SizeLaw or a distribution, got {type(law).__name__}")
