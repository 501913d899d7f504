"""schedlab's policies deciding the jobs of a running Slurm (issue 46, docs/slurm.md): the
adapter behind ``schedlab slurm`` and a Slurm cluster on one host for tests and trials
(:mod:`schedlab.slurm.local_cluster`)."""
