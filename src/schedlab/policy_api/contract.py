"""The policy contract: what a policy declares, and the state it gets.

A policy imports all of this from :mod:`schedlab.policy_api`, never from here. A policy module
declares four things and registers them (docs/writing-policies.md walks through one short real
policy, :mod:`schedlab.policies.packing.fifo_ff`):

* **its settings**, a :class:`PolicyConfig` (pydantic, validated at the spec boundary: a bad value
  is a one-line ``SpecError`` naming ``policy.<field>``);
* **its state**, a :class:`PolicyState`: named fields, each a :class:`StateField` with a dtype and
  a size. Arrays sized ``"jobs"`` hold one entry per engine job slot; the engine enlarges them
  (keeping their contents) when it enlarges its slots, through :meth:`PolicyState.grow`. Scalar
  fields (``size=None``) carry the compiled configuration (``ps.blocking``, ``ps.beta_bar``) and
  mutable counters. There are no positional tuples and no float-coded flags: every value has a
  name and its own type;
* **an init function** ``init(st, context, config) -> handle`` (``context``: the
  :class:`~schedlab.policy_api.context.PolicyContext` of the run) that allocates the state with
  :meth:`PolicyState.allocate`, usually ``STATE.allocate(engine_sizes(st), {"blocking": ...})``;
* **a compiled runner** ``run(st, ps, max_events)`` calling
  :func:`schedlab.engine.loop.run_engine` with the policy's ``decide(st, ps)``;

and registers a :class:`Policy` with :func:`register`: its name and family, and four parts:
:class:`About` (title, the paper by its author-year key, :mod:`schedlab.papers`, and the section
that defines the policy), :class:`Kernels` (the four things above), :class:`Traits` (what a
cluster must allow to run it) and :class:`Hooks` (what it asks of the pipeline).

How the state reaches compiled code. A policy state is a field table like the engine's
(:mod:`schedlab.engine.fields`); its handle is a Numba ``StructRef`` (passed by reference: one
pointer per call, see docs/decisions/0001-engine-architecture.md) whose constructor and one field
getter per field (``grow`` reads the fields, enlarges the "jobs" arrays with NumPy and constructs
a new struct) are generated as source and cached on disk (:mod:`schedlab.engine.generated`,
docs/decisions/0002-policy-contract.md). With ``SCHEDLAB_JIT=0`` no code is generated: the
handle is a plain Python object with the same attribute names, so the same policy source runs as
Python.

From Python, a JIT handle's fields are readable by name (``ps.key``; arrays are shared, not
copied); writing a field from Python is not supported: give initial values to ``allocate``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from numba.core import types
from numba.experimental import structref
from pydantic import BaseModel, ConfigDict

from schedlab._jit import jit_disabled, kernel
from schedlab.engine import generated
from schedlab.engine.borrowed_structs import register_array_struct
from schedlab.engine.fields import Field, allocate, struct_fields
from schedlab.engine.generated import ArrayStructType
from schedlab.policy_api.compat import parts_from_keywords

# --------------------------------------------------------------------------------------------
# settings


class PolicyConfig(BaseModel):
    """Base of every policy's settings: unknown keys are refused, values are immutable.

    Subclass it, one field per setting, and cite the paper's section in the docstring; a setting
    the paper does not fix is a field with the inferred default, said so in its description."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoConfig(PolicyConfig):
    """A policy without settings."""


# --------------------------------------------------------------------------------------------
# state

ENGINE_SIZES = ("jobs", "classes", "servers", "resources")


