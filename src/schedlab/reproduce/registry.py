"""Registry of named reproductions, one per paper figure or table.

A reproduction module under ``schedlab.reproduce`` registers :class:`Reproduction` objects; each
one builds its simulation specs (paper scale, or a smaller ``--quick`` variant), runs them through
:meth:`Context.run` (parallel, cached in the output directory), writes its figure(s) and the CSV
behind them with :mod:`schedlab.report.figures`, and checks the paper's stated claims for that
figure, returning each :class:`Claim` with PASS/FAIL and the numbers behind it.

Extra policies (``schedlab reproduce NAME --plugin FILE``) join a reproduction's policy sweeps
of a family they run in (:meth:`Context.extra_policies`) as extra series labelled as the
plugin's; the claims about the built-in policies are unchanged, and a note says where the extra
policies were added and where they did not apply.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError, did_you_mean
from schedlab.experiments.runner import Progress, run_specs
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import SimulationSpec
from schedlab.papers import PAPERS
from schedlab.policies.registry import get_policy
from schedlab.report.figures import Point, variant_titles

PASS, FAIL, NOT_RESOLVED, NOT_CHECKED = "PASS", "FAIL", "NOT RESOLVED", "NOT CHECKED"
AUTHORS = "authors"  # Context.scale of a run at the paper's authors' own run lengths


@dataclass(frozen=True)
class Claim:
    """A claim the paper makes about the figure, checked against our numbers. ``status`` is
    NOT RESOLVED when the data cannot decide (two unstable runs, no steady-state mean to
    compare) and NOT CHECKED when the run cannot judge it (too few loads long enough); neither
    is a failure."""

    text: str
    passed: bool
    evidence: str
    status: str = ""

    @property
    def verdict(self) -> str:
        return self.status or (PASS if self.passed else FAIL)


Judge = Callable[[Sequence[Point]], list[Claim]]


@dataclass
class Outcome:
    """A reproduction's figures, claims and notes. ``rows`` are the result data its claims read
    (one :class:`Point` per policy and x, analytic values included) and ``judge`` recomputes the
    claims from rows: the claims audit (:mod:`schedlab.reproduce.audit`) re-evaluates them on
    mutated copies without rerunning anything."""

    figures: list[Path]
    claims: list[Claim]
    notes: list[str] = field(default_factory=list)
    rows: list[Point] = field(default_factory=list)
    judge: Judge | None = None

    @property
    def passed(self) -> bool:
        return all(c.verdict != FAIL for c in self.claims)


def judged(figures: list[Path], rows: list[Point], judge: Judge, notes: list[str]) -> Outcome:
    """The outcome whose claims are ``judge(rows)`` (auditable)."""
    return Outcome(figures, judge(rows), notes, rows, judge)


@dataclass
class Context:
    """What a reproduction gets: scale, output directory, and a cached parallel runner.
    ``scale`` is AUTHORS for a reproduction's :class:`AuthorsScale` (never with ``quick``)."""

    quick: bool
    out: Path
    workers: int | None = None
    cluster: str | None = None
    progress: Progress | None = None
    scale: str = ""
    extra: tuple[str, ...] = ()  # plugin policies, run beside the built-in ones where they fit
    added: dict[str, tuple[str, ...]] = field(default_factory=dict)  # family -> extra run there

    def extra_policies(self, family: str) -> tuple[str, ...]:
        """The extra policies that run in ``family`` (a policy sweep of that family adds them as
        series; recorded for the outcome's note)."""
        mine = tuple(p for p in self.extra if family in get_policy(p).families)
        self.added[family] = mine
        return mine

    @property
    def store(self) -> ResultStore:
        return ResultStore(self.out)

    def run(
        self, specs: list[SimulationSpec], replications: int = 1, experiment: str = ""
    ) -> list[list[dict[str, Any]]]:
        """Records of each spec's replications; runs already in ``out`` are not rerun."""
        return run_specs(
            specs,
            self.store,
            replications=replications,
            workers=self.workers,
            cluster=self.cluster,
            progress=self.progress,
            experiment=experiment,
        )


