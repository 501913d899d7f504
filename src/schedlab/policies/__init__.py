"""Scheduling policies, one module per policy, grouped by model family (packing, loss, pooled)."""
