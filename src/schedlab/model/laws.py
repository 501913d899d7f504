"""Job-size and duration laws in closed form: the components :mod:`schedlab.analysis` computes with.

Each spec distribution of :mod:`schedlab.model.distributions` gives its law as weighted
components (``dist.components()``): exponential, uniform, atoms (fixed, discrete, empirical,
integer uniform, and geometric and Poisson truncated where the tail mass is below
``TAIL_TRUNCATION``, renormalized), Pareto (bounded or not) and log-normal, each with its cdf,
density, partial moments ``E[X^n 1{X <= x}]``, moments, support, scaling and sampler, vectorized
over x. Any other continuous law can be given as a frozen ``scipy.stats`` distribution
(:class:`NumericComponent`, partial moments by ``scipy.integrate.quad``). The mixtures of these
(:class:`schedlab.analysis.sizes.SizeLaw`) are the job-size laws of the analysis.
"""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TAIL_TRUNCATION = 1e-16  # tail mass dropped from geometric/Poisson atoms


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
        from scipy import special  # on use: importing scipy takes ~0.5 s

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


def _interval_scaled(
    low: float, high: float, law: Callable[[float, float], Component]
) -> Component:
    """A law on [low, high] scaled: itself, or the point mass at low when scaling rounded a
    support one or two ulps wide (low < high in the spec) down to a single double."""
    if low < high:
        return law(low, high)
    return AtomsComponent(np.array([low]), np.array([1.0]))


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
        # (high^(n+1) - low^(n+1)) / ((n+1)(high - low)) without the cancellation of a narrow
        # support: the mean of high^i low^(n-i), i = 0..n
        return sum(self.high**i * self.low ** (n - i) for i in range(n + 1)) / (n + 1)

    @property
    def support(self) -> tuple[float, float]:
        return (self.low, self.high)

    def scaled(self, c: float) -> Component:
        return _interval_scaled(self.low * c, self.high * c, UniformComponent)

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

    def scaled(self, c: float) -> Component:
        return _interval_scaled(
            self.low * c, self.high * c, lambda low, high: ParetoComponent(self.alpha, low, high)
        )

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
        from scipy import special  # on use: importing scipy takes ~0.5 s

        return special.ndtr(self._z(x))

    def sf(self, x: np.ndarray) -> np.ndarray:
        from scipy import special  # on use: importing scipy takes ~0.5 s

        return special.ndtr(-self._z(x))

    def pdf(self, x: np.ndarray) -> np.ndarray:
        pos = x > 0
        y = np.where(pos, x, 1.0)
        z = self._z(y)
        return np.where(pos, np.exp(-0.5 * z * z) / (y * self.sigma * math.sqrt(2 * math.pi)), 0.0)

    def partial_moment(self, n: int, x: np.ndarray) -> np.ndarray:
        # E[X^n 1{X <= x}] = exp(n mu + n^2 sigma^2 / 2) Phi((ln x - mu - n sigma^2) / sigma)
        from scipy import special  # on use: importing scipy takes ~0.5 s

        return self.moment(n) * special.ndtr(self._z(x, n * self.sigma**2))

    def moment(self, n: int) -> float:
        return math.exp(n * self.mu + 0.5 * (n * self.sigma) ** 2)

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def scaled(self, c: float) -> LogNormalComponent:
        return LogNormalComponent(self.mu + math.log(c), self.sigma)

    def isf(self, q: float) -> float:
        from scipy import special  # on use: importing scipy takes ~0.5 s

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
    from scipy import integrate  # on use: importing scipy takes ~0.5 s

    value, _ = integrate.quad(fun, lo, hi, limit=200, epsabs=0.0, epsrel=1e-11)
    return float(value)


def integer_atoms(
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