@dataclass(frozen=True)
class AuthorsScale:
    """A run at the authors' own run lengths (``schedlab reproduce NAME --scale authors``):
    ``text`` says what it runs; ``plan(ctx)`` the lines printed before anything runs (arrivals
    per point, core-hours, expected wall time for ``ctx.workers``)."""

    text: str
    plan: Callable[[Context], list[str]]


@dataclass(frozen=True)
class Reproduction:
    name: str  # e.g. "grosof2023-fig2"
    paper: str  # author-year key of schedlab.papers.PAPERS, e.g. "grosof2023"
    figure: str  # e.g. "Fig. 2"
    title: str
    run: Callable[[Context], Outcome]
    scale: str = ""  # what paper scale and --quick mean for this entry
    data: tuple[str, ...] = ()  # files it reads from the data folder (schedlab.datasets)
    authors: AuthorsScale | None = None  # a longer scale than the paper's, when it has one


QUICK = "quick variant"


def run_reproduction(entry: Reproduction, ctx: Context) -> Outcome:
    """``entry.run(ctx)``; with ``ctx.quick`` every figure it saves says "quick variant" in its
    title (:func:`schedlab.report.figures.variant_titles`); with extra policies, a note says
    where they were added (:func:`extra_note`)."""
    with variant_titles(QUICK if ctx.quick else ""):
        outcome = entry.run(ctx)
    if ctx.extra:
        outcome.notes.append(extra_note(ctx))
    return outcome


def extra_note(ctx: Context) -> str:
    """Which extra policies the reproduction ran, in which family's sweeps, and which it could
    not run (their families, against the families of its sweeps)."""
    added = list(dict.fromkeys(p for ps in ctx.added.values() for p in ps))
    left = [p for p in ctx.extra if p not in added]
    parts = []
    if added:
        families = ", ".join(f for f, ps in ctx.added.items() if ps)
        names = ", ".join(label(p) for p in added)
        parts.append(f"--plugin: {names} added as extra series to the {families} policy sweeps")
    if left:
        sweeps = ", ".join(ctx.added) or "none that takes extra policies"
        names = ", ".join(f"{p} ({'/'.join(get_policy(p).families)})" for p in left)
        parts.append(
            f"--plugin: not applicable here: {names}; this reproduction's policy sweeps: {sweeps}"
        )
    return "; ".join(parts) + " (the claims judge the built-in policies only)"


def label(policy: str) -> str:
    """A policy's name in a reproduction's figures, tables and claims: its registered label
    (the paper's name for it where that differs from its title; ``About.label``), marked
    "(plugin)" for a plugin file's policy."""
    from schedlab.plugins import plugin_policies

    return get_policy(policy).about.label + (" (plugin)" if policy in plugin_policies() else "")


_REGISTRY: dict[str, Reproduction] = {}
_LOADED = False


def register(reproduction: Reproduction) -> Reproduction:
    if reproduction.paper not in PAPERS:
        raise ValueError(
            f"reproduction {reproduction.name!r}: unknown paper {reproduction.paper!r}"
        )
    if reproduction.name in _REGISTRY:
        raise ValueError(f"reproduction {reproduction.name!r} registered twice")
    _REGISTRY[reproduction.name] = reproduction
    return reproduction


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    import schedlab.reproduce as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "registry":
            importlib.import_module(f"schedlab.reproduce.{info.name}")
    _LOADED = True


def all_reproductions() -> list[Reproduction]:
    _load()
    return sorted(_REGISTRY.values(), key=lambda r: r.name)


def get_reproduction(name: str) -> Reproduction:
    _load()
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise SchedlabError(
        f"unknown reproduction '{name}'{did_you_mean(name, _REGISTRY)}; "
        "`schedlab reproduce --list` shows them"
    )
