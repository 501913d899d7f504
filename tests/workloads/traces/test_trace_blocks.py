"""A trace is cut into blocks of whole lines: every byte once, in order, with its line numbers."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from schedlab.workloads.traces import source
from schedlab.workloads.traces.report import ReadReport


def _text(seed: int) -> bytes:
    """Lines of 0 to 300 bytes, some far longer than a read, the last without its line end."""
    rng = np.random.default_rng(seed)
    widths = rng.integers(0, 300, 400)
    widths[[7, 150]] = 5000  # lines spanning several reads
    return b"\n".join(b"x" * int(w) for w in widths)


@pytest.mark.parametrize("zipped", [False, True])
@pytest.mark.parametrize(("read_size", "block_size"), [(64, 256), (1000, 100), (7, 10_000)])
def test_blocks_hold_every_line_once_with_its_number(
    tmp_path, monkeypatch, zipped, read_size, block_size
):
    monkeypatch.setattr(source, "READ_SIZE", read_size)
    text = _text(read_size)
    path = tmp_path / "log.csv"
    path.write_bytes(gzip.compress(text) if zipped else text)
    blocks = list(source.iter_blocks([path], ReadReport(), block_size=block_size))
    assert b"".join(b.data for b in blocks) == text
    line = 1
    for b in blocks:
        assert b.first_line == line
        assert b.n_lines == len(source.split_lines(b))
        assert b is blocks[-1] or b.data.endswith(b"\n")
        line += b.n_lines
    assert line - 1 == text.count(b"\n") + 1
