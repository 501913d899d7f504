"""Every reader on its shipped file (tests/data) gives exactly the canonical table recorded in
tests/data/expected_digests.json (made with the readers of commit c5162c2, before the CSV parsing
moved to a library reader): the same rows, columns, types and values."""

from __future__ import annotations

import json

import pytest

from schedlab.workloads.traces import read
from tests.data import DATA, EXCERPTS
from tests.data.table_digest import table_digest

EXPECTED = json.loads((DATA / "expected_digests.json").read_text())


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_reader_gives_the_recorded_table(name):
    path, format = EXCERPTS[name]
    assert EXPECTED[name]["path"] == path.name and EXPECTED[name]["format"] == format
    table = read(path, format)
    assert table.num_rows == EXPECTED[name]["rows"]
    assert table_digest(table) == EXPECTED[name]["columns"]
