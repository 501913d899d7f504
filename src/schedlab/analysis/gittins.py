"""The Gittins rank of grosof2023 §5.1 and the mean response time of Gittins-1 (SOAP).

**Rank.** A job with server need i and age a (attained size) has rank

    rank_i(a) = inf_{b > a} E[min(S_i, b) - a | S_i > a] / P(S_i <= b | S_i > a)
              = inf_{b > a} (E[min(S_i, b)] - E[min(S_i, a)]) / (F_i(b) - F_i(a)),

S_i the size law of need-i jobs (Gittins, Glazebrook & Weber 2011; Scully & Harchol-Balter 2021;
grosof2023 §5.1). Computed exactly for

* exponential S: the ratio is 1/mu for every b, so the rank is the mean;
* hyperexponential (any mixture of exponentials): the hazard h is decreasing (DHR). Writing
  1 - F = f / h, the ratio is the f-weighted average of 1/h over (a, b]; 1/h increases, so the
  average exceeds 1/h(a) and tends to it as b -> a+: rank(a) = 1/h(a) (not attained);
* deterministic s: for b < s the denominator is 0, for b >= s the ratio is s - a;
* discrete / empirical: between atoms the numerator grows and the denominator is constant, so the
  infimum is over b at the atoms v > a; with running sums this is O(#atoms) per age;

and numerically for any other law (a dense grid of b plus the limits b -> a+ (1/hazard) and
b -> inf (mean residual life), refined by bounded scalar minimization, on the exact cdf and
partial expectations of :mod:`schedlab.analysis.sizes`).

**Gittins-1** is the resource-pooled M/G/1 that serves the job of least rank, with the scheduler
knowing each job's need but not its size (ties first-come first-served). Its mean response time
follows from SOAP (Scully, Harchol-Balter & Scheller-Wolf, "SOAP: One Clean Analysis of All
Age-Based Scheduling Policies", POMACS 2(1) 2018, Thm 5.5). For a tagged job of need i and size
x with worst future rank r = sup_{0 <= a < x} rank_i(a):

    E[T_i(x)] = lambda sum_k E[(X_k^old[r])^2] / (2 (1 - rho_0^old[r]) (1 - rho^new[r]))
                + int_0^x da / (1 - rho^new[sup_{a <= b < x} rank_i(b)]),

* rho^new[r] = lambda E[min(S, tau(r))], tau(r) = first age at which the (random) job's rank is
  >= r: the service a later arrival gets before it stops outranking the tagged job;
* X_k^old[r] = the service an earlier job gets during the k-th maximal age interval [b_k, c_k]
  in which its rank is <= r (0 if it completes before b_k); rho_0^old = lambda E[X_0^old] where
  X_0 counts only if its interval starts at age 0.

E[T] = sum_i P(K = i) E_x[E[T_i(x)]]. When rank_i is nondecreasing (exponential, DHR) the
residence integral is x / (1 - rho^new[rank_i(x-)]) and E_x is one quadrature. When rank_i is
piecewise linear (deterministic and discrete laws, exactly; tabulated laws), sup_{[a, x)} rank_i
is piecewise linear in a, and with g(r) = 1 / (1 - rho^new[r]) and G its antiderivative the
residence integral of a job whose size is a knot is a sum of closed forms in g and G at the
finitely many segment values (G by quadrature between consecutive values).

Hyperexponential ranks approach their supremum 1/min(rate) exponentially fast, so rank levels
are carried as (supremum, gap) pairs (:class:`Level`) and level sets are found on log(gap).

Exactness: the SOAP formula is exact; it is evaluated exactly (up to quadrature and root-finding
tolerance, ~1e-9 relative) when every need class's size law is exponential, hyperexponential,
deterministic or discrete with at most ``MAX_EXACT_ATOMS`` atoms (:func:`is_exact`). Other laws use
the tabulated rank (kind 4), and sizes between table knots are averaged by the trapezoid rule:
approximate (measured: 2e-4 relative for a log-normal with C^2 = 3, converging as the table grows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from schedlab.analysis.sizes import (
    AtomsComponent,
    ExponentialComponent,
    SizeLaw,
    as_size_law,
)
from schedlab.analysis.srpt import check_arrival_rate
from schedlab.policies.pooled.gittins_rank import (
    KIND_CONSTANT,
    KIND_DETERMINISTIC,
    KIND_DISCRETE,
    KIND_HYPEREXPONENTIAL,
    KIND_TABLE,
    GittinsTables,
)
from schedlab.policies.pooled.gittins_rank import gittins_rank as _compiled_rank

MAX_EXACT_ATOMS = 256  # discrete laws with more atoms are tabulated (kind 4)
TABLE_POINTS = 1536  # ages of a kind-4 table (plus atoms and breakpoints)
TABLE_TAIL = 1e-12  # unbounded laws are tabulated up to the age a with P(S > a) = TABLE_TAIL

KIND_NAMES = {
    KIND_CONSTANT: "constant",
    KIND_HYPEREXPONENTIAL: "hyperexponential",
    KIND_DETERMINISTIC: "deterministic",
    KIND_DISCRETE: "discrete",
    KIND_TABLE: "table",
}


# ---- classification and exact ranks -------------------------------------------------------------


def _exponential_phases(law: SizeLaw) -> tuple[np.ndarray, np.ndarray] | None:
    if not all(isinstance(c, ExponentialComponent) for c in law.components):
        return None
    rates = np.array([c.rate for c in law.components])  # type: ignore[attr-defined]
    return np.asarray(law.weights), rates


def _atoms_only(law: SizeLaw) -> tuple[np.ndarray, np.ndarray] | None:
    if not all(isinstance(c, AtomsComponent) for c in law.components):
        return None
    return law.atoms()


def classify(law: SizeLaw) -> int:
    """The kind of a size law's rank representation (KIND_*): 0-3 for exponential,
    hyperexponential, deterministic and discrete (at most MAX_EXACT_ATOMS atoms) laws; 4 (a
    table) otherwise, exact for discrete laws with more atoms, numerical for all others."""
    phases = _exponential_phases(law)
    if phases is not None:
        rates = phases[1]
        return KIND_CONSTANT if np.allclose(rates, rates[0], rtol=1e-12) else KIND_HYPEREXPONENTIAL
    atoms = _atoms_only(law)
    if atoms is not None:
        if atoms[0].size == 1:
            return KIND_DETERMINISTIC
        if atoms[0].size <= MAX_EXACT_ATOMS:
            return KIND_DISCRETE
    return KIND_TABLE


def _rank_hyperexponential(p: np.ndarray, mu: np.ndarray, age: np.ndarray) -> np.ndarray:
    shift = mu.min()
    w = p[None, :] * np.exp(-(mu[None, :] - shift) * age[:, None])
    return w.sum(axis=1) / (w * mu[None, :]).sum(axis=1)


def _rank_discrete(values: np.ndarray, probs: np.ndarray, age: np.ndarray) -> np.ndarray:
    out = np.zeros(age.shape)
    # tails summed from the end: accurate for the tiny masses of long (e.g. geometric) tails
    tail_p = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])  # P(S >= v_i)
    tail_pv = np.concatenate([np.cumsum((probs * values)[::-1])[::-1], [0.0]])
    for idx, a in np.ndenumerate(age):
        j = int(np.searchsorted(values, a, side="right"))
        if j >= values.size:
            continue
        d = tail_p[j] - tail_p[j + 1 :]  # P(a < S <= v_m)
        tail = tail_p[j + 1 :]  # P(S > v_m)
        num = (tail_pv[j] - tail_pv[j + 1 :]) - a * d + (values[j:] - a) * tail
        out[idx] = float(np.min(num / d))
    return out


def _ratio(law: SizeLaw, a: float, b: np.ndarray) -> np.ndarray:
    """(E[min(S, b)] - E[min(S, a)]) / (F(b) - F(a)), inf where the denominator is 0."""
    num = np.asarray(law.mean_min(b)) - float(law.mean_min(a))
    den = np.asarray(law.cdf(b)) - float(law.cdf(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 1e-300, num / den, np.inf)


def _limits(law: SizeLaw, a: float) -> list[float]:
    """The b -> a+ limit (1 / hazard) and, for unbounded support, the b -> inf limit (MRL)."""
    out = []
    sa = float(law.sf(a))
    dens = float(law.pdf(a))
    if dens > 0:
        out.append(sa / dens)
    if math.isinf(law.support[1]) and math.isfinite(law.mean):
        out.append((law.mean - float(law.mean_min(a))) / sa)
    return out


def _numeric_rank(law: SizeLaw, a: float) -> float:
    if float(law.sf(a)) <= 0.0:
        return 0.0
    hi = law.support[1]
    if math.isinf(hi):
        hi = law.isf(TABLE_TAIL)
    hi = max(hi, a * (1 + 1e-9) + 1e-300)
    grid = a + (hi - a) * np.concatenate([np.geomspace(1e-9, 1.0, 400), np.linspace(0, 1, 401)[1:]])
    extra = law.breakpoints()
    atoms = law.atoms()[0]
    cand = np.unique(np.concatenate([grid, extra[extra > a], atoms[atoms > a]]))
    values = _ratio(law, a, cand)
    best_i = int(np.argmin(values))
    best = float(values[best_i])
    if 0 < best_i < cand.size - 1 and not np.isin(cand[best_i], atoms):
        lo, up = float(cand[best_i - 1]), float(cand[best_i + 1])
        res = optimize.minimize_scalar(
            lambda b: float(_ratio(law, a, np.array([b]))[0]),
            bounds=(lo, up),
            method="bounded",
            options={"xatol": 1e-12 * max(abs(up), 1.0)},
        )
        if res.success:
            best = min(best, float(res.fun))
    return min([best, *_limits(law, a)])


def gittins_rank(size_law: Any, age: float | Sequence[float] | np.ndarray) -> Any:
    """Gittins rank (grosof2023 §5.1) of a job whose size law is ``size_law``, at ``age`` (in size
    units). Exact for exponential, hyperexponential, deterministic and discrete laws; numerical
    minimization over b otherwise (module docstring). Rank 0 at or past the largest size."""
    law = as_size_law(size_law)
    ages = np.asarray(age, dtype=float)
    if np.any(ages < 0) or np.any(~np.isfinite(ages)):
        raise ValueError("ages must be finite and >= 0")
    kind = classify(law)
    if kind in (KIND_CONSTANT, KIND_HYPEREXPONENTIAL):
        p, mu = _exponential_phases(law)  # type: ignore[misc]
        out = _rank_hyperexponential(p, mu, np.atleast_1d(ages)).reshape(ages.shape)
    elif _atoms_only(law) is not None:
        v, pr = law.atoms()
        out = _rank_discrete(v, pr, ages)
    else:
        out = np.array([_numeric_rank(law, float(a)) for a in ages.ravel()]).reshape(ages.shape)
    return float(out) if np.ndim(age) == 0 else out


def gittins_rank_brute_force(size_law: Any, age: float, *, points: int = 200_001) -> float:
    """The §5.1 formula evaluated by brute force, for tests: the numerator int_a^b P(S > t) dt by
    the trapezoid rule on a dense grid of t (from the survival function and the atoms), the
    denominator from the cdf, and the minimum over every grid point b (and every atom) > a."""
    law = as_size_law(size_law)
    sa = float(law.sf(age))
    if sa <= 0:
        return 0.0
    hi = law.support[1]
    if math.isinf(hi):
        hi = law.isf(1e-10)
    atoms = law.atoms()[0]
    bulk = max(law.isf(1e-3), age) if sa > 1e-3 else hi  # where most of the mass is
    t = np.unique(
        np.concatenate(
            [
                age + (hi - age) * np.linspace(0.0, 1.0, points),
                age + (bulk - age) * np.linspace(0.0, 1.0, points),
                age + (hi - age) * np.geomspace(1e-8, 1.0, points // 4),
                atoms[(atoms > age) & (atoms <= hi)],
            ]
        )
    )
    surv = np.asarray(law.sf(t))
    # P(S > t) is right-continuous with downward jumps at atoms: the trapezoid rule on each
    # [t_i, t_i+1] with the left limit P(S >= t_i+1) at its right end.
    before = surv + np.asarray(law.atom_at(t))
    num = np.concatenate([[0.0], np.cumsum(0.5 * (surv[:-1] + before[1:]) * np.diff(t))])
    den = np.asarray(law.cdf(t)) - float(law.cdf(age))
    ok = den > 1e-14
    return float(np.min(num[ok] / den[ok]))


# ---- compact representation for compiled code ---------------------------------------------------


@dataclass(frozen=True)
class GittinsRepresentation:
    """A need class's rank as the compiled evaluator takes it (see policies/pooled/gittins_rank)."""

    kind: int
    params_a: np.ndarray
    params_b: np.ndarray
    exact: bool = True  # False: a numerically computed, tabulated rank

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]

    def rank(self, age: float) -> float:
        """Rank at ``age`` through the compiled evaluator."""
        return float(_compiled_rank(self.kind, self.params_a, self.params_b, float(age)))


