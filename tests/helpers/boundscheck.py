"""The environment of a process whose compiled code checks every index (``NUMBA_BOUNDSCHECK=1``).

Bounds checks change the compiled code and Numba's cache index does not record them, so such a
process caches into its own directory beside schedlab's: ``<cache dir>-boundscheck``, shared by
tests/policies/test_boundscheck.py, tests/test_policy_api.py and the suite's warm-up
(tests/helpers/warm_kernels.py)."""

from __future__ import annotations

import os

from schedlab._jit import cache_dir


def boundscheck_env() -> dict[str, str]:
    return {
        **os.environ,
        "NUMBA_BOUNDSCHECK": "1",
        "NUMBA_CACHE_DIR": f"{cache_dir()}-boundscheck",
    }
