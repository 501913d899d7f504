"""The Slurm cluster these tests start themselves (issue 46 item 2): munged, slurmctld and four
slurmd daemons on 127.0.0.1, in a temporary folder, ended by process id after the test. Skipped,
with one line, where Debian's slurm-wlm and munge are not installed (.ci/run installs them)."""

from __future__ import annotations

import pytest

from schedlab.slurm.local_cluster import LocalCluster, missing_programs


def skip_without_slurm() -> None:
    """Skip the calling test module, in one line, where Slurm is not installed."""
    missing = missing_programs()
    if missing:
        pytest.skip(
            f"SLURM NOT INSTALLED ({', '.join(missing)} missing): the real-cluster tests of "
            "issue 46 did not run; apt-get install slurm-wlm munge (.ci/run does)",
            allow_module_level=True,
        )


def start_cluster(root, **options) -> LocalCluster:
    skip_without_slurm()
    return LocalCluster(root, **options).start()


@pytest.fixture
def slurm_cluster(tmp_path_factory, request):
    """A fresh cluster (4 nodes, or the test's ``nodes`` parameter) whose jobs of partition
    'batch' arrive held (job_submit.lua)."""
    nodes = getattr(request, "param", 4)
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"), nodes=nodes)
    try:
        yield cluster
    finally:
        cluster.stop()
