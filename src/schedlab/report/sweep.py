"""The swept axes of any set of stored runs, inferred from the runs' own specs.

Every stored row carries its full canonical spec (``spec_json``). Two runs belong to the same point
exactly when their specs are equal, so the point key is every spec path whose value varies across
the rows (flattened to dotted paths, e.g. ``workload.load``, ``run.arrivals``,
``workload.classes[0].duration.mean``), plus the axes an experiment declared (``variant``). Paths
that another key column determines (``policy.name`` given ``variant``) are dropped, as they add no
information. Grouping by this key never pools runs across anything that differs between them:
only replications of one spec are averaged.
"""

from __future__ import annotations

import json
from typing import Any

# Spec paths with a convenience column of their own in the stored rows.
COLUMN_OF_PATH = {"policy.name": "policy", "workload.load": "load"}
HUE_PREFERENCE = ("variant", "policy")


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths of a JSON value's leaves (lists indexed as ``[i]``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def _declared(rows: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for a in json.loads(row.get("axes") or "[]"):
            if a not in names:
                names.append(a)
    return names


def _varies(rows: list[dict[str, Any]], column: str) -> bool:
    return len({repr(r.get(column)) for r in rows}) > 1


def _determined(rows: list[dict[str, Any]], by: str, column: str) -> bool:
    """Whether each value of ``by`` comes with one value of ``column``."""
    seen: dict[str, str] = {}
    for r in rows:
        k, v = repr(r.get(by)), repr(r.get(column))
        if seen.setdefault(k, v) != v:
            return False
    return True


def with_spec_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with every varying spec path added as a column (under its convenience name when
    it has one), so they can be grouped on."""
    flat = [flatten(json.loads(r["spec_json"])) if r.get("spec_json") else {} for r in rows]
    paths = sorted(set().union(*flat)) if flat else []
    varying = [p for p in paths if len({repr(f.get(p)) for f in flat}) > 1]
    out = []
    for row, f in zip(rows, flat, strict=True):
        extra = {COLUMN_OF_PATH.get(p, p): f.get(p) for p in varying}
        out.append({**extra, **row})
    return out


def swept_axes(rows: list[dict[str, Any]]) -> list[str]:
    """The key columns of the points of ``rows``: declared axes first, then the policy, the load
    and every other varying spec path; a column determined by an earlier one is left out."""
    rows = with_spec_columns(rows)
    flat_paths = set()
    for r in rows:
        if r.get("spec_json"):
            flat_paths |= set(flatten(json.loads(r["spec_json"])))
    candidates = [
        *_declared(rows),
        "policy",
        "load",
        *sorted(
            COLUMN_OF_PATH.get(p, p)
            for p in flat_paths
            if COLUMN_OF_PATH.get(p, p) not in ("policy", "load")
        ),
    ]
    keep: list[str] = []
    for c in dict.fromkeys(candidates):
        if c == "run.seed" or not _varies(rows, c):
            continue
        if any(_determined(rows, k, c) for k in keep):
            continue
        keep.append(c)
    return keep


def hue_of(axes: list[str]) -> str | None:
    """The column that makes the series (a table's columns, a figure's lines)."""
    return next((h for h in HUE_PREFERENCE if h in axes), None)
