"""Experiments: sweeps, replications, a crash-safe result store, local and Dask runners."""
