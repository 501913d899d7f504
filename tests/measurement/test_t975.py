"""The Student-t quantiles of the batch-means intervals come from a table for small degrees of
freedom (no scipy import at start-up, issue 33): the table holds exactly the numbers
scipy.special.stdtrit computes, and the degrees of freedom beyond it still go to scipy."""

from __future__ import annotations

import numpy as np
from scipy.special import stdtrit

from schedlab.measurement import metrics


def test_the_table_is_scipys_stdtrit_bit_for_bit():
    dofs = np.arange(1, len(metrics.T975) + 1)
    assert tuple(float(stdtrit(int(d), 0.975)) for d in dofs) == metrics.T975
    assert [metrics._t975(int(d)) for d in dofs] == list(metrics.T975)


def test_degrees_of_freedom_beyond_the_table_are_computed():
    dof = len(metrics.T975) + 1
    assert metrics._t975(dof) == float(stdtrit(dof, 0.975))
    assert metrics._t975(999) == float(stdtrit(999, 0.975))
