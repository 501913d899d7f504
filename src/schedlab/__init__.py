"""schedlab: simulate and analyse cluster-scheduling policies (packing, loss and pooled models)."""

from schedlab._jit import configure as _configure_numba

_configure_numba()

from schedlab.model.spec import SimulationSpec, load_spec  # noqa: E402
from schedlab.simulation.result import Result  # noqa: E402
from schedlab.simulation.simulate import simulate  # noqa: E402

__version__ = "0.1.0"

__all__ = ["Result", "SimulationSpec", "__version__", "load_spec", "simulate"]