def _quantile_grid(law: SizeLaw, n: int, hi: float) -> np.ndarray:
    """About n ages spread by probability: uniform in P(S <= a), and log-uniform in the tail
    P(S > a) from 1e-1 down to TABLE_TAIL."""
    q = np.concatenate(
        [np.linspace(0.0, 1.0, n // 2 + 1)[1:-1], np.geomspace(1e-1, TABLE_TAIL, n // 2)]
    )
    return np.minimum(law.isf_many(q), hi)


def _table_ages(law: SizeLaw, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Ages of a kind-4 table (half spread by probability, a quarter linear, a quarter geometric
    near 0) and the atoms. Up to ``points`` atoms each get a knot just below them (the rank's
    left limit) and one at them (its value after the jump); a law with more atoms (a large
    empirical law) is tabulated on the grid only."""
    hi = law.support[1]
    if math.isinf(hi):
        hi = law.isf(TABLE_TAIL)
    atoms = law.atoms()[0]
    knots = atoms if atoms.size <= points else np.empty(0)
    base = np.concatenate(
        [
            [0.0, hi],
            _quantile_grid(law, points // 2, hi),
            np.linspace(0.0, hi, points // 4),
            hi * np.geomspace(1e-7, 1.0, points // 4),
            law.breakpoints() if atoms.size <= points else np.empty(0),
            knots,
            knots * (1.0 - 1e-9),
        ]
    )
    base = np.unique(base[(base >= 0) & (base <= hi)])
    return base, atoms


def _tabulate(law: SizeLaw, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranks at the table ages: the minimum of the ratio over a common grid of b (all table ages
    and a dense grid) and the exact limits; vectorized over ages in chunks."""
    ages, atoms = _table_ages(law, points)
    hi = ages[-1]
    grid = np.unique(
        np.concatenate(
            [
                ages,
                atoms[atoms <= hi],  # the minimizing b of a discrete part is at an atom
                _quantile_grid(law, 2 * points, hi),
                np.linspace(0.0, hi, points),
                hi * np.geomspace(1e-9, 1.0, points),
            ]
        )
    )
    m_grid = np.asarray(law.mean_min(grid))
    f_grid = np.asarray(law.cdf(grid))
    m_age = np.asarray(law.mean_min(ages))
    f_age = np.asarray(law.cdf(ages))
    ranks = np.empty(ages.size)
    chunk = max(1, 4_000_000 // grid.size)
    for s in range(0, ages.size, chunk):
        a = ages[s : s + chunk]
        num = m_grid[None, :] - m_age[s : s + chunk, None]
        den = f_grid[None, :] - f_age[s : s + chunk, None]
        valid = (grid[None, :] > a[:, None]) & (den > 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(valid, num / np.where(valid, den, 1.0), np.inf)
        ranks[s : s + chunk] = r.min(axis=1)
    for i, a in enumerate(ages):
        if float(law.sf(a)) <= 0:
            ranks[i] = 0.0
            continue
        lim = _limits(law, float(a))
        if lim:
            ranks[i] = min(ranks[i], *lim)
    return ages, ranks


def gittins_representation(
    size_law: Any, *, table_points: int = TABLE_POINTS
) -> GittinsRepresentation:
    """The compact (kind, params_a, params_b) form of a need class's rank (module docstring of
    :mod:`schedlab.policies.pooled.gittins_rank`). Kinds 0-3 exact, 4 tabulated."""
    law = as_size_law(size_law)
    kind = classify(law)
    if kind in (KIND_CONSTANT, KIND_HYPEREXPONENTIAL):
        p, mu = _exponential_phases(law)  # type: ignore[misc]
        if kind == KIND_CONSTANT:
            return GittinsRepresentation(kind, np.array([1.0 / float(mu[0])]), np.zeros(1))
        return GittinsRepresentation(
            kind, np.ascontiguousarray(p, float), np.ascontiguousarray(mu, float)
        )
    if kind in (KIND_DETERMINISTIC, KIND_DISCRETE):
        v, pr = law.atoms()
        if kind == KIND_DETERMINISTIC:
            return GittinsRepresentation(kind, np.array([float(v[0])]), np.zeros(1))
        return GittinsRepresentation(
            kind, np.ascontiguousarray(v, float), np.ascontiguousarray(pr, float)
        )
    atoms = _atoms_only(law)
    if atoms is not None:  # many atoms: the exact piecewise-linear rank as a table with jumps
        ages, ranks = _envelope_table(_discrete_envelope(*atoms))
        return GittinsRepresentation(KIND_TABLE, ages, ranks, exact=True)
    ages, ranks = _tabulate(law, table_points)
    return GittinsRepresentation(KIND_TABLE, ages, ranks, exact=False)


def _envelope_table(rank: _PiecewiseRank) -> tuple[np.ndarray, np.ndarray]:
    """A piecewise-linear rank as kind-4 (ages, ranks): each segment contributes its two ends,
    so a knot appears twice (left limit, then value) and the rank is 0 from the last knot."""
    ages = np.empty(2 * rank.left.size + 1)
    ranks = np.empty_like(ages)
    ages[0:-1:2] = rank.t[:-1]
    ranks[0:-1:2] = rank.left
    ages[1:-1:2] = rank.t[1:]
    ranks[1:-1:2] = rank.right
    ages[-1] = rank.t[-1]
    ranks[-1] = 0.0
    return ages, ranks


def gittins_tables(model_or_law: Any, *, table_points: int = TABLE_POINTS) -> GittinsTables:
    """Per-need Gittins ranks of a compiled pooled model (or a SizeLaw), packed for compiled code.

    Ages and ranks are in size units: a job of need n, duration d, remaining duration r has age
    n (d - r) / k (grosof2023 §3.1)."""
    law = model_or_law if isinstance(model_or_law, SizeLaw) else SizeLaw.from_model(model_or_law)
    reps = [
        gittins_representation(part, table_points=table_points) for part in law.by_need().values()
    ]
    sizes = [r.params_a.size for r in reps]
    return GittinsTables(
        needs=np.array(list(law.by_need()), dtype=float),
        kinds=np.array([r.kind for r in reps], dtype=np.int64),
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        params_a=np.ascontiguousarray(np.concatenate([r.params_a for r in reps]), dtype=float),
        params_b=np.ascontiguousarray(np.concatenate([r.params_b for r in reps]), dtype=float),
        exact=all(r.exact for r in reps),
    )


# ---- rank functions for SOAP -------------------------------------------------------------------


@dataclass(frozen=True)
class Level:
    """A rank value top - gap. Hyperexponential ranks approach their supremum 1 / min rate
    exponentially fast, so near it the rank itself cannot tell ages apart in floating point;
    keeping the (exactly computed) distance to the supremum does."""

    top: float
    gap: float = 0.0

    @property
    def value(self) -> float:
        return self.top - self.gap


class _Rank:
    """A need class's rank as a function of age, with the level-set queries SOAP needs."""

    nondecreasing = False
    nonincreasing = False

    def level(self, a: float) -> Level:
        """The rank at age a."""
        raise NotImplementedError

    def first_at_least(self, r: Level) -> float:
        """inf{a >= 0: rank(a) >= r} (inf if never)."""
        raise NotImplementedError

    def first_at_least_many(self, values: np.ndarray) -> np.ndarray:
        """first_at_least(Level(v)) for many rank values v."""
        return np.array([self.first_at_least(Level(float(v))) for v in values])

    def sublevel(self, r: Level) -> list[tuple[float, float]]:
        """Maximal age intervals [b, c] on which rank <= r (c may be inf)."""
        raise NotImplementedError

    def sup_on(self, a: float, x: float) -> Level:
        """sup of the rank over [a, x)."""
        raise NotImplementedError

    def knots(self) -> list[float]:
        return []


class _ConstantRank(_Rank):
    nondecreasing = True
    nonincreasing = True

    def __init__(self, c: float) -> None:
        self.c = c

    def _diff(self, r: Level) -> float:
        return (self.c - r.top) + r.gap  # c - r, exactly 0 for r = Level(c)

    def level(self, a: float) -> Level:
        return Level(self.c)

    def first_at_least(self, r: Level) -> float:
        return 0.0 if self._diff(r) >= 0 else math.inf

    def first_at_least_many(self, values: np.ndarray) -> np.ndarray:
        return np.where(self.c >= values, 0.0, math.inf)

    def sublevel(self, r: Level) -> list[tuple[float, float]]:
        return [(0.0, math.inf)] if self._diff(r) <= 0 else []

    def sup_on(self, a: float, x: float) -> Level:
        return Level(self.c)


class _HyperexponentialRank(_Rank):
    """1 / hazard of a mixture of exponentials: continuous and strictly increasing from
    sum p / sum p mu at age 0 to top = 1 / min mu as a -> inf. gap(a) = top - rank(a) =
    sum w (mu - mu_min) / (mu_min sum w mu) with w = p exp(-(mu - mu_min) a), computed without
    cancellation; level sets are found by root-finding on log gap (nearly linear in a)."""

    nondecreasing = True

    def __init__(self, p: np.ndarray, mu: np.ndarray) -> None:
        self.p = [float(v) for v in p]
        self.mu = [float(v) for v in mu]
        self.low = min(self.mu)
        self.top = 1.0 / self.low
        self.gap0 = self.gap(0.0)

    def gap(self, a: float) -> float:
        num = 0.0
        den = 0.0
        for p, mu in zip(self.p, self.mu, strict=True):
            w = p * math.exp(-(mu - self.low) * a)
            num += w * (mu - self.low)
            den += w * mu
        return num / (self.low * den)

    def level(self, a: float) -> Level:
        return Level(self.top, self.gap(a))

    def _threshold(self, r: Level) -> float:
        """G with rank(a) >= r iff gap(a) <= G."""
        return r.gap + (self.top - r.top)

    def _solve(self, g: float) -> float:
        """The age with gap = g, 0 < g < gap(0)."""
        hi = self.top
        while self.gap(hi) > g:
            hi *= 2.0
        log_g = math.log(g)

        def f(a: float) -> float:
            v = self.gap(a)
            return (math.log(v) if v > 0 else -math.inf) - log_g

        return float(optimize.brentq(f, 0.0, hi, xtol=1e-13 * hi, rtol=1e-15))

    def first_at_least(self, r: Level) -> float:
        g = self._threshold(r)
        if g <= 0:
            return math.inf
        if self.gap0 <= g:
            return 0.0
        return self._solve(g)

    def sublevel(self, r: Level) -> list[tuple[float, float]]:
        g = self._threshold(r)
        if g <= 0:
            return [(0.0, math.inf)]
        if self.gap0 < g:
            return []
        return [(0.0, self._solve(g))]

    def sup_on(self, a: float, x: float) -> Level:
        return self.level(x)


class _PiecewiseRank(_Rank):
    """Piecewise-linear rank with jumps: on [t_i, t_{i+1}) linear from left[i] (value at t_i) to
    right[i] (limit at t_{i+1}-); the last knot is the largest size (rank 0 from there)."""

    def __init__(self, t: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        self.t = t
        self.left = left
        self.right = right
        seg_sup = np.maximum(left, right)
        self.seg_sup = seg_sup
        self.prefix = np.maximum.accumulate(seg_sup)
        eps = 1e-12 * max(1.0, float(np.max(np.abs(seg_sup))))
        self.nondecreasing = bool(
            np.all(right >= left - eps) and np.all(left[1:] >= right[:-1] - eps)
        )
        self.nonincreasing = bool(
            np.all(right <= left + eps) and np.all(left[1:] <= right[:-1] + eps)
        )

    def knots(self) -> list[float]:
        return self.t.tolist()

    def _seg(self, a: float) -> int:
        return int(np.clip(np.searchsorted(self.t, a, side="right") - 1, 0, self.left.size - 1))

    def _at(self, i: int, a: float) -> float:
        t0, t1 = self.t[i], self.t[i + 1]
        return float(self.left[i] + (self.right[i] - self.left[i]) * (a - t0) / (t1 - t0))

    def value(self, a: float) -> float:
        if a >= self.t[-1]:
            return 0.0
        return self._at(self._seg(a), a)

    def level(self, a: float) -> Level:
        return Level(self.value(a))

    def first_at_least(self, r: Level) -> float:
        v = r.value
        i = int(np.searchsorted(self.prefix, v, side="left"))
        if i >= self.left.size:
            return math.inf
        if self.left[i] >= v:
            return float(self.t[i])
        t0, t1 = self.t[i], self.t[i + 1]
        return float(t0 + (t1 - t0) * (v - self.left[i]) / (self.right[i] - self.left[i]))

    def first_at_least_many(self, values: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.prefix, values, side="left")
        inside = i < self.left.size
        j = np.minimum(i, self.left.size - 1)
        lv, rv = self.left[j], self.right[j]
        t0, t1 = self.t[j], self.t[j + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = t0 + (t1 - t0) * (values - lv) / (rv - lv)
        return np.where(inside, np.where(lv >= values, t0, cross), math.inf)

    def sublevel(self, r: Level) -> list[tuple[float, float]]:
        v = r.value
        lv, rv = self.left, self.right
        t0, t1 = self.t[:-1], self.t[1:]
        full = np.maximum(lv, rv) <= v
        some = ~full & (np.minimum(lv, rv) <= v)
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = t0 + (t1 - t0) * (v - lv) / (rv - lv)
        rising = lv <= v  # partial: the sublevel part is at the start of the segment
        lo = np.where(full | (some & rising), t0, cross)
        hi = np.where(full | (some & ~rising), t1, cross)
        keep = full | some
        lo, hi = lo[keep], hi[keep]
        if lo.size == 0:
            return []
        gap = lo[1:] > hi[:-1] * (1 + 1e-15) + 1e-300
        first = np.concatenate([[0], np.flatnonzero(gap) + 1])
        last = np.concatenate([np.flatnonzero(gap), [lo.size - 1]])
        return list(zip(lo[first].tolist(), hi[last].tolist(), strict=True))

    def sup_on(self, a: float, x: float) -> Level:
        x = min(x, float(self.t[-1]))
        if x <= a:
            return self.level(a)
        i, j = self._seg(a), self._seg(x)
        if self.t[j] == x and j > i:  # [a, x) ends at a knot: its segment is not entered
            j -= 1
            end_val = float(self.right[j])
        else:
            end_val = self._at(j, x)
        if i == j:
            return Level(max(self._at(i, a), end_val))
        best = max(self._at(i, a), float(self.right[i]), float(self.left[j]), end_val)
        if j > i + 1:
            best = max(best, float(self.seg_sup[i + 1 : j].max()))
        return Level(best)


def _discrete_envelope(values: np.ndarray, probs: np.ndarray) -> _PiecewiseRank:
    """The exact rank of a discrete law: on [v_{j-1}, v_j) it is the lower envelope of the
    decreasing lines L_m(a) = (C_m - a P(S > a)) / P(a < S <= v_m), m >= j."""
    # tails summed from the end: accurate for the tiny masses of long (e.g. geometric) tails
    tail_p = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])  # P(S >= v_i)
    tail_pv = np.concatenate([np.cumsum((probs * values)[::-1])[::-1], [0.0]])
    knots: list[float] = []
    left: list[float] = []
    right: list[float] = []
    starts = np.concatenate([[0.0], values[:-1]])
    for j in range(values.size):
        lo, hi = float(starts[j]), float(values[j])
        if hi <= lo:
            continue
        q = tail_p[j]  # P(S > a) on this interval
        d = q - tail_p[j + 1 :]
        c = (tail_pv[j] - tail_pv[j + 1 :]) + values[j:] * tail_p[j + 1 :]
        slope = -q / d
        inter = c / d  # line value at a = 0
        a = lo
        vals = inter + slope * a
        ties = np.flatnonzero(vals <= vals.min() * (1 + 1e-14) + 1e-300)
        cur = int(ties[np.argmin(slope[ties])])  # the steepest of the lowest lines
        while True:
            knots.append(a)
            left.append(float(inter[cur] + slope[cur] * a))
            steeper = slope < slope[cur] - 1e-300
            nxt_a = hi
            nxt = -1
            if np.any(steeper):
                cand = (inter[steeper] - inter[cur]) / (slope[cur] - slope[steeper])
                idx = np.flatnonzero(steeper)
                ok = cand > a * (1 + 1e-15) + 1e-300
                if np.any(ok & (cand < hi)):
                    k = int(np.argmin(np.where(ok, cand, np.inf)))
                    nxt_a = float(cand[k])
                    # among lines crossing at the same point take the steepest
                    same = idx[np.isclose(cand, nxt_a, rtol=1e-12) & ok]
                    nxt = int(same[np.argmin(slope[same])])
            right.append(float(inter[cur] + slope[cur] * nxt_a))
            if nxt < 0:
                break
            a, cur = nxt_a, nxt
    knots.append(float(values[-1]))
    return _PiecewiseRank(np.array(knots), np.array(left), np.array(right))


def _table_rank(ages: np.ndarray, ranks: np.ndarray) -> _PiecewiseRank:
    """A kind-4 table as a piecewise-linear function (repeated ages become jumps)."""
    keep = np.concatenate([np.diff(ages) > 0, [True]])
    t = ages[keep]
    # value at each kept knot: the last entry for that age (right-continuous)
    last = np.concatenate([np.flatnonzero(np.diff(ages) > 0), [ages.size - 1]])
    first_next = np.concatenate([np.flatnonzero(np.diff(ages) > 0) + 1])
    at_knot = ranks[last]
    left = at_knot[:-1]
    right = ranks[first_next]  # limit from the left at the next knot: its first entry
    return _PiecewiseRank(t, left, right)


def rank_function(size_law: Any, *, table_points: int = TABLE_POINTS) -> _Rank:
    """The rank of a need class as an object with the SOAP level-set queries."""
    law = as_size_law(size_law)
    kind = classify(law)
    if kind in (KIND_CONSTANT, KIND_HYPEREXPONENTIAL):
        p, mu = _exponential_phases(law)  # type: ignore[misc]
        if kind == KIND_CONSTANT:
            return _ConstantRank(1.0 / float(mu[0]))
        return _HyperexponentialRank(p, mu)
    atoms = _atoms_only(law)
    if atoms is not None:
        return _discrete_envelope(*atoms)
    ages, ranks = _tabulate(law, table_points)
    return _table_rank(ages, ranks)


# ---- Gittins-1 by SOAP ------------------------------------------------------------------------


@dataclass
class _Class:
    q: float
    law: SizeLaw
    rank: _Rank


class _Soap:
    """SOAP quantities (module docstring) for Gittins with per-need ranks."""

    def __init__(self, classes: list[_Class], lam: float) -> None:
        self.classes = classes
        self.lam = lam

    def terms(self, r: Level) -> tuple[float, float, float]:
        """(rho^new[r], lambda sum_k E[(X_k^old[r])^2], rho_0^old[r])."""
        new = 0.0
        second = 0.0
        first = 0.0
        for c in self.classes:
            law = c.law
            tau = c.rank.first_at_least(r)
            intervals = c.rank.sublevel(r)
            b = np.array([iv[0] for iv in intervals])
            e = np.array([iv[1] for iv in intervals])
            e_inf = np.isinf(e)
            pts = np.concatenate([[0.0 if math.isinf(tau) else tau], b, np.where(e_inf, 0.0, e)])
            cdf, m1, m2 = law.cdf_moments(pts)
            if not math.isinf(tau):
                new += c.q * (m1[0] + tau * (1.0 - cdf[0]))
            else:
                new += c.q * law.mean
            if intervals:
                nb = b.size
                fb, m1b, m2b = cdf[1 : 1 + nb], m1[1 : 1 + nb], m2[1 : 1 + nb]
                fe = np.where(e_inf, 1.0, cdf[1 + nb :])
                m1e = np.where(e_inf, law.mean, m1[1 + nb :])
                m2e = np.where(e_inf, law.second_moment, m2[1 + nb :])
                # E[(min(S, e) - b)^2; S > b] = E[(S - b)^2; b < S <= e] + (e - b)^2 P(S > e)
                inner = (m2e - m2b) - 2 * b * (m1e - m1b) + b * b * (fe - fb)
                tail = np.where(e_inf, 0.0, (np.where(e_inf, b, e) - b) ** 2 * (1.0 - fe))
                second += c.q * float(np.sum(np.maximum(inner, 0.0) + tail))
                if b[0] == 0.0:
                    first += c.q * (law.mean if e_inf[0] else m1e[0] + e[0] * (1.0 - fe[0]))
        return self.lam * new, self.lam * second, self.lam * first

    def rho_new_many(self, values: np.ndarray) -> np.ndarray:
        """rho^new at many rank values (levels with no gap)."""
        total = np.zeros(values.size)
        for c in self.classes:
            tau = c.rank.first_at_least_many(values)
            fin = np.isfinite(tau)
            mm = np.asarray(c.law.mean_min(np.where(fin, tau, 0.0)))
            total += c.q * np.where(fin, mm, c.law.mean)
        return self.lam * total

    def rho_new(self, r: Level) -> float:
        total = 0.0
        for c in self.classes:
            tau = c.rank.first_at_least(r)
            total += c.q * (c.law.mean if math.isinf(tau) else float(c.law.mean_min(tau)))
        return self.lam * total

    def waiting(self, r: Level) -> float:
        new, second, rho0 = self.terms(r)
        return second / (2.0 * (1.0 - rho0) * (1.0 - new))

    def class_mean(self, c: _Class) -> float:
        rank = c.rank
        law = c.law
        if isinstance(rank, _ConstantRank):
            new, second, rho0 = self.terms(Level(rank.c))
            return second / (2.0 * (1.0 - rho0) * (1.0 - new)) + law.mean / (1.0 - new)
        if rank.nondecreasing:

            def fun(x: float) -> float:
                new, second, rho0 = self.terms(rank.sup_on(0.0, x))
                return second / (2.0 * (1.0 - rho0) * (1.0 - new)) + x / (1.0 - new)

            return law.expect(fun)
        assert isinstance(rank, _PiecewiseRank)
        return self._piecewise_mean(c, rank)

    def _breaks(self) -> list[float]:
        """Rank values where rho^new may jump: every piecewise and constant class's values."""
        out: list[float] = []
        for c in self.classes:
            if isinstance(c.rank, _PiecewiseRank):
                out.extend(c.rank.left.tolist())
                out.extend(c.rank.right.tolist())
            elif isinstance(c.rank, _ConstantRank):
                out.append(c.rank.c)
            elif isinstance(c.rank, _HyperexponentialRank):
                out.append(c.rank.top)
        return out

    def _piecewise_mean(self, c: _Class, rank: _PiecewiseRank) -> float:
        """E[T_i] for a piecewise-linear rank, exactly (module docstring): with g(r) =
        1 / (1 - rho^new[r]) and G its antiderivative, needed only at the finite set V of segment
        values, the residence integral int_0^x g(sup_{[a, x)} rank) da of a job of size x = t_n
        (a knot) is a sum over the segments below x of closed forms in g and G; the waiting
        term needs the waiting time at sup_{[0, x)} rank. Sizes strictly between knots (a
        tabulated continuous law) are averaged with the trapezoid rule on the knots."""
        law = c.law
        t, lv, rv = rank.t, rank.left, rank.right
        own = np.concatenate([lv, rv])
        values = np.unique(np.concatenate([own, self._breaks()]))
        values = values[(values >= own.min()) & (values <= own.max())]
        g = 1.0 / (1.0 - self.rho_new_many(values))
        # G on V: between consecutive values of V no rank function has a knot value, so g is
        # smooth there; 10-point Gauss-Legendre per interval (checked against adaptive quad).
        nodes, weights = np.polynomial.legendre.leggauss(10)
        lo, hi = values[:-1], values[1:]
        pts = 0.5 * (hi + lo)[:, None] + 0.5 * (hi - lo)[:, None] * nodes[None, :]
        g_pts = 1.0 / (1.0 - self.rho_new_many(pts.ravel()))
        pieces = 0.5 * (hi - lo) * (g_pts.reshape(pts.shape) @ weights)
        big_g = np.concatenate([[0.0], np.cumsum(pieces)])

        def at(x: np.ndarray) -> np.ndarray:
            return np.searchsorted(values, x)

        dt = np.diff(t)
        seg_sup = rank.seg_sup
        falling = lv > rv
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(falling, (lv - rv) / dt, 1.0)
        i_l, i_r = at(lv), at(rv)
        n_knots = t.size
        # sizes to evaluate: every knot for a law with a continuous part, else only the atoms
        wanted = np.arange(1, n_knots)
        if law.atomic:
            wanted = np.unique(np.searchsorted(t, law.atoms()[0][law.atoms()[0] > 0]))
            wanted = wanted[(wanted > 0) & (wanted < n_knots)]
        residence = np.zeros(n_knots)
        for n in wanted:  # the residence time of a job of size t_n
            # c[l] = sup of the rank over [t_{l+1}, t_n) (-inf for the last segment)
            c = np.full(n, -np.inf)
            if n > 1:
                c[:-1] = np.maximum.accumulate(seg_sup[1:n][::-1])[::-1]
            has_c = np.isfinite(c)
            i_c = at(np.where(has_c, c, values[0]))
            g_c = np.where(has_c, g[i_c], 0.0)
            big_g_c = np.where(has_c, big_g[i_c], 0.0)
            # rising segment: sup over [a, t_{l+1}) is its right limit, so g is constant
            rising = dt[:n] * g[at(np.maximum(c, seg_sup[:n]))]
            # falling segment: g(max(rank(a), c)), the rank linear with slope -slope[l]
            ll, sl, w = lv[:n], slope[:n], dt[:n]
            whole_line = (big_g[i_l[:n]] - big_g[i_r[:n]]) / sl  # c <= right value
            split = (big_g[i_l[:n]] - big_g_c) / sl + (w - (ll - np.where(has_c, c, ll)) / sl) * g_c
            fall = np.where(c >= ll, w * g_c, np.where(c <= rv[:n], whole_line, split))
            residence[n] = float(np.sum(np.where(falling[:n], fall, rising)))
        prefix = np.concatenate([[-np.inf], np.maximum.accumulate(seg_sup)])  # sup over [0, t_n)
        cache: dict[float, float] = {}
        total_at = np.zeros(n_knots)
        for n in wanted:
            r = float(prefix[n])
            if r not in cache:
                cache[r] = self.waiting(Level(r))
            total_at[n] = cache[r] + residence[n]
        atoms_v, atoms_p = law.atoms()
        mean = 0.0
        if atoms_v.size:
            idx = np.searchsorted(t, atoms_v)
            ok = (idx < n_knots) & (atoms_v > 0)
            if np.any(ok & (t[np.minimum(idx, n_knots - 1)] != atoms_v)):
                raise RuntimeError("an atom of the size law is not a knot of its rank function")
            mean += float(np.sum(atoms_p[ok] * total_at[idx[ok]]))
        if any(comp.continuous for comp in law.components):
            cont = np.zeros(n_knots)
            for w, comp in zip(law.weights, law.components, strict=True):
                if comp.continuous:
                    cont += w * comp.cdf(t)
            mass = np.diff(cont)
            mean += float(np.sum(mass * 0.5 * (total_at[:-1] + total_at[1:])))
        return mean


def _exact_key(law: SizeLaw) -> tuple[Any, ...] | None:
    """Identical keys mean identical size laws (exponential phases or atoms), so the classes
    can be merged."""
    phases = _exponential_phases(law)
    if phases is None:
        phases = _atoms_only(law)
    if phases is None:
        return None
    return (classify(law), phases[0].tobytes(), phases[1].tobytes())


def _soap(
    law: SizeLaw, arrival_rate: float, table_points: int
) -> tuple[_Soap, dict[float, _Class]]:
    """The SOAP evaluator and, for each need, its class. Needs with the same exactly-known size
    law share one class (their jobs are indistinguishable to Gittins), which is also faster."""
    check_arrival_rate(law, arrival_rate)
    if math.isinf(law.second_moment):
        raise ValueError("E[S^2] is infinite: the Gittins-1 waiting time of some classes diverges")
    probs = law.need_probabilities()
    merged: dict[Any, _Class] = {}
    by_need: dict[float, Any] = {}
    for need, part in law.by_need().items():
        key = _exact_key(part)
        key = (need,) if key is None else key
        by_need[need] = key
        if key in merged:
            merged[key].q += probs[need]
        else:
            merged[key] = _Class(probs[need], part, rank_function(part, table_points=table_points))
    return _Soap(list(merged.values()), arrival_rate), {n: merged[k] for n, k in by_need.items()}


def gittins1_mean_response_time_by_need(
    size_law: Any, arrival_rate: float, *, table_points: int = TABLE_POINTS
) -> dict[float, float]:
    """E[T | K = i] of Gittins-1 (per-need Gittins ranks, resource-pooled M/G/1) by SOAP."""
    law = as_size_law(size_law)
    soap, classes = _soap(law, arrival_rate, table_points)
    means: dict[int, float] = {}
    for c in classes.values():
        if id(c) not in means:
            means[id(c)] = soap.class_mean(c)
    return {need: float(means[id(c)]) for need, c in classes.items()}


def gittins1_mean_response_time(
    size_law: Any, arrival_rate: float, *, table_points: int = TABLE_POINTS
) -> float:
    """E[T] of Gittins-1: the resource-pooled M/G/1 serving the job of least Gittins rank, the
    rank of a need-i job being that of S_i (grosof2023 §5.1), by the SOAP formula (module
    docstring). Exact for exponential, hyperexponential, deterministic and discrete need laws;
    tabulated ranks (approximate) otherwise."""
    law = as_size_law(size_law)
    probs = law.need_probabilities()
    by_need = gittins1_mean_response_time_by_need(law, arrival_rate, table_points=table_points)
    return float(sum(probs[n] * t for n, t in by_need.items()))


def is_exact(size_law: Any) -> bool:
    """Whether every need class's rank (and so Gittins-1's E[T]) is computed exactly."""
    law = as_size_law(size_law)
    return all(_exact_key(part) is not None for part in law.by_need().values())
