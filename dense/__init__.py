"""Dense tensors and ops of phisparse.

Install phisparse in its own virtual environment: the import names ``dense``,
``sparse`` and ``kernels`` clash with pydata ``sparse`` and Hugging Face ``kernels``.
"""
from kernels.core.autograd import no_grad
from kernels.core.dist import placement, sbp
from kernels.core.meta import MetaTensor

from .memory import (get_num_threads, memory_stats, release_memory, set_num_threads,
                     set_pool_bytes)
from .tensor import Tensor, from_dlpack, to_tensor
from .tensor import add_op_methods as _add_op_methods
from . import _generated_api
from ._generated_api import *  # noqa: F401,F403
from ._generated_api import __all__ as _ops

_add_op_methods(_generated_api)

__all__ = ["Tensor", "to_tensor", "from_dlpack", "no_grad", "MetaTensor", "sbp", "placement",
           "release_memory", "memory_stats", "set_pool_bytes", "set_num_threads",
           "get_num_threads"] + list(_ops)
