"""The simulation spec: cluster, workload, model, policy and run, validated by pydantic.

A spec is plain TOML (see docs/guide.md and examples/) or the same structure built in Python.
Field-level checks live on the models; checks across sections (resource names, demands that fit
no server, load >= 1) live in :func:`schedlab.model.compile.compile_model`, which turns a spec
into the arrays the engine runs on.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from schedlab.errors import SpecError, did_you_mean
from schedlab.model.distributions import DIST_NAMES, Distribution, as_distribution
from schedlab.workloads.batch_vectors import BatchVector, vector_table

Dist = Annotated[Distribution, BeforeValidator(as_distribution)]
Family = Literal["pooled", "packing", "loss"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ServerPool(_Spec):
    """``count`` identical servers with a capacity (a number for one resource, or a table)."""

    count: Annotated[int, Field(ge=1)]
    capacity: Annotated[float, Field(gt=0)] | dict[str, Annotated[float, Field(gt=0)]] = 1.0
    name: str | None = None


class ClusterSpec(_Spec):
    """Servers and their capacities.

    * ``servers = k`` with the pooled family: k unit servers pooled into one server of capacity k
      (grosof2023 §3.1, berg2020 §2);
    * ``servers = L`` (+ optional ``capacity``), packing or loss family: L identical servers;
    * ``pools = [{count, capacity, name}, ...]``: groups of identical servers (heterogeneous
      clusters, psychas2019 §VIII and psychas2018).
    """

    servers: Annotated[int, Field(ge=1)] | None = None
    capacity: Annotated[float, Field(gt=0)] | dict[str, Annotated[float, Field(gt=0)]] | None = None
    pools: list[ServerPool] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ClusterSpec:
        if (self.servers is None) == (self.pools is None):
            raise ValueError("give either servers (with optional capacity) or pools")
        if self.pools is not None and self.capacity is not None:
            raise ValueError("capacity belongs inside each pool when pools are given")
        if self.pools is not None and not self.pools:
            raise ValueError("pools must not be empty")
        return self


class ArrivalSpec(_Spec):
    """How jobs arrive.

    * ``poisson`` (default): exponential inter-arrivals; in slotted time, Poisson counts per slot;
    * ``renewal``: i.i.d. inter-arrivals from ``interarrival`` (its mean is set from the load/rate);
    * ``batch``: batches arrive as a Poisson or renewal process (``interarrival``), each bringing
      ``batch_size`` jobs; in slotted time ``batch_size`` is the count per slot (may be 0); or,
      with ``vectors`` instead of ``batch_size``, each request brings a vector of jobs per class
      (psychas2018 Corollary 5.3; :mod:`schedlab.workloads.batch_vectors`);
    * ``trace``: arrival times, durations and demands from a canonical job table (``path``).
    """

    process: Literal["poisson", "renewal", "batch", "trace"] = "poisson"
    interarrival: Dist | None = None
    batch_size: Dist | None = None
    vectors: list[BatchVector] | None = None
    path: Path | None = None
    time_scale: Annotated[float, Field(gt=0)] = 1.0

    @model_validator(mode="after")
    def _fields_for_process(self) -> ArrivalSpec:
        p = self.process
        if p == "renewal" and self.interarrival is None:
            raise ValueError("renewal arrivals need an interarrival distribution")
        if p == "batch" and (self.batch_size is None) == (self.vectors is None):
            raise ValueError("batch arrivals need a batch_size distribution or vectors (not both)")
        if p != "batch" and self.vectors is not None:
            raise ValueError("vectors are only used with process = 'batch'")
        if p == "trace" and self.path is None:
            raise ValueError("trace arrivals need a path to a job table")
        if p != "trace" and self.path is not None:
            raise ValueError("path is only used with process = 'trace'")
        if p == "poisson" and self.interarrival is not None:
            raise ValueError("poisson arrivals take no interarrival (use process = 'renewal')")
        if p not in ("batch",) and self.batch_size is not None:
            raise ValueError("batch_size is only used with process = 'batch'")
        if p != "trace" and self.time_scale != 1.0:
            raise ValueError("time_scale is only used with process = 'trace'")
        return self


class JobClassSpec(_Spec):
    """One job class: its share of arrivals, its demand, its duration and its speedup rule.

    ``need`` is a server need (pooled family: number of unit servers, grosof2023 §3.1);
    ``demand`` is a resource requirement: a number (one resource, psychas2019's job size R in (0,1])
    or a table of named resources (psychas2018/psychas2022); each entry may be a distribution.
    ``duration`` is the service time at full allocation; for elastic jobs it is the work on one
    server (berg2020 §2: a job of size x on n servers finishes in x/n).
    """

    name: str | None = None
    probability: Annotated[float, Field(gt=0, le=1)] = 1.0
    need: Dist | None = None
    demand: Dist | dict[str, Dist] | None = None
    duration: Dist
    speedup: Literal["rigid", "elastic", "inelastic"] = "rigid"
    max_alloc: Annotated[float, Field(gt=0)] | None = None
    reward: Annotated[float, Field(ge=0)] = 1.0

    @field_validator("demand", mode="before")
    @classmethod
    def _demand_numbers(cls, value: Any) -> Any:
        if isinstance(value, dict) and "dist" not in value:
            return {k: as_distribution(v) for k, v in value.items()}
        return as_distribution(value)

    @model_validator(mode="after")
    def _demand_form(self) -> JobClassSpec:
        if self.need is not None and self.demand is not None:
            raise ValueError("give either need (pooled) or demand, not both")
        if self.speedup != "rigid" and self.need is not None:
            raise ValueError(
                "elastic/inelastic jobs have no fixed server need; use max_alloc to cap them"
            )
        if self.speedup == "rigid" and self.max_alloc is not None:
            raise ValueError("max_alloc applies to elastic/inelastic jobs only")
        if self.speedup == "inelastic" and self.max_alloc not in (None, 1.0):
            raise ValueError(
                "inelastic jobs run on at most one server; use 'elastic' with max_alloc"
            )
        return self


class WorkloadSpec(_Spec):
    """Arrivals and job classes; the arrival rate comes from ``load`` or ``rate`` (exactly one,
    except for traces, which carry their own timing)."""

    load: Annotated[float, Field(gt=0)] | None = None
    rate: Annotated[float, Field(gt=0)] | None = None
    arrivals: ArrivalSpec = ArrivalSpec()
    classes: list[JobClassSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rate_and_classes(self) -> WorkloadSpec:
        trace = self.arrivals.process == "trace"
        if self.load is not None and self.rate is not None:
            raise ValueError("give either load or rate, not both")
        if not trace:
            if self.load is None and self.rate is None:
                raise ValueError("give load (target rho) or rate (arrivals per time unit)")
            if not self.classes:
                raise ValueError("at least one [[workload.classes]] entry is needed")
            if self.arrivals.vectors is not None:
                self._check_vectors()
            else:
                total = sum(c.probability for c in self.classes)
                if abs(total - 1.0) > 1e-9:
                    raise ValueError(f"class probabilities sum to {total:g}, not 1")
        elif self.rate is not None:
            raise ValueError("a trace sets its own rate; use load to rescale it")
        return self

    def _check_vectors(self) -> None:
        """Batch vectors name declared classes, whose shares they set (Corollary 5.3)."""
        given = [i for i, c in enumerate(self.classes) if "probability" in c.model_fields_set]
        if given:
            raise ValueError(
                f"classes[{given[0]}].probability: with batch vectors the classes' shares come "
                "from the vectors; remove it"
            )
        names = [c.name or f"class{i}" for i, c in enumerate(self.classes)]
        try:
            vector_table(self.arrivals.vectors or [], names)
        except ValueError as exc:
            raise ValueError(f"arrivals.{exc}") from None


class ModelSpec(_Spec):
    """Model family and time.

    ``family`` defaults to the policy's family. ``time = "slotted"`` is psychas2019's slotted time
    (arrivals at slot starts, integer durations, one decision per slot). ``decision_interval``
    (continuous time) makes decisions only on a grid of that spacing (psychas2019 §VII-B: 100 ms);
    0 decides after every event.
    """

    family: Family | None = None
    time: Literal["continuous", "slotted"] = "continuous"
    decision_interval: Annotated[float, Field(ge=0)] = 0.0

    @model_validator(mode="after")
    def _slotted(self) -> ModelSpec:
        if self.time == "slotted" and self.decision_interval not in (0.0, 1.0):
            raise ValueError("slotted time decides once per slot; leave decision_interval unset")
        return self


class PolicySpec(BaseModel):
    """The policy by registry name plus its parameters (checked by the policy's own model)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class RunSpec(_Spec):
    """Length, warm-up, seed and outputs of a run."""

    arrivals: Annotated[int, Field(ge=1)] | None = None
    horizon: Annotated[float, Field(gt=0)] | None = None
    warmup: Annotated[float, Field(ge=0, lt=1)] = 0.1
    seed: Annotated[int, Field(ge=0)] = 0
    replications: Annotated[int, Field(ge=1)] = 1
    batches: Annotated[int, Field(ge=4, le=1000)] = 20
    check: bool = True
    drain: bool = True
    timeseries: Annotated[int, Field(ge=0)] = 500
    # the quantile metrics (p50_/p90_/p95_/p99_ response and waiting times, bounded slowdown):
    # false skips their sketches, three logarithms per job (12% of ServerFilling's time per event)
    quantiles: bool = True
    # per-job table: false, true (a temporary Parquet file) or the path of the Parquet file
    jobs: bool | str = False
    # bounded slowdown max(response / max(work, tau), 1): the threshold tau in time units
    slowdown_threshold: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 10.0
    allow_unstable: bool = False
    max_hours: Annotated[float, Field(gt=0, allow_inf_nan=True)] = (
        24.0  # refuse longer estimated runs (model/budget.py)
    )

    @model_validator(mode="after")
    def _length(self) -> RunSpec:
        if self.arrivals is not None and self.horizon is not None:
            raise ValueError("give either arrivals or horizon, not both")
        return self


class SimulationSpec(_Spec):
    """A whole simulation: ``[cluster]``, ``[workload]``, ``[model]``, ``[policy]``, ``[run]``."""

    cluster: ClusterSpec
    workload: WorkloadSpec
    model: ModelSpec = ModelSpec()
    policy: PolicySpec
    run: RunSpec = RunSpec()

    @model_validator(mode="before")
    @classmethod
    def _trace_warmup(cls, data: Any) -> Any:
        """A trace replay measures the whole log: its warm-up is 0 unless ``run.warmup`` is set
        (a log has no start-up transient to discard; stated in the result when set)."""
        if not isinstance(data, dict):
            return data
        workload, run = data.get("workload"), data.get("run", {})
        arrivals = workload.get("arrivals") if isinstance(workload, dict) else None
        if (
            isinstance(arrivals, dict)
            and arrivals.get("process") == "trace"
            and isinstance(run, dict)
            and "warmup" not in run
        ):
            data = {**data, "run": {**run, "warmup": 0.0}}
        return data

    @model_validator(mode="after")
    def _run_length(self) -> SimulationSpec:
        if (
            self.run.arrivals is None
            and self.run.horizon is None
            and self.workload.arrivals.process != "trace"
        ):
            raise ValueError("[run] needs arrivals (number of jobs) or horizon (time)")
        if self.workload.arrivals.process == "trace" and self.run.replications > 1:
            raise ValueError(
                "run.replications: a trace replay is the same at every replication (the log "
                "fixes every job); its intervals come from batch means within the one replay"
            )
        return self


def _format_loc(loc: tuple[Any, ...]) -> str:
    """A pydantic location as a dotted field path, without union tags and validator names."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part) in DIST_NAMES or str(part).startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def _known_fields(model: type[BaseModel], path: list[str]) -> list[str]:
    """Field names allowed at a dotted path of the spec (for 'did you mean')."""
    current: Any = model
    for part in path:
        if part.startswith("[") or part in DIST_NAMES:
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in _aliases(current):
            return []
        annotation = fields[_aliases(current)[part]].annotation
        current = _first_model(annotation)
        if current is None:
            return []
    return list(_aliases(current)) if hasattr(current, "model_fields") else []


def _aliases(model: type[BaseModel]) -> dict[str, str]:
    return {(f.alias or name): name for name, f in model.model_fields.items()}


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


def spec_error_from_validation(exc: ValidationError, model: type[BaseModel]) -> SpecError:
    """The first pydantic error as one readable SpecError naming the field."""
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"])
    field = _format_loc(loc)
    kind = err["type"]
    message = err["msg"].removeprefix("Value error, ")
    if kind == "extra_forbidden":
        parts = [str(p) for p in loc if not isinstance(p, int)]
        known = _known_fields(model, parts[:-1])
        hint = did_you_mean(parts[-1], known)
        message = "unknown field" + hint
        if known and not hint:
            message += f"; allowed: {', '.join(sorted(known))}"
    elif kind == "missing":
        message = "missing required field"
    elif kind == "union_tag_invalid":
        tag = err.get("ctx", {}).get("tag")
        message = f"unknown distribution '{tag}'; choose one of {', '.join(DIST_NAMES)}"
    elif kind == "union_tag_not_found":
        message = "a distribution needs dist = '<name>' (or give a plain number)"
    return SpecError(message, field=field or None)


def locate_field(source: str, field: str | None) -> int | None:
    """Best-effort line number of a dotted field in TOML source (None when not found)."""
    if not field:
        return None
    names = [p for p in re.split(r"[.\[\]]", field) if p and not p.isdigit()]
    if not names:
        return None
    index_of = [int(x) for x in re.findall(r"\[(\d+)\]", field)]
    lines = source.splitlines()
    # Find the innermost table header that matches a prefix of the path, then the key below it.
    best: int | None = None
    for depth in range(len(names), 0, -1):
        header = ".".join(names[:depth])
        pattern = re.compile(r"^\s*\[\[?\s*" + re.escape(header) + r"\s*\]\]?\s*(#.*)?$")
        hits = [i for i, line in enumerate(lines) if pattern.match(line)]
        if not hits:
            continue
        pick = hits[index_of[0]] if index_of and len(hits) > index_of[0] else hits[0]
        best = pick
        rest = names[depth:]
        if not rest:
            return pick + 1
        key = re.compile(
            r"^\s*" + re.escape(rest[0]) + r"\s*=|[{,]\s*" + re.escape(rest[-1]) + r"\s*="
        )
        for i in range(pick + 1, len(lines)):
            if re.match(r"^\s*\[", lines[i]):
                break
            if key.search(lines[i]):
                return i + 1
        return pick + 1
    # No header: a top-level dotted key or an inline table.
    key = re.compile(r"^\s*" + re.escape(names[-1]) + r"\s*=")
    for i, line in enumerate(lines):
        if key.match(line):
            return i + 1
    return best


def parse_spec(
    data: dict[str, Any], *, source: str | None = None, file: str | None = None
) -> SimulationSpec:
    """Validate a spec dict; errors name the field (and the file line when source is given)."""
    try:
        return SimulationSpec.model_validate(data)
    except ValidationError as exc:
        err = spec_error_from_validation(exc, SimulationSpec)
        line = locate_field(source, err.field) if source else None
        raise err.located(file, line) from None


def read_toml(path: str | Path) -> tuple[dict[str, Any], str]:
    """Read a TOML file; syntax errors become a SpecError with the file and line."""
    p = Path(path)
    try:
        source = p.read_text(encoding="utf-8-sig")  # a byte-order mark is not TOML's business
    except FileNotFoundError:
        raise SpecError("no such file", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read: {exc}", file=str(p)) from None
    try:
        return tomllib.loads(source), source
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(match.group(1)) if match else None
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise SpecError(f"malformed TOML: {message}", file=str(p), line=line) from None


def resolve_paths(data: Any, directory: Path) -> Any:
    """A copy of a spec dict with relative data-file paths (a trace's ``path``, an empirical
    distribution's ``file``) made absolute against ``directory``, the spec file's folder (as a
    sweep's ``base``): a spec means the same wherever it is run from."""
    if isinstance(data, list):
        return [resolve_paths(v, directory) for v in data]
    if not isinstance(data, dict):
        return data
    out = {k: resolve_paths(v, directory) for k, v in data.items()}
    key = "file" if out.get("dist") == "empirical" else "path" if "process" in out else None
    if key is not None and isinstance(out.get(key), str) and not Path(out[key]).is_absolute():
        out[key] = str((directory / out[key]).resolve())
    return out


def load_spec(path: str | Path) -> SimulationSpec:
    """Load and validate a simulation spec from a TOML file (relative data files resolve
    against the file's directory)."""
    from schedlab.spec_kind import expect_kind

    data, source = read_toml(path)
    expect_kind(data, "simulation", str(path))
    return parse_spec(resolve_paths(data, Path(path).parent), source=source, file=str(path))


@contextmanager
def errors_located_in(path: str | Path | None) -> Iterator[None]:
    """Attach the spec file (and the line of the field, when found) to SpecErrors raised inside."""
    try:
        yield
    except SpecError as err:
        if path is None or err.file is not None:
            raise
        try:
            source = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            source = ""
        raise err.located(str(path), locate_field(source, err.field)) from None
