"""Settings and fixtures for every test directory (helpers that are not fixtures live in
tests/helpers/)."""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True)
settings.load_profile("ci")


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
