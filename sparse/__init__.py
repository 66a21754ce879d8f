"""Sparse COO/CSR tensors and ops of phisparse.

Install phisparse in its own virtual environment: the import name ``sparse``
clashes with pydata ``sparse``.  ``python -m sparse`` runs a short tour.
"""
from kernels.core.autograd import no_grad

from ._generated_api import *  # noqa: F401,F403
from ._generated_api import __all__ as _ops
from .arith import add, divide, subtract  # noqa: F811  (the scalar rules)
from .compare import is_same_shape
from .creation import from_scipy, sparse_coo_tensor, sparse_csr_tensor
from .tensor import SparseCooTensor, SparseCsrTensor

__all__ = ["SparseCooTensor", "SparseCsrTensor", "sparse_coo_tensor", "sparse_csr_tensor",
           "from_scipy", "is_same_shape", "no_grad"] + list(_ops)
