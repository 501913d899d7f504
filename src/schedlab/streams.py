"""The named random streams of a run: one ``SeedSequence(seed, spawn_key=(replication,
stream))`` per quantity, PCG64. The job sequence draws from its own
streams, so it does not depend on the policy; policies that randomize (G16, power-of-d) draw
from the separate stream "policy". So two policies run on the same seed and replication see
the same jobs (common random numbers), which the paired comparisons of
:mod:`schedlab.experiments.stats` rely on."""

from __future__ import annotations

import numpy as np

STREAMS = {"arrivals": 0, "classes": 1, "demand": 2, "duration": 3, "policy": 4}


def stream(seed: int, replication: int, name: str, unit: int | None = None) -> np.random.Generator:
    """The named random stream of one replication of a run; with ``unit``, the sub-stream of one
    generation unit of the job sequence (simulation/generate.py: the job sequence is drawn unit
    by unit, ``spawn_key=(replication, stream, unit)``, so it can be streamed)."""
    key = (replication, STREAMS[name]) if unit is None else (replication, STREAMS[name], unit)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))
