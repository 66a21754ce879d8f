"""Shared index math used by many kernels and shape rules."""
