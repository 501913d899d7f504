"""Theory tools: feasible configurations, capacity LPs and bounds on the maximum workload.

Modules: :mod:`~schedlab.optim.configurations` (feasible and reduced configuration sets, psychas2019
Definitions 1 and 5), :mod:`~schedlab.optim.capacity_lp` (the finite-type capacity LP, psychas2019
eq. (4), on HiGHS), :mod:`~schedlab.optim.rounded_bounds` (upper- and lower-rounded bounds on the
maximum supportable workload of any size distribution, psychas2019 Definition 4 and Theorem 1).
"""
