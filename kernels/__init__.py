"""phisparse kernels: core runtime, shape rules, kernels and the op generator.

This package never imports ``dense`` or ``sparse``.
"""
from .core.autograd import no_grad
from .core.meta import MetaTensor
from .core.registry import KernelNotFoundError, register_kernel, registered

__all__ = ["no_grad", "MetaTensor", "KernelNotFoundError", "register_kernel", "registered"]