@dataclass(frozen=True)
class StateField(Field):
    """One named field of a policy state (an engine :class:`~schedlab.engine.fields.Field`).

    ``dtype``: "f8", "i8", "i4", "i1" or "b1" (float64, int64, int32, int8, bool).
    ``size``: None for a scalar; otherwise the length of a 1-D array, or a tuple of lengths for a
    2-D array. A length is an int or a name: "jobs" (one entry per engine job slot; grown with the
    slots), "classes", "servers", "resources" (from the engine state, see :func:`engine_sizes`),
    or any other name the policy passes to :meth:`PolicyState.allocate`.
    ``fill``: the initial value of every entry (and of new entries when "jobs" arrays grow).
    Only the first dimension of a 2-D array may be "jobs".

    ``dtype`` may also be another :class:`PolicyState`: a nested struct (e.g. a search index
    used twice), whose handle is given to ``allocate`` among the values. With ``size="jobs"``
    growing the outer state grows the nested one too; otherwise ``size`` must be None.
    """

    dtype: str | PolicyState  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if not self.nested:
            super().__post_init__()
            return
        if self.size not in (None, "jobs"):
            raise ValueError(f"nested field {self.name!r}: size must be None or 'jobs'")
        self._check_name_and_size()

    @property
    def nested(self) -> bool:
        return isinstance(self.dtype, PolicyState)

    @property
    def dims(self) -> tuple[int | str, ...]:
        """The lengths of the array's dimensions; () for a scalar or nested state."""
        return () if self.nested else super().dims

    @property
    def per_job(self) -> bool:
        return self.size == "jobs" or super().per_job

    def numba_type(self) -> types.Type:
        if isinstance(self.dtype, PolicyState):
            return self.dtype.numba_type
        return super().numba_type()

    def initial(self, sizes: Mapping[str, int], value: Any, owner: str, copy: bool = True) -> Any:
        if not self.nested:
            return super().initial(sizes, value, owner, copy)
        if value is None:
            raise ValueError(f"state {owner!r}: give a handle for nested field {self.name!r}")
        return value


def engine_sizes(st: Any, **more: int) -> dict[str, int]:
    """The standard sizes of an engine state ``st`` (job slots, classes, servers, resources),
    plus the policy's own named sizes ``more``."""
    return {
        "jobs": int(st.status.shape[0]),
        "classes": int(st.class_elastic.shape[0]),
        "servers": int(st.capacity.shape[0]),
        "resources": int(st.capacity.shape[1]),
        **more,
    }


@register_array_struct
class PolicyStructType(ArrayStructType):
    """Numba type of a policy state: a struct of named arrays and scalars passed by reference."""


class PolicyStruct(structref.StructRefProxy):
    """A policy state handle from Python: fields are readable by name (arrays are shared)."""

    def __getattr__(self, name: str) -> Any:
        getters = _GETTERS.get(self._type)
        if getters is None or name not in getters:
            raise AttributeError(name)
        return _getter(getters[name])(self)

    def __dir__(self) -> list[str]:
        return sorted(_GETTERS.get(self._type, {}))


structref.define_boxing(PolicyStructType, PolicyStruct)

_GETTERS: dict[types.Type, dict[str, Callable[[Any], Any]]] = {}


@functools.cache
def _getter(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A generated field getter, compiled (or loaded from the cache) when first used: a state of
    many fields is read from Python a few fields at a time, if at all (issue 33 item 1)."""
    return kernel(read)


class PlainState:
    """The handle when the JIT is disabled (``SCHEDLAB_JIT=0``): a plain mutable object."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"PlainState({', '.join(self.__dict__)})"


class PolicyState:
    """The layout of a policy's state: a name and its :class:`StateField` s.

    ``allocate(sizes, values)`` returns a new handle: every field filled with its ``fill``, then
    the given ``values`` (by field name) copied in; ``grow(handle, n_slots)`` returns a handle
    whose "jobs" arrays have ``n_slots`` entries (existing ones kept, new ones = fill; the other
    fields are shared with the old handle, scalars copied). Both work the same with and without
    the JIT."""

    def __init__(self, name: str, fields: list[StateField] | tuple[StateField, ...]) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"state {name!r}: duplicate field names")
        self.name = name
        self.fields = tuple(fields)
        self._compiled: Any = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PolicyState) and (self.name, self.fields) == (
            other.name,
            other.fields,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.fields))

    def __reduce__(self) -> tuple:
        return (PolicyState, (self.name, self.fields))

    def __repr__(self) -> str:
        return f"PolicyState({self.name!r}, {len(self.fields)} fields)"

    @property
    def numba_type(self) -> PolicyStructType:
        return PolicyStructType(struct_fields(self.fields))

    # ----------------------------------------------------------------------------- allocate

    def allocate(self, sizes: Mapping[str, int], values: Mapping[str, Any] | None = None) -> Any:
        """A new state handle. ``sizes`` maps every size name used by a field to its length (see
        :func:`engine_sizes`); ``values`` gives initial contents by field name (arrays must have
        the field's shape; scalars are converted to the field's dtype)."""
        contents = allocate(self.fields, sizes, values or {}, self.name)
        if jit_disabled():
            return PlainState(**{f.name: v for f, v in zip(self.fields, contents, strict=True)})
        return self._module().new(*contents)

    # ---------------------------------------------------------------------------------- grow

    def grow(self, handle: Any, n_slots: int) -> Any:
        """The handle with every "jobs" array enlarged to ``n_slots`` entries (a no-op when it
        already has that many or more)."""
        if not any(f.per_job for f in self.fields):
            return handle
        if jit_disabled():
            for f in self.fields:
                if f.per_job:
                    setattr(handle, f.name, self._grown_field(f, getattr(handle, f.name), n_slots))
            return handle
        module = self._module()
        current = [getattr(handle, f.name) for f in self.fields]
        grown = [
            self._grown_field(f, v, n_slots) if f.per_job else v
            for f, v in zip(self.fields, current, strict=True)
        ]
        return module.new(*grown)

    def copy(self, handle: Any) -> Any:
        """A new handle holding a copy of every field of ``handle`` (nested states copied too):
        a snapshot the caller may restore by using it instead (schedlab.online)."""
        contents = [
            f.dtype.copy(v) if isinstance(f.dtype, PolicyState) else np.copy(v) if f.dims else v
            for f, v in ((f, getattr(handle, f.name)) for f in self.fields)
        ]
        if jit_disabled():
            return PlainState(**{f.name: v for f, v in zip(self.fields, contents, strict=True)})
        return self._module().new(*contents)

    @staticmethod
    def _grown_field(f: StateField, value: Any, n_slots: int) -> Any:
        if isinstance(f.dtype, PolicyState):
            return f.dtype.grow(value, n_slots)
        return f.grown(value, n_slots)

    # ------------------------------------------------------------------- generated constructor

    def source(self) -> str:
        """The Python source of the cached constructor and field getters."""
        return generated.source(self.name, self.fields)

    def _module(self) -> Any:
        if self._compiled is None:
            self._compiled = generated.load(self.name, self.fields, self.numba_type)
            _GETTERS[self.numba_type] = {
                f.name: getattr(self._compiled, f"get_{f.name}") for f in self.fields
            }
        return self._compiled


