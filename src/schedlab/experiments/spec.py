"""Experiment specs: a base simulation spec, sweep axes, variants, replications and outputs.

```toml
name = "sf-vs-fcfs"
replications = 5
base = "quickstart.toml"          # a spec file (relative to this file), or an inline [base] table

[sweep]                           # cartesian product; keys are dotted spec fields
"workload.load" = [0.5, 0.7, 0.9]

[[variants]]                      # optional: named partial overrides, crossed with the sweep
label = "ServerFilling"
policy = { name = "server-filling" }
[[variants]]
label = "FCFS"
policy = { name = "fcfs" }

[[outputs.plots]]                 # figures for `schedlab report`
x = "workload.load"
y = "mean_response_time"
hue = "variant"
logy = true
```

Every point uses the base spec's seed, so all variants at a point see the same job sequence
(common random numbers); replication r draws from spawn key r of that seed.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schedlab.errors import SpecError
from schedlab.experiments.runner import Task
from schedlab.model.spec import (
    SimulationSpec,
    locate_field,
    parse_spec,
    read_toml,
    resolve_paths,
    spec_error_from_validation,
)


class PlotSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    x: str
    y: str = "mean_response_time"
    hue: str = "variant"
    logy: bool = False
    ratio_to: str | None = None
    title: str | None = None


class Outputs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics: list[str] = Field(default_factory=lambda: ["mean_response_time"])
    plots: list[PlotSpec] = Field(default_factory=list)


class ExperimentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # a directory name under out/: no separators, no "." or ".." (issue 15 item 6)
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]
    base: str | dict[str, Any]
    sweep: dict[str, list[Any]] = Field(default_factory=dict)
    variants: list[dict[str, Any]] = Field(default_factory=list)
    replications: Annotated[int, Field(ge=1)] = 1
    outputs: Outputs = Outputs()

    @field_validator("sweep")
    @classmethod
    def _axes_not_empty(cls, sweep: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for axis, values in sweep.items():
            if not values:
                raise ValueError(f"axis '{axis}' has no values")
            if len({repr(v) for v in values}) != len(values):
                raise ValueError(f"axis '{axis}' repeats a value")
        return sweep

    @field_validator("variants")
    @classmethod
    def _labelled(cls, variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
        labels = [v.get("label") for v in variants]
        if any(not isinstance(label, str) or not label for label in labels):
            raise ValueError("every variant needs a label")
        if len(set(labels)) != len(labels):
            raise ValueError("variant labels must be distinct")
        return variants


_PATH = re.compile(r"^[A-Za-z_][\w-]*(\[\d+\])*(\.[A-Za-z_][\w-]*(\[\d+\])*)*$")
_PART = re.compile(r"([A-Za-z_][\w-]*)|\[(\d+)\]")


def _tokens(path: str) -> list[str | int]:
    """``workload.classes[0].need`` -> ["workload", "classes", 0, "need"] (or ValueError)."""
    if not _PATH.match(path):
        raise ValueError(path)
    return [name if name else int(index) for name, index in _PART.findall(path)]


def set_field(data: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted field (``workload.classes[0].duration.mean``) in a spec dict, in place."""
    parts = _tokens(path)
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise SpecError(f"no element [{part}] at this point of the spec", field=path)
            node = node[part]
            continue
        if not isinstance(node, dict):
            raise SpecError("not a table at this point of the spec", field=path)
        if part not in node:
            node[part] = [] if isinstance(nxt, int) else {}
        node = node[part]
    last = parts[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise SpecError(f"no element [{last}] at this point of the spec", field=path)
        node[last] = value
    else:
        if not isinstance(node, dict):
            raise SpecError("not a table at this point of the spec", field=path)
        node[last] = value


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            if key == "policy" and "name" in value and value["name"] != out[key].get("name"):
                out[key] = copy.deepcopy(value)  # another policy: drop the base's parameters
            else:
                out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class Point:
    index: int
    variant: str
    axes: dict[str, Any]
    spec: SimulationSpec


@dataclass(frozen=True)
class Experiment:
    spec: ExperimentSpec
    base: dict[str, Any]
    source: str  # the experiment's TOML text, kept with the results
    path: Path | None

    def points(self) -> list[Point]:
        """Every (variant, axis values) point, each validated; errors name the point."""
        axes = list(self.spec.sweep)
        combos = list(itertools.product(*(self.spec.sweep[a] for a in axes))) or [()]
        variants = self.spec.variants or [{"label": ""}]
        out: list[Point] = []
        for variant in variants:
            override = {k: v for k, v in variant.items() if k != "label"}
            for combo in combos:
                data = _merge(self.base, override)
                values = dict(zip(axes, combo, strict=True))
                for axis, value in values.items():
                    set_field(data, axis, value)
                if self.path is not None:  # data files named by axes or variants
                    data = resolve_paths(data, self.path.parent)
                where = ", ".join(f"{a}={v}" for a, v in values.items())
                label = variant["label"]
                try:
                    spec = parse_spec(data)
                    _compile_check(spec)
                except SpecError as err:
                    at = " ".join(p for p in (f"variant '{label}'" if label else "", where) if p)
                    axis_field = next(
                        (a for a in axes if err.field and a.startswith(err.field)), None
                    )
                    prefix = f"sweep point ({at}): " if at else ""
                    field = err.field if axis_field is None else f"sweep.{axis_field}"
                    raise SpecError(
                        prefix + err.message,
                        field=field,
                        file=str(self.path) if self.path else None,
                    ) from None
                out.append(Point(index=len(out), variant=label, axes=values, spec=spec))
        return out

    def tasks(self) -> list[Task]:
        return [
            Task.of(
                p.spec,
                r,
                experiment=self.spec.name,
                point=p.index,
                axes={"variant": p.variant, **p.axes},
            )
            for p in self.points()
            for r in range(self.spec.replications)
        ]


def _compile_check(spec: SimulationSpec) -> None:
    from schedlab.model.compile import compile_model

    compile_model(spec)


def _check_axes(spec: ExperimentSpec, base: dict[str, Any], file: str | None) -> None:
    """An axis must name a field the spec model knows (checked on the base spec)."""
    for axis in spec.sweep:
        try:
            parts = _tokens(axis)
        except ValueError:
            raise SpecError("not a dotted spec field", field=f"sweep.{axis}", file=file) from None
        if parts[0] == "policy":
            continue  # policy parameters are checked per point by the policy's own model
        data = copy.deepcopy(base)
        try:
            set_field(data, axis, spec.sweep[axis][0])
            parse_spec(data)
        except SpecError as err:
            if err.message.startswith("unknown field") or err.message.startswith("no element"):
                raise SpecError(
                    f"sweep axis names no spec field: {err.message}",
                    field=f"sweep.{axis}",
                    file=file,
                ) from None


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment TOML file (the base spec may be another file)."""
    p = Path(path)
    data, source = read_toml(p)
    return parse_experiment(data, source=source, path=p)


def parse_experiment(
    data: dict[str, Any], *, source: str | None = None, path: Path | None = None
) -> Experiment:
    """Validate an experiment given as a dict (``base`` as a file is relative to ``path``'s
    folder, or to the working directory when there is no file)."""
    from schedlab.spec_kind import expect_kind, kind_of

    file = str(path) if path else None
    expect_kind(data, "experiment", file)
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        err = spec_error_from_validation(exc, ExperimentSpec)
        raise err.located(file, None) from None
    if isinstance(spec.base, str):
        base_path = ((path.parent if path else Path.cwd()) / spec.base).resolve()
        if path is not None and base_path == path.resolve():
            raise SpecError(
                f"base = {spec.base!r} is this file itself: a cycle (base names a simulation "
                "spec file)",
                field="base",
            ).located(file, locate_field(source, "base") if source else None)
        base, _ = read_toml(base_path)
        if kind_of(base) == "experiment":
            raise SpecError(
                f"base = {spec.base!r} is an experiment spec, not a simulation spec (a chain of "
                "bases is not followed)",
                field="base",
            ).located(file, locate_field(source, "base") if source else None)
        base = resolve_paths(base, base_path.parent)
    else:
        base = resolve_paths(spec.base, path.parent if path else Path.cwd())
    _check_axes(spec, base, file)
    if source is None:  # kept with the results as TOML, the form `schedlab run` reads
        import tomli_w

        try:
            source = tomli_w.dumps(data)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"experiment cannot be written as TOML: {exc}", file=file) from None
    return Experiment(spec=spec, base=base, source=source, path=path)
