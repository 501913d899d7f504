"""The job-size law of a pooled (multiserver-job) model: S = K D / k as a finite mixture.

Paper 004 (Grosof, Scully, Harchol-Balter, Scheller-Wolf, POMACS 2023), §3.1: a job with server
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
are then computed by ``scipy.integrate.quad``.

Conventions: ``cdf(x) = P(S <= x)`` (right-continuous), ``pdf`` is the density of the absolutely
continuous part (right-continuous at jumps), ``partial_moment(n, x) = E[S^n 1{S <= x}]`` and
``partial_moment(n, x, strict=True) = E[S^n 1{S < x}]``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import integrate, special

from schedlab.model.distributions import (
    BoundedPareto,
    Discrete,
    Empirical,
    Exponential,
    Fixed,
    Geometric,
    HyperExponential,
    LogNormal,
    Pareto,
    Poisson,
    Uniform,
    _Dist,
)

ArrayLike = float | Sequence[float] | np.ndarray
TAIL_TRUNCATION = 1e-16  # tail mass dropped from geometric/Poisson atoms


def _arr(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _out(values: np.ndarray, like: ArrayLike) -> Any:
    """A float for scalar input, an array otherwise."""
    return float(values) if np.ndim(like) == 0 else values


class Component(ABC):
    """One law of a mixture, in size units. Vectorized over x."""

    @abstractmethod
    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P(X <= x)."""

    def sf(self, x: np.ndarray) -> np.ndarray:
        """P(X > x)."""
        return 1.0 - self.cdf(x)

    @abstractmethod
    def pdf(self, x: np.ndarray) -> np.ndarray:
        """Density of the absolutely continuous part (0 for atoms)."""

    @abstractmethod
    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        """E[X^n 1{X <= x}]."""

    @abstractmethod
    def moment(self, n: int) -> float:
        """E[X^n] (inf when it diverges)."""

    @property
    @abstractmethod
    def support(self) -> tuple[float, float]:
        """Smallest and largest value."""

    @abstractmethod
    def scaled(self, c: float) -> Component:
        """The law of c X (c > 0)."""

    @abstractmethod
    def isf(self, q: float) -> float:
        """Smallest x with P(X > x) <= q."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n independent draws."""

    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """Values and probabilities of the atoms."""
        return np.empty(0), np.empty(0)

    @property
    def continuous(self) -> bool:
        return True

    def breakpoints(self) -> list[float]:
        """Finite points where the density is not smooth (for quadrature)."""
        return [v for v in self.support if math.isfinite(v)]


@dataclass(frozen=True)
class ExponentialComponent(Component):
    """Exponential with the given rate (mean 1 / rate)."""

    rate: float

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"an exponential rate must be finite and > 0, got {self.rate}")

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return -np.expm1(-self.rate * np.maximum(x, 0.0))

    def sf(self, x: np.ndarray) -> np.ndarray:
        return np.exp(-self.rate * np.maximum(x, 0.0))

    def pdf(self, x: np.ndarray) -> np.ndarray:
        return np.where(x >= 0, self.rate * np.exp(-self.rate * np.maximum(x, 0.0)), 0.0)

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        # E[X^n 1{X <= x}] = n! / rate^n * P(n + 1, rate x) (regularized lower incomplete gamma)
        return (
            math.factorial(n) / self.rate**n * special.gammainc(n + 1, self.rate * np.maximum(x, 0))
        )

    def moment(self, n: int) -> float:
        return math.factorial(n) / self.rate**n

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def scaled(self, c: float) -> ExponentialComponent:
        return ExponentialComponent(self.rate / c)

    def isf(self, q: float) -> float:
        return -math.log(q) / self.rate if q < 1 else 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(1.0 / self.rate, n)