# --------------------------------------------------------------------------------------------
# registration


SizeKnowledge = Literal["none", "estimate", "exact"]
SIZE_KNOWLEDGE: tuple[str, ...] = get_args(SizeKnowledge)


@dataclass(frozen=True)
class PolicyTraits:
    """What a batch cluster would need to run a policy with given settings (``None``: the policy
    does not say, e.g. a plugin written before the traits existed).

    ``preemptive``: it stops running jobs (to resume or lose them); ``size_knowledge``: what it
    knows of a job's size (duration) before the job ends: "none", "estimate" (the job's
    requested time, the user's estimate; a job without one is counted by the policy) or
    "exact"; ``migrates``: it moves running jobs between servers (packing and loss families; the
    pooled family has one pool of k servers, where nothing migrates)."""

    preemptive: bool | None
    size_knowledge: SizeKnowledge | None
    migrates: bool | None

    @property
    def batch_runnable(self) -> bool:
        """A batch cluster can run it: declared non-preemptive and without exact sizes."""
        return self.preemptive is False and self.size_knowledge in ("none", "estimate")


@dataclass(frozen=True)
class About:
    """What a policy is, for people. ``title``: its display name (tables, reports, ``schedlab
    policies``); ``paper``: author-year key of :data:`schedlab.papers.PAPERS` (e.g.
    "grosof2023"; every built-in policy uses one, tests/policies/test_policy_contract.py checks
    it), or for a user's plugin policy any citation text (shown as it is); ``section``: where
    that paper defines (or, for a baseline, uses) the policy ("§3.2", "App. C.1"); ``summary``:
    one line; ``paper_label``: the name the paper's figures give it where that differs from the
    title ("Algorithm 1" for ``vm-stalling`` in psychas2018; :attr:`label` is the one
    reproductions use)."""

    title: str
    paper: str
    section: str
    summary: str
    paper_label: str | None = None

    def __post_init__(self) -> None:
        if not self.paper.strip():
            raise ValueError(f"policy {self.title!r}: give the paper (key or citation)")

    @property
    def label(self) -> str:
        """The name in a reproduction's figures and tables: the paper's label, else the title."""
        return self.paper_label or self.title

    @property
    def reference(self) -> str:
        """E.g. "Grosof et al. 2023 (grosof2023), §3.2" (a plugin's own citation as given)."""
        from schedlab.papers import PAPERS

        if self.paper not in PAPERS:
            return f"{self.paper}, {self.section}" if self.section else self.paper
        return f"{PAPERS[self.paper].cite} ({self.paper}), {self.section}"


