"""berg2020 (Berg et al., SPAA 2020): analysis of Inelastic-First and Elastic-First.

* :func:`exact_response_time` — the 2D CTMC of §5.1, truncated, solved with scipy.sparse;
* :func:`matrix_analytic_response_time` — the paper's method: busy-period transformation (§5.2,
  App. D), three-moment Coxian fit (Osogami & Harchol-Balter), matrix-analytic solution (§5.3);
* :func:`no_arrival_response_time` — the absorbing chain of Theorem 6 (§4.3);
* building blocks: :func:`mm1_busy_period_moments`, :func:`fit_three_moments`, :func:`solve_qbd`.
"""

from schedlab.analysis.elastic.absorbing import NoArrivalResult, no_arrival_response_time
from schedlab.analysis.elastic.busy_period import mm1_busy_period_moments
from schedlab.analysis.elastic.coxian import PhaseType, fit_three_moments
from schedlab.analysis.elastic.ctmc import exact_response_time
from schedlab.analysis.elastic.matrix_analytic import (
    busy_period_coxian,
    matrix_analytic_response_time,
)
from schedlab.analysis.elastic.model import (
    POLICIES,
    ElasticModelError,
    ElasticResult,
    ElasticSystem,
    allocation,
    policy_name,
    priority_class_mean_number,
)
from schedlab.analysis.elastic.qbd import QBDSolution, solve_qbd

__all__ = [
    "POLICIES",
    "ElasticModelError",
    "ElasticResult",
    "ElasticSystem",
    "NoArrivalResult",
    "PhaseType",
    "QBDSolution",
    "allocation",
    "busy_period_coxian",
    "exact_response_time",
    "fit_three_moments",
    "matrix_analytic_response_time",
    "mm1_busy_period_moments",
    "no_arrival_response_time",
    "policy_name",
    "priority_class_mean_number",
    "solve_qbd",
]
