"""Batch arrivals of VM vectors (psychas2018 §5.2, Corollary 5.3).

Requests arrive as a Poisson process of rate lambda; each request brings a vector
v = (v_1, ..., v_J) of VMs (v_j of type j) with probability p_v, v in a bounded set V. The
arrival rate of type j is lambda_j = lambda sum_v v_j p_v (eq. (47)) and its workload
rho_j = lambda sum_v v_j p_v / mu_j (eq. (27)); Theorem 3.1 holds with this rho.

In a spec (``process = "batch"``, ``workload.rate`` = VMs per unit time, as for ``batch_size``)::

    [[workload.arrivals.vectors]]
    probability = 0.7
    vms = { small = 2, large = 1 }      # by class name; classes not named: 0

The classes then take their shares from the vectors (their ``probability`` is not given).
:class:`BatchVector` validates one entry; :func:`vector_table` checks them against the classes;
:func:`class_shares`, :func:`type_rates` and :func:`workload` are eqs. (47)/(27);
:func:`expand` turns request times into the VM arrival sequence (used by
:class:`schedlab.simulation.generate.ArrivalTimes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class BatchVector(BaseModel):
    """One possible request: ``vms[name]`` VMs of the class ``name``, with ``probability``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    probability: Annotated[float, Field(gt=0, le=1)]
    vms: dict[str, Annotated[int, Field(ge=0)]]

    @model_validator(mode="after")
    def _not_empty(self) -> BatchVector:
        if sum(self.vms.values()) == 0:
            raise ValueError("a request brings at least one VM")
        return self


@dataclass(frozen=True)
class VectorTable:
    """The set V as a (K, J) integer matrix (rows: vectors, columns: classes) and p_v."""

    counts: np.ndarray
    probability: np.ndarray

    @property
    def mean_batch(self) -> float:
        """E|v|: VMs per request."""
        return float(self.probability @ self.counts.sum(axis=1))


def vector_table(vectors: Sequence[BatchVector], class_names: Sequence[str]) -> VectorTable:
    """The vectors over the classes (in class order). Raises ValueError naming the problem:
    probabilities not summing to 1, a name that is not a class, a class in no vector."""
    if not vectors:
        raise ValueError("vectors: give at least one request vector")
    total = sum(v.probability for v in vectors)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"vectors: probabilities sum to {total:g}, not 1")
    index = {name: j for j, name in enumerate(class_names)}
    counts = np.zeros((len(vectors), len(class_names)), dtype=np.int64)
    for i, v in enumerate(vectors):
        for name, n in v.vms.items():
            if name not in index:
                known = ", ".join(class_names)
                raise ValueError(f"vectors[{i}].vms: '{name}' is not a class (classes: {known})")
            counts[i, index[name]] = n
    never = [class_names[j] for j in np.flatnonzero(counts.sum(axis=0) == 0)]
    if never:
        raise ValueError(f"vectors: class '{never[0]}' is in no request vector")
    return VectorTable(counts, np.array([v.probability for v in vectors]))


def class_shares(table: VectorTable) -> np.ndarray:
    """The share of each class among arriving VMs: sum_v v_j p_v / E|v| (eq. (47) / lambda)."""
    return (table.probability @ table.counts) / table.mean_batch


def type_rates(request_rate: float, table: VectorTable) -> np.ndarray:
    """lambda_j = lambda sum_v v_j p_v (eq. (47))."""
    return request_rate * (table.probability @ table.counts)


def workload(request_rate: float, table: VectorTable, mean_service: np.ndarray) -> np.ndarray:
    """rho_j = lambda sum_v v_j p_v / mu_j (eq. (27)), with 1/mu_j the mean service times."""
    return type_rates(request_rate, table) * np.asarray(mean_service, dtype=float)


def expand(
    rng: np.random.Generator, request_times: np.ndarray, table: VectorTable
) -> tuple[np.ndarray, np.ndarray]:
    """VM arrival times and classes of requests at ``request_times``: each request draws its
    vector with probability p_v (independently) and brings v_j VMs of class j at its time, in
    class order."""
    pick = rng.choice(table.probability.size, size=request_times.size, p=table.probability)
    per_request = table.counts[pick]  # (requests, J)
    sizes = per_request.sum(axis=1)
    times = np.repeat(request_times, sizes)
    classes = np.repeat(
        np.tile(np.arange(table.counts.shape[1], dtype=np.int32), request_times.size),
        per_request.ravel(),
    )
    return times, classes
