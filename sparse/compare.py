"""``is_same_shape``: a query on tensors of any layout, not an op (no kernel, no graph)."""
from kernels.core.tensor import TensorBase


def is_same_shape(x: TensorBase, y: TensorBase) -> bool:
    """Whether ``x`` and ``y`` have the same shape, as ``paddle.sparse.is_same_shape``.

    Either may be a dense, COO or CSR tensor (global tensors compare their
    logical shapes); only the shapes count, not layouts, dtypes or patterns.

    Raises
    ------
    TypeError
        An argument that is not a tensor.

    Examples
    --------
    >>> import numpy as np, dense, sparse
    >>> x = sparse.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], [2, 3])
    >>> sparse.is_same_shape(x, x.to_sparse_csr()), sparse.is_same_shape(x, dense.ones([3, 2]))
    (True, False)
    """
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, TensorBase):
            raise TypeError(f"is_same_shape: {name} must be a dense or sparse tensor, "
                            f"got {type(t).__name__}")
    return list(x.shape) == list(y.shape)
