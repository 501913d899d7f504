"""Theory tools: feasible configurations, capacity LPs and bounds on the maximum workload.

Modules: :mod:`~schedlab.optim.configurations` (feasible and reduced configuration sets, paper 000
Definitions 1 and 5), :mod:`~schedlab.optim.capacity_lp` (the finite-type capacity LP, paper 000
eq. (4), on HiGHS), :mod:`~schedlab.optim.rounded_bounds` (upper- and lower-rounded bounds on the
maximum supportable workload of any size distribution, paper 000 Definition 4 and Theorem 1).
"""
