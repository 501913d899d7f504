"""FIFO with First-Fit placement.

Paper 000 (Psychas & Ghaderi, INFOCOM 2019), §VII-B: "schedules jobs in a FIFO manner, by
attempting to pack the first job in the queue to the first server that has sufficient capacity to
accommodate the job" (FIFO-FF). With ``blocking = true`` (the paper's FIFO) a head-of-line job that
fits nowhere blocks the jobs behind it; with ``blocking = false`` later jobs are still tried.

The same rule serves the other two families:

* ``fcfs`` (pooled): one server of capacity k, so FIFO-FF is FCFS with head-of-line blocking, the
  baseline of the multiserver-job literature (paper 004 §1, §6).
* ``first-fit`` (loss): each arrival is admitted into the first server with room, otherwise lost
  (no queue; the engine drops jobs not admitted at their decision epoch).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from pydantic import BaseModel, ConfigDict

from schedlab.engine.actions import start
from schedlab.engine.constants import Q_HEAD
from schedlab.engine.loop import run_engine
from schedlab.policies.placement import first_fit
from schedlab.policies.registry import Policy, grow_no_job_state, register


class FifoFirstFitParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    blocking: bool = True


@njit(cache=True)
def decide(st, ps):
    blocking = ps[0][0] != 0.0
    j = st.ctr[Q_HEAD]
    while j != -1:
        nxt = st.q_next[j]
        s = first_fit(st, j, 1.0)
        if s >= 0:
            start(st, j, s, 1.0)
        elif blocking:
            break
        j = nxt


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def make_state(st, model, params: FifoFirstFitParams) -> tuple:
    return (np.array([1.0 if params.blocking else 0.0]),)


_COMMON = {
    "runner": run,
    "make_state": make_state,
    "grow": grow_no_job_state,
    "params": FifoFirstFitParams,
}

register(
    Policy(
        name="fifo-ff",
        family="packing",
        title="FIFO-FF",
        reference="Psychas & Ghaderi 2019 (paper 000), §VII-B",
        summary="FIFO queue; head job to the first server with room; head-of-line blocking",
        families=("packing", "pooled", "loss"),
        **_COMMON,
    )
)
register(
    Policy(
        name="fcfs",
        family="pooled",
        title="FCFS",
        reference="Grosof et al. 2023 (paper 004), §1 (FCFS baseline)",
        summary="first-come first-served with head-of-line blocking on k pooled servers",
        families=("pooled", "packing"),
        **_COMMON,
    )
)
register(
    Policy(
        name="first-fit",
        family="loss",
        title="First-fit admission",
        reference="loss-model baseline (paper 002 setting, §2)",
        summary="admit each arrival into the first server with room, otherwise lose it",
        preset={"blocking": False},
        families=("loss", "packing"),
        **_COMMON,
    )
)
