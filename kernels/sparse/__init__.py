"""Sparse kernels: COO/CSR reshape and layout conversions.

Importing this package registers them all, 'cpu' and 'gpu' (the sparse YAML names it as the
``module`` of every sparse op).  The kernels take and return the bundles of
:mod:`kernels.sparse.data`.
"""
from . import (binary, concat, convert, coo_reshape, csr_reshape, reduce, select,  # noqa: F401
               softmax, transpose, unary, values)
from .data import CooData, CsrData  # noqa: F401
