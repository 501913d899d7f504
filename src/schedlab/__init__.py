"""schedlab: simulate and analyse cluster-scheduling policies (packing, loss and pooled models).

The public names are imported on first use (PEP 562), so that ``import schedlab`` and the CLI's
``--help`` do not pay for NumPy, SciPy, Numba and PyArrow until a simulation needs them.
``import schedlab`` changes nothing in the process (no Numba setting, no import hook):
:func:`configure` applies the entry points' process tuning for a caller that wants it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from schedlab._version import __version__

_PUBLIC = {
    "Result": "schedlab.simulation.result",
    "Estimate": "schedlab.measurement.metrics",
    "SimulationSpec": "schedlab.model.spec",
    "load_spec": "schedlab.model.spec",
    "simulate": "schedlab.api",
    "sweep": "schedlab.api",
    "SweepResults": "schedlab.api",
    "load_plugin": "schedlab.plugins",
    "configure": "schedlab._jit",
}

__all__ = [
    "Estimate",
    "Result",
    "SimulationSpec",
    "SweepResults",
    "__version__",
    "configure",
    "load_plugin",
    "load_spec",
    "simulate",
    "sweep",
]

if TYPE_CHECKING:
    from schedlab._jit import configure
    from schedlab.api import SweepResults, simulate, sweep
    from schedlab.measurement.metrics import Estimate
    from schedlab.model.spec import SimulationSpec, load_spec
    from schedlab.plugins import load_plugin
    from schedlab.simulation.result import Result


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'schedlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
