"""Server needs of a pooled (multiserver-job) model, and the settings shared by the policies of
grosof2023 that order jobs by Gittins rank."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from schedlab.policy_api import (
    PolicyConfig,
    PolicyContext,
    SpecError,
)


def server_needs(context: PolicyContext) -> np.ndarray:
    """The finite set of server needs of a pooled model (SpecError otherwise): a trace's distinct
    needs (its one compiled class only carries the trace's mean demand), else the union of the
    declared classes' need distributions."""
    if context.demands_from_trace:
        return context.need_values()
    needs: set[float] = set()
    for i, cls in enumerate(context.classes):
        if cls.elastic:
            raise SpecError(
                "this policy serves rigid multiserver jobs only",
                field=f"workload.classes[{i}].speedup",
            )
        values = cls.demand[0].values()
        if values is None:
            raise SpecError(
                "this policy needs a finite set of server needs (fixed, discrete, "
                "integer uniform or empirical)",
                field=f"workload.classes[{i}].need",
            )
        needs.update(float(v) for v in values)
    return np.array(sorted(needs))


def check_rigid(context: PolicyContext, config: PolicyConfig) -> None:
    """Rigid jobs with a finite set of server needs."""
    server_needs(context)


class GittinsConfig(PolicyConfig):
    """``sizes``: "unknown" (blind: the rank of a job's age in its need's size distribution,
    grosof2023 §5.1) or "known" (the Gittins rank of a known size is its remaining size: SRPT).
    ``quantum`` (inferred): ranks that rise with age (e.g. hyperexponential sizes) are re-ordered
    when a served job's rank reaches the smallest waiting rank or rises by this fraction."""

    sizes: Literal["unknown", "known"] = "unknown"
    quantum: Annotated[float, Field(gt=0, le=1)] = 0.01


def gittins_tables_needed(config: PolicyConfig) -> tuple[str, ...]:
    """``Hooks.tables`` of a policy ordering jobs by Gittins rank: the model's rank tables
    (``"gittins"``) when its sizes are unknown."""
    return ("gittins",) if ranks_by_gittins(config) else ()


def ranks_by_gittins(config: PolicyConfig) -> bool:
    """A policy with these settings orders jobs by the Gittins rank of their age (grosof2023
    §5.1): its sizes are unknown (with known sizes the Gittins rank is the remaining size, SRPT)."""
    return getattr(config, "sizes", "unknown") == "unknown"
