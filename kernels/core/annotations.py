"""The types that annotate the generated API (``kernels.codegen.emit`` maps YAML types here).

Runtime code never evaluates them: generated modules use postponed
annotations, so they cost nothing per call.
"""
from typing import Any, Optional, Sequence, Union

import numpy as np

from .tensor import TensorBase

# A Tensor argument: a tensor of any layout, or a numpy array (taken as a dense tensor).
TensorLike = Union[TensorBase, np.ndarray]
# An IntArray attribute: sizes or axes one by one or as a sequence, or a 1-D integer tensor.
IntArray = Union[int, Sequence[int], TensorBase, np.ndarray]
# A Scalar attribute: a Python or numpy number.
Scalar = Union[bool, int, float, complex, np.number]
# A DataType attribute: a numpy dtype, a numpy scalar type, or a dtype's name.
DataType = Union[np.dtype, type, str]

__all__ = ["Any", "Optional", "Sequence", "TensorBase", "TensorLike", "IntArray", "Scalar",
           "DataType"]
