"""Helpers shared by the experiments' analysis modules (experiments/<study>/analysis.py)."""
