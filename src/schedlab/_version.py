"""schedlab's version: the one place it is written (pyproject.toml reads it, as setuptools'
dynamic version; ``schedlab --version``, run records and reports import it from here)."""

__version__ = "0.1.0"
