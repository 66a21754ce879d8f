"""MetaTensor: what infer-meta reasons about (shape, dtype, layout, place), never data."""
from dataclasses import dataclass, replace

import numpy as np

LAYOUTS = ("dense", "sparse_coo", "sparse_csr")
PLACES = ("cpu", "gpu")


@dataclass(frozen=True)
class MetaTensor:
    """Shape, dtype, layout and place of a tensor, without its data.

    ``sparse_dim`` is set for COO tensors (the number of indexed dims).
    A MetaTensor may stand in for a tensor whose buffer is not kept
    (``no_need_buffer`` in the backward YAML); kernels then read only its shape.
    """

    shape: tuple
    dtype: np.dtype
    layout: str = "dense"
    place: str = "cpu"
    sparse_dim: int | None = None

    def __post_init__(self):
        if type(self.shape) is not tuple or not all(type(s) is int for s in self.shape):
            object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if type(self.dtype) is not np.dtype and not isinstance(self.dtype, np.dtype):
            object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def with_(self, **changes):
        """A copy with some fields changed."""
        return replace(self, **changes)

    @property
    def meta(self):
        return self
