"""Reproductions of the papers' figures: one registered entry per figure (see registry.py)."""
