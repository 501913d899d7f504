"""Findings read as a person would say them (issue 32 item 5): a factor near 1 is a percentage
("within 4% of FCFS"), a larger one a factor ("1.9x below FCFS"), and a metric where more is
better says "above"."""

from __future__ import annotations

import pytest

from schedlab.report.ranking import factor_phrase


@pytest.mark.parametrize(
    ("ratio", "higher", "expected"),
    [
        (1.04, False, "within 4% of FCFS"),
        (1.0, False, "within 0% of FCFS"),
        (1.9, False, "1.9x below FCFS"),
        (1 / 1.9, True, "1.9x above FCFS"),
        (1 / 1.05, True, "within 5% of FCFS"),
    ],
)
def test_a_factor_near_one_is_a_percentage(ratio, higher, expected):
    assert factor_phrase(ratio, higher, "FCFS") == expected