@dataclass(frozen=True)
class UniformComponent(Component):
    """Continuous uniform on [low, high], low < high."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (0 <= self.low < self.high < math.inf):
            raise ValueError(
                f"a uniform law needs 0 <= low < high < inf, got {self.low}, {self.high}"
            )

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return np.clip((x - self.low) / (self.high - self.low), 0.0, 1.0)

    def pdf(self, x: np.ndarray) -> np.ndarray:
        return np.where((x >= self.low) & (x < self.high), 1.0 / (self.high - self.low), 0.0)

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        y = np.clip(x, self.low, self.high)
        return (y ** (n + 1) - self.low ** (n + 1)) / ((n + 1) * (self.high - self.low))

    def moment(self, n: int) -> float:
        return float(self.partial_moment(n, np.float64(self.high)))

    @property
    def support(self) -> tuple[float, float]:
        return (self.low, self.high)

    def scaled(self, c: float) -> UniformComponent:
        return UniformComponent(self.low * c, self.high * c)

    def isf(self, q: float) -> float:
        return self.high - q * (self.high - self.low)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)


@dataclass(frozen=True)
class AtomsComponent(Component):
    """Finitely many values with probabilities (merged, sorted, zero-probability atoms dropped)."""

    values: np.ndarray
    probs: np.ndarray
    _cum: np.ndarray = field(init=False, repr=False, compare=False)
    _cum_moments: tuple[np.ndarray, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=float).ravel()
        p = np.asarray(self.probs, dtype=float).ravel()
        if v.size == 0 or v.shape != p.shape:
            raise ValueError("atoms need as many probabilities as values (at least one)")
        if np.any(~np.isfinite(v)) or np.any(v < 0):
            raise ValueError("atom values must be finite and >= 0")
        if np.any(p < 0) or not math.isclose(p.sum(), 1.0, rel_tol=1e-9):
            raise ValueError(f"atom probabilities must be >= 0 and sum to 1 (sum {p.sum()})")
        uniq, inv = np.unique(v, return_inverse=True)
        merged = np.bincount(inv, weights=p)
        keep = merged > 0
        object.__setattr__(self, "values", uniq[keep])
        object.__setattr__(self, "probs", merged[keep] / merged[keep].sum())
        object.__setattr__(self, "_cum", np.concatenate([[0.0], np.cumsum(self.probs)]))
        object.__setattr__(
            self,
            "_cum_moments",
            tuple(np.concatenate([[0.0], np.cumsum(self.probs * self.values**n)]) for n in (1, 2)),
        )

    def _count(self, x: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.values, x, side="right")

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return np.minimum(self._cum[self._count(x)], 1.0)

    def sf(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(1.0 - self._cum[self._count(x)], 0.0)

    def pdf(self, x: np.ndarray) -> np.ndarray:
        return np.zeros_like(np.asarray(x, dtype=float))

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        if n == 0:
            cum = self._cum
        elif n <= 2:
            cum = self._cum_moments[n - 1]
        else:
            cum = np.concatenate([[0.0], np.cumsum(self.probs * self.values**n)])
        return cum[self._count(x)]

    def moment(self, n: int) -> float:
        return float(np.dot(self.probs, self.values**n))

    @property
    def support(self) -> tuple[float, float]:
        return (float(self.values[0]), float(self.values[-1]))

    def scaled(self, c: float) -> AtomsComponent:
        return AtomsComponent(self.values * c, self.probs)

    def isf(self, q: float) -> float:
        tail = 1.0 - self._cum[1:]  # P(X > values[i])
        idx = np.flatnonzero(tail <= q + 1e-15)
        return float(self.values[idx[0]]) if idx.size else float(self.values[-1])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.values[rng.choice(self.values.size, size=n, p=self.probs)]

    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        return self.values, self.probs

    @property
    def continuous(self) -> bool:
        return False

    def breakpoints(self) -> list[float]:
        return self.values.tolist()


@dataclass(frozen=True)
class ParetoComponent(Component):
    """Pareto with shape alpha on [low, high] (high = inf: P(X > x) = (low/x)^alpha)."""

    alpha: float
    low: float
    high: float = math.inf

    def __post_init__(self) -> None:
        if not (self.alpha > 0 and 0 < self.low < self.high):
            raise ValueError(
                f"a Pareto law needs alpha > 0 and 0 < low < high, got {self.alpha}, "
                f"{self.low}, {self.high}"
            )

    @property
    def _norm(self) -> float:
        if math.isinf(self.high):
            return 1.0
        return 1.0 / -math.expm1(self.alpha * math.log(self.low / self.high))

    def cdf(self, x: np.ndarray) -> np.ndarray:
        y = np.clip(x, self.low, self.high)
        return np.clip(self._norm * -np.expm1(self.alpha * np.log(self.low / y)), 0.0, 1.0)

    def pdf(self, x: np.ndarray) -> np.ndarray:
        inside = (x >= self.low) & (x < self.high)
        y = np.where(inside, x, self.low)
        return np.where(inside, self._norm * self.alpha / y * (self.low / y) ** self.alpha, 0.0)

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        # norm * alpha * low^n * ((y/low)^(n-alpha) - 1) / (n - alpha), or * ln(y/low) at n = alpha
        y = np.clip(x, self.low, self.high)
        log_ratio = np.log(y / self.low)
        d = n - self.alpha
        core = log_ratio if abs(d) < 1e-12 else np.expm1(d * log_ratio) / d
        return self._norm * self.alpha * self.low**n * core

    def moment(self, n: int) -> float:
        if math.isinf(self.high) and self.alpha <= n:
            return math.inf
        return float(
            self.partial_moment(n, np.float64(self.high if math.isfinite(self.high) else np.inf))
        )

    @property
    def support(self) -> tuple[float, float]:
        return (self.low, self.high)

    def scaled(self, c: float) -> ParetoComponent:
        return ParetoComponent(self.alpha, self.low * c, self.high * c)

    def isf(self, q: float) -> float:
        if q >= 1:
            return self.low
        # P(X > x) = norm ((low/x)^alpha - (low/high)^alpha) = q
        tail = 0.0 if math.isinf(self.high) else (self.low / self.high) ** self.alpha
        return self.low * (q / self._norm + tail) ** (-1.0 / self.alpha)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        tail = 0.0 if math.isinf(self.high) else (self.low / self.high) ** self.alpha
        return self.low * (1.0 - u * (1.0 - tail)) ** (-1.0 / self.alpha)


@dataclass(frozen=True)
class LogNormalComponent(Component):
    """exp(N(mu, sigma^2))."""

    mu: float
    sigma: float

    def __post_init__(self) -> None:
        if not (self.sigma > 0 and math.isfinite(self.mu)):
            raise ValueError(
                f"a log-normal law needs a finite mu and sigma > 0, got {self.mu}, {self.sigma}"
            )

    def _z(self, x: np.ndarray, shift: float = 0.0) -> np.ndarray:
        with np.errstate(divide="ignore"):
            logx = np.log(np.maximum(x, 0.0))
        return (logx - self.mu - shift) / self.sigma

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return special.ndtr(self._z(x))

    def sf(self, x: np.ndarray) -> np.ndarray:
        return special.ndtr(-self._z(x))

    def pdf(self, x: np.ndarray) -> np.ndarray:
        pos = x > 0
        y = np.where(pos, x, 1.0)
        z = self._z(y)
        return np.where(pos, np.exp(-0.5 * z * z) / (y * self.sigma * math.sqrt(2 * math.pi)), 0.0)

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        # E[X^n 1{X <= x}] = exp(n mu + n^2 sigma^2 / 2) Phi((ln x - mu - n sigma^2) / sigma)
        return self.moment(n) * special.ndtr(self._z(x, n * self.sigma**2))

    def moment(self, n: int) -> float:
        return math.exp(n * self.mu + 0.5 * (n * self.sigma) ** 2)

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def scaled(self, c: float) -> LogNormalComponent:
        return LogNormalComponent(self.mu + math.log(c), self.sigma)

    def isf(self, q: float) -> float:
        if q >= 1:
            return 0.0
        return math.exp(self.mu - self.sigma * float(special.ndtri(q)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(self.mu, self.sigma, n)

    def breakpoints(self) -> list[float]:
        return [0.0, math.exp(self.mu - self.sigma**2)]  # the mode


@dataclass(frozen=True)
class NumericComponent(Component):
    """Any continuous law with a scipy.stats-like interface (``cdf``, ``sf``, ``pdf``, ``isf``,
    ``support``, ``moment``, ``rvs``), times ``scale``; partial moments by quadrature."""

    dist: Any
    scale: float = 1.0
    # per order n: sorted points u (base units) and E[X^n 1{X <= u}]; a new point integrates
    # only from the nearest known point below, so repeated calls cost a short quadrature each
    _known: dict[int, tuple[list[float], list[float]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.dist.cdf(np.asarray(x) / self.scale), dtype=float)

    def sf(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.dist.sf(np.asarray(x) / self.scale), dtype=float)

    def pdf(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.dist.pdf(np.asarray(x) / self.scale), dtype=float) / self.scale

    def _partial(self, n: int, u: float) -> float:
        lo = max(float(self.dist.support()[0]), 0.0)
        if u <= lo:
            return 0.0
        points, values = self._known.setdefault(n, ([lo], [0.0]))
        i = bisect.bisect_right(points, u) - 1
        if points[i] == u:
            return values[i]
        v = values[i] + _quad(lambda t: t**n * float(self.dist.pdf(t)), points[i], u)
        points.insert(i + 1, u)
        values.insert(i + 1, v)
        return v

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        xs = np.atleast_1d(np.asarray(x, dtype=float)) / self.scale
        out = np.array([self._partial(n, float(u)) for u in xs.ravel()]) * self.scale**n
        return out.reshape(np.shape(x)) if np.ndim(x) else out[0]

    def moment(self, n: int) -> float:
        return float(self.dist.moment(n)) * self.scale**n

    @property
    def support(self) -> tuple[float, float]:
        lo, hi = self.dist.support()
        return (float(lo) * self.scale, float(hi) * self.scale)

    def scaled(self, c: float) -> NumericComponent:
        return NumericComponent(self.dist, self.scale * c)

    def isf(self, q: float) -> float:
        return float(self.dist.isf(q)) * self.scale

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.asarray(self.dist.rvs(size=n, random_state=rng), dtype=float) * self.scale


def _quad(fun: Callable[[float], float], lo: float, hi: float) -> float:
    value, _ = integrate.quad(fun, lo, hi, limit=200, epsabs=0.0, epsrel=1e-11)
    return float(value)


def _integer_atoms(
    pmf: Callable[[np.ndarray], np.ndarray], sf: Callable[[float], float], lo: int
) -> AtomsComponent:
    """Atoms lo, lo+1, ... up to where the tail mass drops below TAIL_TRUNCATION."""
    hi = lo
    while sf(hi) > TAIL_TRUNCATION:
        hi = 2 * hi + 16
        if hi > 10**7:
            raise ValueError(
                "an integer law with more than 10^7 atoms above 1e-16 is not supported"
            )
    v = np.arange(lo, hi + 1, dtype=float)
    p = pmf(v)
    return AtomsComponent(v, p / p.sum())


def components_of(dist: Any) -> list[tuple[float, Component]]:
    """A duration (or size) law as weighted components: a schedlab distribution, a Component, or
    a frozen scipy.stats continuous distribution."""
    from scipy import stats

    if isinstance(dist, Component):
        return [(1.0, dist)]
    if isinstance(dist, Fixed):
        return [(1.0, AtomsComponent(np.array([dist.value]), np.array([1.0])))]
    if isinstance(dist, Exponential):
        return [(1.0, ExponentialComponent(1.0 / dist.mean))]
    if isinstance(dist, HyperExponential):
        p, means = dist.phases()
        return [
            (float(w), ExponentialComponent(1.0 / float(m)))
            for w, m in zip(p, means, strict=True)
            if w > 0
        ]
    if isinstance(dist, Uniform):
        if dist.integer or dist.low == dist.high:
            v = dist.values() if dist.integer else np.array([dist.low])
            return [(1.0, AtomsComponent(v, np.full(v.size, 1.0 / v.size)))]
        return [(1.0, UniformComponent(dist.low, dist.high))]
    if isinstance(dist, Discrete):
        return [(1.0, AtomsComponent(dist.values(), dist._p))]
    if isinstance(dist, Empirical):
        data = dist.data()
        return [(1.0, AtomsComponent(data, np.full(data.size, 1.0 / data.size)))]
    if isinstance(dist, BoundedPareto):
        return [(1.0, ParetoComponent(dist.alpha, dist.low, dist.high))]
    if isinstance(dist, Pareto):
        return [(1.0, ParetoComponent(dist.alpha, dist.scale))]
    if isinstance(dist, LogNormal):
        s2 = dist._sigma2
        return [(1.0, LogNormalComponent(math.log(dist.mean) - s2 / 2.0, math.sqrt(s2)))]
    if isinstance(dist, Geometric):
        q = dist.success
        return [
            (
                1.0,
                _integer_atoms(lambda v: q * (1.0 - q) ** (v - 1.0), lambda n: (1.0 - q) ** n, 1),
            )
        ]
    if isinstance(dist, Poisson):
        m = dist.mean
        return [
            (
                1.0,
                _integer_atoms(
                    lambda v: stats.poisson.pmf(v, m), lambda n: float(stats.poisson.sf(n, m)), 0
                ),
            )
        ]
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
        """S = K D / k for job classes (probability, need, duration), paper 004 §3.1."""
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
        """The law S_i of the sizes of need-i jobs, for each need i (paper 004 §5.1)."""
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
        """rho = lambda E[S] (paper 004 §3.1)."""
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
