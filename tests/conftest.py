"""Settings and fixtures for every test directory (helpers that are not fixtures live in
tests/helpers/)."""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True)
settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption(
        "--warm-kernels",
        action="store_true",
        help="compile every policy's runner once, split across the workers, before the tests "
        "(tests/helpers/warm_kernels.py; make test passes it)",
    )


def pytest_sessionstart(session):
    """The warm-up runs once, in the controller, before xdist starts its workers."""
    config = session.config
    if not config.getoption("warm_kernels") or hasattr(config, "workerinput"):
        return
    from tests.helpers.warm_kernels import warm

    slots = max(1, int(getattr(config.option, "numprocesses", None) or 1))
    seconds = warm(slots)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"kernels warmed in {seconds:.0f} s ({slots} processes)")


@pytest.fixture
def tmp_toml(tmp_path):
    def write(text: str, name: str = "spec.toml"):
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.fixture(scope="module")
def registry_restored():
    """Plugins register globally: a module that loads one leaves the registry (and the list of
    loaded plugin files) as it was for the other test modules of its process."""
    from schedlab import plugins
    from schedlab.policies import registry

    registry.all_policies()
    saved, files = dict(registry._REGISTRY), dict(plugins._FILES)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
    plugins._FILES.clear()
    plugins._FILES.update(files)