@dataclass(frozen=True)
class Kernels:
    """How a policy runs. ``config``: its settings (:class:`PolicyConfig`); ``state``: the
    layout of its state; ``init(st, context, config, **tables) -> handle`` (``context``:
    :class:`~schedlab.policy_api.context.PolicyContext`) allocates it; ``runner``: the cached
    compiled ``run(st, ps, max_events)``."""

    state: PolicyState
    init: Callable[..., Any]
    runner: Any
    config: type[PolicyConfig] = NoConfig


Trait = Any  # a value, or a function of the settings giving it


@dataclass(frozen=True)
class Traits:
    """The traits a policy declares (:class:`PolicyTraits`; every built-in policy declares all
    three, tests/policies/test_policy_traits.py checks it): ``preemptive``, ``size_knowledge``,
    ``migrates``, each a value or a function of the settings (e.g. EASY backfilling knows sizes
    exactly with ``durations = "actual"``). Undeclared (None, a plugin's default) is shown as
    unknown and never counted as runnable by a batch cluster."""

    preemptive: bool | Callable[[Any], bool] | None = None
    size_knowledge: SizeKnowledge | Callable[[Any], SizeKnowledge] | None = None
    migrates: bool | Callable[[Any], bool] | None = None

    def __post_init__(self) -> None:
        _check_knowledge(self.size_knowledge)

    def at(self, config: PolicyConfig | None) -> PolicyTraits:
        """The traits with these settings (None: settings not known, a trait that depends on
        them is unknown)."""

        def resolve(trait: Trait) -> Any:
            if callable(trait):
                return None if config is None else trait(config)
            return trait

        knowledge = resolve(self.size_knowledge)
        _check_knowledge(knowledge)
        return PolicyTraits(resolve(self.preemptive), knowledge, resolve(self.migrates))


def _check_knowledge(knowledge: Any) -> None:
    if not (knowledge is None or callable(knowledge) or knowledge in SIZE_KNOWLEDGE):
        raise ValueError(f"size_knowledge must be one of {SIZE_KNOWLEDGE}, not {knowledge!r}")


def accept_every_model(context: Any, config: PolicyConfig) -> None:
    """The default :attr:`Hooks.check`: every model the family allows."""
    return None


def no_tables(config: PolicyConfig) -> tuple[str, ...]:
    """The default :attr:`Hooks.tables`: no table asked of the pipeline."""
    return ()


def no_known_limits(config: PolicyConfig) -> tuple[str, ...]:
    """The default :attr:`Hooks.known_limits`: no stability limit known for the policy."""
    return ()


@dataclass(frozen=True)
class Hooks:
    """What a policy asks of the pipeline; the pipeline never names a policy.

    ``check(context, config)``: raise SpecError for a model the policy does not support (called
    when the spec is compiled). ``tables(config)``: names of the tables the pipeline must build
    from the model's size laws and pass to ``init`` as keywords (e.g. ``"gittins"``: the Gittins
    rank tables of grosof2023 §5.1, :class:`~schedlab.policies.pooled.gittins_rank.GittinsTables`;
    built by simulation/, since policies/ may not import analysis/). ``known_limits(config)``:
    names of the stability limits known for the policy with these settings, which the pipeline
    computes for the model (``"fcfs-saturated"``: FCFS with head-of-line blocking in the pooled
    family: the saturated-system limit, Baccelli & Foss 1995; simulation/stability_limits.py); a
    run at a load above one is marked unstable. ``report(ps, st) -> dict``: the policy's own
    counters after a run (sums over the run, e.g. configuration changes), added to the result's
    ``counters`` (summed over replications).

    ``resource_pooled``: (pooled family) run every job as elastic with allocation up to k (the
    resource-pooled single server, grosof2023 §3.1). ``whole_run``: the policy's state is built
    from every job of the run at ``init`` and its job ids are arrival numbers (no slot reuse); the
    engine then holds the whole run in memory and refuses, in one line, a run that does not fit
    (docs/decisions/0003-streaming-jobs.md §4). ``waiting_list``: the policy reads the engine's
    arrival-ordered list of waiting jobs (:func:`~schedlab.engine.accessors.first_waiting`,
    ``st.q_next``); a policy that never does sets False, and the engine saves a list update at
    every arrival, start and preemption (the loss family keeps the list: the engine drops the
    unadmitted jobs by walking it). ``event_cost``: its time per event relative to the simplest
    policies (1.0), measured (benchmarks/); sweeps start the costliest runs first.
    ``max_default_k``: a policy whose cost per event grows with k (benchmarks/bench_policy_k.py)
    is left out of ``schedlab compare``'s default set above this k (None: never);
    ``max_default_sizes``: likewise for a cost that grows with a log's distinct job sizes (need,
    duration), on a log with more of them.
    ``replayable``: the same engine and policy states given the same events always take the same
    actions (no random numbers drawn but from the policy state: Numba's global generator, e.g.,
    is outside it); the online scheduler then puts a state back by running the events since a
    copy again (schedlab/online/scheduler.py). None: true for a built-in policy, false for a
    plugin's."""

    check: Callable[[Any, Any], None] = accept_every_model
    tables: Callable[[Any], tuple[str, ...]] = no_tables
    known_limits: Callable[[Any], tuple[str, ...]] = no_known_limits
    report: Callable[[Any, Any], dict[str, float]] | None = None
    resource_pooled: bool = False
    whole_run: bool = False
    waiting_list: bool = True
    event_cost: float = 1.0
    max_default_k: int | None = None
    max_default_sizes: int | None = None
    replayable: bool | None = None


