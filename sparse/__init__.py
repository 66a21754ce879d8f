"""Sparse COO/CSR tensors and ops of phisparse."""
from ._generated_api import *  # noqa: F401,F403
from ._generated_api import __all__ as _ops

__all__ = list(_ops)
