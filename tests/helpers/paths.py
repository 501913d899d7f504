"""Where things are, for tests at any depth of tests/: the checkout, its src/, the test fixtures,
and the shared data folder (``$SCHEDLAB_DATA``, else ``shared/data`` beside the checkout)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
SHARED_DATA = Path(os.environ.get("SCHEDLAB_DATA") or ROOT.parent / "shared" / "data")