@dataclass(frozen=True, init=False)
class Policy:
    """A registered policy name: ``name`` (the spec's ``policy.name``), ``family`` (the model
    family the name belongs to), ``families`` (every family it may run in; default just
    ``family``), ``about`` (:class:`About`: title, paper, section), ``kernels``
    (:class:`Kernels`: settings, state, init, compiled runner), ``preset`` (settings fixed by
    this name: ``first-fit`` is FIFO-FF with ``{"blocking": False}``), ``traits``
    (:class:`Traits`) and ``hooks`` (:class:`Hooks`: what it asks of the pipeline).

    The flat keywords of policy API v1 and v2 (``title=``, ``state=``, ``check=``,
    ``preemptive=``, ``ranks_by_gittins=``, ...) are still accepted: they are sorted into the
    parts by :func:`schedlab.policy_api.compat.parts_from_keywords` (docs/decisions/0021)."""

    name: str
    family: str
    about: About
    kernels: Kernels
    traits: Traits
    families: tuple[str, ...]
    preset: Mapping[str, Any]
    hooks: Hooks

    def __init__(
        self,
        name: str,
        family: str,
        about: About | None = None,
        kernels: Kernels | None = None,
        traits: Traits | None = None,
        *,
        families: tuple[str, ...] = (),
        preset: Mapping[str, Any] | None = None,
        hooks: Hooks | None = None,
        **flat: Any,
    ) -> None:
        if flat:
            about, kernels, traits, hooks = parts_from_keywords(
                name,
                flat,
                {
                    "about": (About, about),
                    "kernels": (Kernels, kernels),
                    "traits": (Traits, traits),
                    "hooks": (Hooks, hooks),
                },
            )
        if about is None or kernels is None:
            raise TypeError(f"policy {name!r}: give about=About(...) and kernels=Kernels(...)")
        for key, value in {
            "name": name,
            "family": family,
            "about": about,
            "kernels": kernels,
            "traits": traits or Traits(),
            "families": tuple(families) or (family,),
            "preset": dict(preset or {}),
            "hooks": hooks or Hooks(),
        }.items():
            object.__setattr__(self, key, value)

    def default_config(self) -> PolicyConfig | None:
        """The name's own settings (its preset applied; None when a setting has no default)."""
        try:
            return self.kernels.config(**self.preset)
        except ValueError:  # pydantic's ValidationError: a setting has no default
            return None

    def traits_at(self, config: PolicyConfig | None = None) -> PolicyTraits:
        """The traits with these settings (default: the name's own, :meth:`default_config`; a
        trait that depends on settings without a default is unknown then)."""
        try:
            return self.traits.at(config if config is not None else self.default_config())
        except ValueError as exc:
            raise ValueError(f"policy {self.name!r}: {exc}") from None


_REGISTRY: dict[str, Policy] = {}


def register(policy: Policy) -> Policy:
    """Add a policy to the registry (policy modules call it at import)."""
    if policy.name in _REGISTRY:
        raise ValueError(f"policy {policy.name!r} registered twice")
    _REGISTRY[policy.name] = policy
    return policy
