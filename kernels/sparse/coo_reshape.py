"""COO reshape: forward and backward kernels.

When the new shape keeps x's trailing dense dims, only the sparse indices
are remapped (:func:`kernels.funcs.restride.restride`) and the values are
shared, not copied.  Otherwise the dense dims are folded into sparse dims
first, so every valid reshape works and the result has no dense dims.
"""

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..funcs.restride import restride
from ..gpu.backend import device
from ..gpu.coo_restride import coo_restride
from ..infermeta.sparse import coo_reshape_sparse_dim
from .data import CooData, fold_dense


@register_kernel("reshape_coo", layout="sparse_coo", dtypes=ALL)
def reshape_coo(x, shape, order="C"):
    """x reshaped to ``shape`` (resolved by the infer-meta), reading in ``order``.

    A C-order reshape keeps the coalesced flag; an F-order one clears it
    (coordinates stay unique but lose their C order).  Same shape: x itself.
    """
    return reshape_coo_by(restride, x, shape, order)


@register_kernel("reshape_coo", layout="sparse_coo", backends=("gpu",), dtypes=ALL)
def reshape_coo_gpu(x, shape, order="C"):
    """x reshaped to ``shape``; ``coo_restride.cu`` computes the new indices."""
    return reshape_coo_by(_restride_gpu, x, shape, order)


def _restride_gpu(indices, old_shape, new_shape, order):
    return coo_restride(device(), indices, old_shape, new_shape, order)


def reshape_coo_by(remap, x, shape, order):
    """The steps of :func:`reshape_coo`, with ``remap`` computing the new indices.

    ``remap(indices, old_shape, new_shape, order)`` returns the new index
    matrix: :func:`kernels.funcs.restride.restride` on the CPU, ``coo_restride.cu`` on a GPU.
    """
    new, old = tuple(shape), x.shape
    if new == old:
        return x
    if x.values.ndim == 1:                  # no dense dims: every dim is remapped
        return CooData(remap(x.indices, old, new, order), x.values, new,
                       x.coalesced and order == "C", unique=x.coalesced or x.unique)
    k = x.indices.shape[0]
    sparse_dim = coo_reshape_sparse_dim(old, k, new)
    if sparse_dim == len(new):
        x = fold_dense(x)
        old, k = x.shape, x.indices.shape[0]
    indices = remap(x.indices, old[:k], new[:sparse_dim], order)
    return CooData(indices, x.values, new, x.coalesced and order == "C",
                   unique=x.coalesced or x.unique)


@register_kernel("reshape_coo_grad", layout="sparse_coo", backends=("cpu", "gpu"), dtypes=ALL)
def reshape_coo_grad(x, out_grad, order="C"):
    """reshape(out_grad, x.shape) on x's pattern.

    out_grad has out's pattern, whose entries are x's entries in x's order
    (dense dims folded element by element), so reshaping it back gives x's
    indices exactly: only the values are taken, shaped like x's.
    """
    if out_grad.values.size != x.values.size:
        raise ValueError(f"reshape_grad: out_grad holds {out_grad.values.size} values, but "
                         f"x's pattern needs {x.values.size} (out_grad must have out's pattern)")
    return x._replace(values=out_grad.values.reshape(x.values.shape))
