"""Issue 28 item 10: a UTF-8 byte-order mark is accepted; a ``base`` naming its own file is
reported as a cycle naming the file; numbers in messages read as people write them
(docs/guarantees.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

import schedlab
from schedlab.errors import SpecError
from schedlab.experiments.spec import load_experiment
from schedlab.model.spec import load_spec

EXAMPLES = Path(schedlab.__file__).parent / "examples"


def test_a_bom_toml_is_read(tmp_path):
    spec = tmp_path / "bom.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + (EXAMPLES / "quickstart.toml").read_bytes())
    assert load_spec(spec).cluster.servers == 8


def test_a_self_referencing_base_is_a_cycle(tmp_path):
    spec = tmp_path / "loop.toml"
    spec.write_text('name = "x"\nbase = "loop.toml"\n[sweep]\n"workload.load" = [0.5]\n')
    with pytest.raises(SpecError) as err:
        load_experiment(spec)
    text = str(err.value)
    assert "cycle" in text and str(spec) in text and "\n" not in text
    assert "missing required field" not in text


def test_messages_show_numpy_numbers_for_people():
    """Issue 28 item 10: a NumPy scalar in a message reads ``inf``, not ``np.float64(inf)``."""
    import numpy as np

    from schedlab.analysis.srpt import check_arrival_rate

    with pytest.raises(ValueError, match=r"got inf$"):
        check_arrival_rate(None, np.float64("inf"))  # type: ignore[arg-type]
