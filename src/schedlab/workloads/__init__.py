"""Workloads: job-sequence generation from specs, and trace tables."""
