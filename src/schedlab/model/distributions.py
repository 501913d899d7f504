"""Probability distributions for durations, demands, inter-arrival times and counts.

Every distribution is a pydantic model tagged by ``dist`` (TOML:
``{ dist = "exponential", mean = 2 }``; a bare number means a fixed value). Each one knows its
mean, second moment, support and whether it is integer-valued, samples with a NumPy
``Generator``, and can be rescaled to a given mean while keeping its shape (used to set an
inter-arrival distribution's mean from a target load). For the analysis each one gives its law as
closed-form components (``components()``, :mod:`schedlab.model.laws`), and the bounded ones give
the demand law of psychas2019's capacity bounds (``demand_law()``,
:class:`schedlab.optim.rounded_bounds.SizeLaw`).

Parametrisations follow the papers: the hyperexponential is given by its mean and squared
coefficient of variation C^2 (grosof2023, Fig. 4: C^2 = 10) with balanced means; the geometric
duration lives on {1, 2, ...} slots with mean 1/mu (psychas2019, §II).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from schedlab.model import laws

if TYPE_CHECKING:
    from schedlab.optim.rounded_bounds import SizeLaw as DemandLaw

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def mean(self) -> float:
        raise NotImplementedError

    @property
    def second_moment(self) -> float:
        raise NotImplementedError

    @property
    def support(self) -> tuple[float, float]:
        """Smallest and largest value the distribution can take."""
        raise NotImplementedError

    @property
    def integer(self) -> bool:
        return False

    @property
    def scv(self) -> float:
        """Squared coefficient of variation Var/mean^2."""
        m = self.mean
        return (self.second_moment - m * m) / (m * m) if m else 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError

    def with_mean(self, mean: float) -> _Dist:
        """The same shape rescaled to ``mean``."""
        raise NotImplementedError

    def values(self) -> np.ndarray | None:
        """The finite set of values for discrete distributions, else None."""
        return None

    def components(self) -> list[tuple[float, laws.Component]]:
        """The law as weighted closed-form components (:mod:`schedlab.model.laws`), for the
        analysis (:mod:`schedlab.analysis.sizes`)."""
        raise NotImplementedError

    def demand_law(self) -> DemandLaw:
        """The law of a job's demand for the capacity bounds of psychas2019
        (:class:`schedlab.optim.rounded_bounds.SizeLaw`): only laws with a bounded support."""
        raise ValueError(
            f"no size law for a {type(self).__name__} distribution: job sizes need a bounded "
            "support in (0, capacity] (use uniform, discrete, empirical or bounded_pareto)"
        )


class Fixed(_Dist):
    """A constant (``dist = "fixed"`` or ``"deterministic"``, or a bare number)."""

    dist: Literal["fixed", "deterministic"] = "fixed"
    value: NonNegative

    @property
    def mean(self) -> float:
        return self.value

    @property
    def second_moment(self) -> float:
        return self.value * self.value

    @property
    def support(self) -> tuple[float, float]:
        return (self.value, self.value)

    @property
    def integer(self) -> bool:
        return float(self.value).is_integer()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, float(self.value))

    def with_mean(self, mean: float) -> Fixed:
        return Fixed(dist=self.dist, value=mean)

    def values(self) -> np.ndarray:
        return np.array([float(self.value)])

    def demand_law(self) -> DemandLaw:
        from schedlab.optim.rounded_bounds import SizeLaw

        return SizeLaw.discrete([self.value])

    def components(self) -> list[tuple[float, laws.Component]]:
        return [(1.0, laws.AtomsComponent(np.array([self.value]), np.array([1.0])))]


class Exponential(_Dist):
    dist: Literal["exponential"]
    mean_: Positive | None = Field(default=None, alias="mean")
    rate: Positive | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _one_parameter(self) -> Exponential:
        if self.mean_ is not None and self.rate is not None:
            raise ValueError("give either mean or rate, not both")
        return self

    @property
    def mean(self) -> float:
        if self.mean_ is not None:
            return self.mean_
        if self.rate is not None:
            return 1.0 / self.rate
        raise ValueError("exponential distribution needs a mean (or rate)")

    @property
    def second_moment(self) -> float:
        return 2.0 * self.mean**2

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self.mean, n)

    def with_mean(self, mean: float) -> Exponential:
        return Exponential(dist="exponential", mean=mean)

    def components(self) -> list[tuple[float, laws.Component]]:
        return [(1.0, laws.ExponentialComponent(1.0 / self.mean))]


class Uniform(_Dist):
    """Continuous uniform on [low, high]; ``integer = true`` makes it uniform on the integers."""

    dist: Literal["uniform"]
    low: NonNegative
    high: NonNegative
    integer_: bool = Field(default=False, alias="integer")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")
        if self.integer_ and not (float(self.low).is_integer() and float(self.high).is_integer()):
            raise ValueError("an integer uniform needs integer low and high")
        return self

    @property
    def integer(self) -> bool:
        return self.integer_

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def second_moment(self) -> float:
        if self.integer_:
            v = np.arange(self.low, self.high + 1)
            return float(np.mean(v * v))
        return (self.low**2 + self.low * self.high + self.high**2) / 3

    @property
    def support(self) -> tuple[float, float]:
        return (self.low, self.high)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.integer_:
            return rng.integers(int(self.low), int(self.high) + 1, n).astype(float)
        return rng.uniform(self.low, self.high, n)

    def with_mean(self, mean: float) -> Uniform | Discrete:
        f = mean / self.mean
        if self.integer_:  # scaled integers are no longer integers: keep the same atoms
            return Discrete(dist="discrete", values=list(self.values() * f))
        return Uniform(dist="uniform", low=self.low * f, high=self.high * f)

    def values(self) -> np.ndarray | None:
        if self.integer_:
            return np.arange(self.low, self.high + 1)
        return None

    def demand_law(self) -> DemandLaw:
        from schedlab.optim.rounded_bounds import SizeLaw

        if self.integer:
            return SizeLaw.discrete(self.values())
        if self.high == self.low:
            return SizeLaw.discrete([self.low])
        return SizeLaw.uniform(self.low, self.high)

    def components(self) -> list[tuple[float, laws.Component]]:
        if self.integer or self.low == self.high:
            v = self.values() if self.integer else np.array([self.low])
            return [(1.0, laws.AtomsComponent(v, np.full(v.size, 1.0 / v.size)))]
        return [(1.0, laws.UniformComponent(self.low, self.high))]


class Discrete(_Dist):
    """Finitely many values with given probabilities (uniform when omitted)."""

    dist: Literal["discrete"]
    values_: list[NonNegative] = Field(alias="values", min_length=1)
    probabilities: list[NonNegative] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _probabilities(self) -> Discrete:
        if self.probabilities is not None:
            if len(self.probabilities) != len(self.values_):
                raise ValueError(
                    f"{len(self.probabilities)} probabilities for {len(self.values_)} values"
                )
            if not math.isclose(sum(self.probabilities), 1.0, abs_tol=1e-9):
                raise ValueError(f"probabilities sum to {sum(self.probabilities)}, not 1")
        return self

    @property
    def _p(self) -> np.ndarray:
        if self.probabilities is None:
            return np.full(len(self.values_), 1.0 / len(self.values_))
        p = np.asarray(self.probabilities, dtype=float)
        return p / p.sum()

    @property
    def mean(self) -> float:
        return float(np.dot(self._p, self.values_))

    @property
    def second_moment(self) -> float:
        v = np.asarray(self.values_, dtype=float)
        return float(np.dot(self._p, v * v))

    @property
    def support(self) -> tuple[float, float]:
        return (min(self.values_), max(self.values_))

    @property
    def integer(self) -> bool:
        return all(float(v).is_integer() for v in self.values_)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        v = np.asarray(self.values_, dtype=float)
        return v[rng.choice(len(v), size=n, p=self._p)]

    def with_mean(self, mean: float) -> Discrete:
        f = mean / self.mean
        return Discrete(
            dist="discrete", values=[x * f for x in self.values_], probabilities=self.probabilities
        )

    def values(self) -> np.ndarray:
        return np.asarray(self.values_, dtype=float)

    def demand_law(self) -> DemandLaw:
        from schedlab.optim.rounded_bounds import SizeLaw

        return SizeLaw.discrete(self.values_, self.probabilities)

    def components(self) -> list[tuple[float, laws.Component]]:
        return [(1.0, laws.AtomsComponent(self.values(), self._p))]


class Empirical(_Dist):
    """Resample observed values uniformly: inline ``values`` or a one-column CSV/NPY ``file``."""

    dist: Literal["empirical"]
    values_: list[NonNegative] | None = Field(default=None, alias="values")
    file: Path | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _source(self) -> Empirical:
        if (self.values_ is None) == (self.file is None):
            raise ValueError("give exactly one of values or file")
        if self.values_ is not None and len(self.values_) == 0:
            raise ValueError("values must not be empty")
        if self.file is not None:
            data = self.data()
            if data.size == 0:
                raise ValueError(f"{self.file}: no values")
            if not np.all(np.isfinite(data)) or np.any(data < 0):
                raise ValueError(f"{self.file}: values must be finite and >= 0")
        return self

    def data(self) -> np.ndarray:
        if self.values_ is not None:
            return np.asarray(self.values_, dtype=float)
        path = Path(self.file)  # type: ignore[arg-type]
        if not path.exists():
            raise ValueError(f"{path}: no such file")
        if path.suffix == ".npy":
            return np.load(path).astype(float).ravel()
        return np.loadtxt(path, delimiter=",", ndmin=1, dtype=float).ravel()

    @property
    def mean(self) -> float:
        return float(self.data().mean())

    @property
    def second_moment(self) -> float:
        d = self.data()
        return float(np.mean(d * d))

    @property
    def support(self) -> tuple[float, float]:
        d = self.data()
        return (float(d.min()), float(d.max()))

    @property
    def integer(self) -> bool:
        d = self.data()
        return bool(np.all(d == np.round(d)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        d = self.data()
        return d[rng.integers(0, d.size, n)]

    def with_mean(self, mean: float) -> Empirical:
        d = self.data()
        return Empirical(dist="empirical", values=list(d * (mean / d.mean())))

    def values(self) -> np.ndarray:
        return np.unique(self.data())

    def demand_law(self) -> DemandLaw:
        from schedlab.optim.rounded_bounds import SizeLaw

        return SizeLaw.from_samples(self.data())

    def components(self) -> list[tuple[float, laws.Component]]:
        data = self.data()
        return [(1.0, laws.AtomsComponent(data, np.full(data.size, 1.0 / data.size)))]


class Geometric(_Dist):
    """Geometric on {1, 2, ...} with mean 1/p (psychas2019 §II: service of mean 1/mu slots)."""

    dist: Literal["geometric"]
    mean_: Annotated[float, Field(ge=1, allow_inf_nan=False)] | None = Field(
        default=None, alias="mean"
    )
    p: Annotated[float, Field(gt=0, le=1)] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _one_parameter(self) -> Geometric:
        if (self.mean_ is None) == (self.p is None):
            raise ValueError("give exactly one of mean or p")
        return self

    @property
    def success(self) -> float:
        return self.p if self.p is not None else 1.0 / self.mean_  # type: ignore[operator]

    @property
    def integer(self) -> bool:
        return True

    @property
    def mean(self) -> float:
        return 1.0 / self.success

    @property
    def second_moment(self) -> float:
        p = self.success
        return (2.0 - p) / (p * p)

    @property
    def support(self) -> tuple[float, float]:
        return (1.0, 1.0 if self.success == 1 else math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.geometric(self.success, n).astype(float)

    def with_mean(self, mean: float) -> Geometric:
        return Geometric(dist="geometric", mean=max(mean, 1.0))

    def components(self) -> list[tuple[float, laws.Component]]:
        q = self.success
        atoms = laws.integer_atoms(
            lambda v: q * (1.0 - q) ** (v - 1.0), lambda n: (1.0 - q) ** n, 1
        )
        return [(1.0, atoms)]


class Poisson(_Dist):
    """Poisson counts on {0, 1, ...}: arrivals per slot (psychas2019 §VII) or batch sizes."""

    dist: Literal["poisson"]
    mean_: Positive | None = Field(default=None, alias="mean")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def integer(self) -> bool:
        return True

    @property
    def mean(self) -> float:
        if self.mean_ is None:
            raise ValueError("poisson distribution needs a mean")
        return self.mean_

    @property
    def second_moment(self) -> float:
        return self.mean + self.mean**2

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.poisson(self.mean, n).astype(float)

    def with_mean(self, mean: float) -> Poisson:
        return Poisson(dist="poisson", mean=mean)

    def components(self) -> list[tuple[float, laws.Component]]:
        from scipy import stats

        m = self.mean
        atoms = laws.integer_atoms(
            lambda v: stats.poisson.pmf(v, m), lambda n: float(stats.poisson.sf(n, m)), 0
        )
        return [(1.0, atoms)]


class HyperExponential(_Dist):
    """Two-phase hyperexponential with balanced means, given its mean and C^2 >= 1.

    Phase i is chosen with probability p_i and has rate mu_i, with p_1/mu_1 = p_2/mu_2
    ("balanced means"): p_1 = (1 + sqrt((C^2-1)/(C^2+1)))/2, mu_i = 2 p_i / mean. This is the usual
    two-moment fit used for grosof2023 Fig. 4 (C^2 = 10). Explicit phases can be given instead with
    ``probabilities`` and ``means``.
    """

    dist: Literal["hyperexponential"]
    mean_: Positive | None = Field(default=None, alias="mean")
    scv_: Annotated[float, Field(ge=1, allow_inf_nan=False)] | None = Field(
        default=None, alias="scv"
    )
    probabilities: list[Positive] | None = None
    means: list[Positive] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _parameters(self) -> HyperExponential:
        explicit = self.probabilities is not None or self.means is not None
        if explicit:
            if self.probabilities is None or self.means is None:
                raise ValueError("explicit phases need both probabilities and means")
            if len(self.probabilities) != len(self.means):
                raise ValueError("probabilities and means must have the same length")
            if not math.isclose(sum(self.probabilities), 1.0, abs_tol=1e-9):
                raise ValueError("phase probabilities must sum to 1")
            if self.mean_ is not None or self.scv_ is not None:
                raise ValueError("give either (mean, scv) or (probabilities, means)")
        elif self.scv_ is None:
            raise ValueError("hyperexponential needs scv (C^2 >= 1) or explicit phases")
        return self

    def phases(self) -> tuple[np.ndarray, np.ndarray]:
        """Phase probabilities and phase means."""
        if self.probabilities is not None and self.means is not None:
            return np.asarray(self.probabilities), np.asarray(self.means)
        m, c2 = self.mean, float(self.scv_)  # type: ignore[arg-type]
        p1 = 0.5 * (1.0 + math.sqrt((c2 - 1.0) / (c2 + 1.0)))
        p = np.array([p1, 1.0 - p1])
        with np.errstate(divide="ignore"):
            means = np.where(p > 0, m / (2.0 * p), m)
        return p, means

    @property
    def mean(self) -> float:
        if self.means is not None and self.probabilities is not None:
            return float(np.dot(self.probabilities, self.means))
        if self.mean_ is None:
            raise ValueError("hyperexponential distribution needs a mean")
        return self.mean_

    @property
    def second_moment(self) -> float:
        p, means = self.phases()
        return float(np.dot(p, 2.0 * means * means))

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        p, means = self.phases()
        phase = rng.choice(len(p), size=n, p=p)
        return rng.exponential(1.0, n) * means[phase]

    def with_mean(self, mean: float) -> HyperExponential:
        if self.means is not None and self.probabilities is not None:
            f = mean / self.mean
            return HyperExponential(
                dist="hyperexponential",
                probabilities=self.probabilities,
                means=[x * f for x in self.means],
            )
        return HyperExponential(dist="hyperexponential", mean=mean, scv=self.scv_)

    def components(self) -> list[tuple[float, laws.Component]]:
        p, means = self.phases()
        return [
            (float(w), laws.ExponentialComponent(1.0 / float(m)))
            for w, m in zip(p, means, strict=True)
            if w > 0
        ]


class Pareto(_Dist):
    """Pareto with shape alpha and scale xm (P(X > x) = (xm/x)^alpha); or give mean (alpha > 1)."""

    dist: Literal["pareto"]
    alpha: Positive
    xm: Positive | None = None
    mean_: Positive | None = Field(default=None, alias="mean")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _parameters(self) -> Pareto:
        if self.xm is not None and self.mean_ is not None:
            raise ValueError("give either xm or mean, not both")
        if self.mean_ is not None and self.alpha <= 1:
            raise ValueError("a Pareto with alpha <= 1 has no finite mean")
        return self

    @property
    def scale(self) -> float:
        if self.xm is not None:
            return self.xm
        if self.mean_ is not None:
            return self.mean_ * (self.alpha - 1.0) / self.alpha
        raise ValueError("pareto distribution needs xm or mean")

    @property
    def mean(self) -> float:
        return math.inf if self.alpha <= 1 else self.alpha * self.scale / (self.alpha - 1.0)

    @property
    def second_moment(self) -> float:
        if self.alpha <= 2:
            return math.inf
        return self.alpha * self.scale**2 / (self.alpha - 2.0)

    @property
    def support(self) -> tuple[float, float]:
        return (self.scale, math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.scale * (1.0 + rng.pareto(self.alpha, n))

    def with_mean(self, mean: float) -> Pareto:
        return Pareto(dist="pareto", alpha=self.alpha, mean=mean)

    def components(self) -> list[tuple[float, laws.Component]]:
        return [(1.0, laws.ParetoComponent(self.alpha, self.scale))]


class BoundedPareto(_Dist):
    """Pareto with shape alpha truncated to [low, high]."""

    dist: Literal["bounded_pareto"]
    alpha: Positive
    low: Positive
    high: Positive

    @model_validator(mode="after")
    def _ordered(self) -> BoundedPareto:
        if self.high <= self.low:
            raise ValueError(f"high ({self.high}) must be > low ({self.low})")
        return self

    def _moment(self, k: int) -> float:
        a, lo, hi = self.alpha, self.low, self.high
        norm = a * lo**a / (1.0 - (lo / hi) ** a)
        if math.isclose(a, k):
            return norm * math.log(hi / lo)
        return norm * (hi ** (k - a) - lo ** (k - a)) / (k - a)

    @property
    def mean(self) -> float:
        return self._moment(1)

    @property
    def second_moment(self) -> float:
        return self._moment(2)

    @property
    def support(self) -> tuple[float, float]:
        return (self.low, self.high)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        a, lo, hi = self.alpha, self.low, self.high
        u = rng.random(n)
        return lo * (1.0 - u * (1.0 - (lo / hi) ** a)) ** (-1.0 / a)

    def with_mean(self, mean: float) -> BoundedPareto:
        f = mean / self.mean
        return BoundedPareto(
            dist="bounded_pareto", alpha=self.alpha, low=self.low * f, high=self.high * f
        )

    def demand_law(self) -> DemandLaw:
        from schedlab.optim.rounded_bounds import SizeLaw

        a, lo, hi = self.alpha, self.low, self.high

        def ppf(u: np.ndarray) -> np.ndarray:
            u = np.asarray(u, dtype=float)
            x = lo * (1.0 - u * (1.0 - (lo / hi) ** a)) ** (-1.0 / a)
            return np.clip(x, lo, hi)

        return SizeLaw.continuous(ppf, lo, hi)

    def components(self) -> list[tuple[float, laws.Component]]:
        return [(1.0, laws.ParetoComponent(self.alpha, self.low, self.high))]


class LogNormal(_Dist):
    """Log-normal given its mean and C^2 (or sigma of the underlying normal)."""

    dist: Literal["lognormal"]
    mean_: Positive | None = Field(default=None, alias="mean")
    scv_: Positive | None = Field(default=None, alias="scv")
    sigma: Positive | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _shape(self) -> LogNormal:
        if (self.scv_ is None) == (self.sigma is None):
            raise ValueError("give exactly one of scv or sigma")
        return self

    @property
    def _sigma2(self) -> float:
        if self.sigma is not None:
            return self.sigma**2
        return math.log1p(float(self.scv_))  # type: ignore[arg-type]

    @property
    def mean(self) -> float:
        if self.mean_ is None:
            raise ValueError("lognormal distribution needs a mean")
        return self.mean_

    @property
    def second_moment(self) -> float:
        return self.mean**2 * math.exp(self._sigma2)

    @property
    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        s2 = self._sigma2
        return rng.lognormal(math.log(self.mean) - s2 / 2.0, math.sqrt(s2), n)

    def with_mean(self, mean: float) -> LogNormal:
        return LogNormal(dist="lognormal", mean=mean, scv=self.scv_, sigma=self.sigma)

    def components(self) -> list[tuple[float, laws.Component]]:
        s2 = self._sigma2
        return [(1.0, laws.LogNormalComponent(math.log(self.mean) - s2 / 2.0, math.sqrt(s2)))]


Distribution = Annotated[
    Union[  # noqa: UP007 - a discriminated union needs the typing form
        Fixed,
        Exponential,
        Uniform,
        Discrete,
        Empirical,
        Geometric,
        Poisson,
        HyperExponential,
        Pareto,
        BoundedPareto,
        LogNormal,
    ],
    Field(discriminator="dist"),
]

DIST_NAMES = (
    "fixed",
    "deterministic",
    "exponential",
    "uniform",
    "discrete",
    "empirical",
    "geometric",
    "poisson",
    "hyperexponential",
    "pareto",
    "bounded_pareto",
    "lognormal",
)


def as_distribution(value: object) -> object:
    """Let a bare number stand for a fixed value (a pydantic ``before`` validator)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return {"dist": "fixed", "value": value}
    return value
