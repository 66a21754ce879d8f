"""A sparse tensor as a function of its values: mask_as, values, with_values, cast.

These are the ops the sparse autograd contract is built from (as in Paddle's
``sparse_mask``, ``values`` and ``sparse_coo_tensor`` ops): ``values`` hands a
tensor's stored values out as a dense tensor and ``with_values`` puts values
onto a pattern, so gradients flow between a sparse tensor and its values
entry for entry.  ``mask_as`` reads a dense tensor at a sparse pattern; its
gradient scatter-adds back (duplicates accumulate).  All kernels are
xp-generic and registered for 'cpu' and 'gpu'.
"""
import numpy as np

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.sum_to_shape import grad_in_dtype
from .convert import gather_dense, scatter_dense
from .data import csr_coords

COO, CSR, DENSE = "sparse_coo", "sparse_csr", "dense"
BOTH = ("cpu", "gpu")


def _csr_indices(mask):
    return xp_of(mask.cols).stack(csr_coords(mask))


# ---------------------------------------------------------------- mask_as
@register_kernel("mask_as_coo", layout=COO, backends=BOTH, dtypes=ALL)
def mask_as_coo(x, mask):
    """x at each of mask's stored coordinates, entry for entry (duplicates repeat)."""
    values = gather_dense(x, mask.indices, "mask_as")
    return mask._replace(values=values)


@register_kernel("mask_as_csr", layout=CSR, backends=BOTH, dtypes=ALL)
def mask_as_csr(x, mask):
    """x at each of mask's stored (batch, row, col) entries."""
    return mask._replace(values=gather_dense(x, _csr_indices(mask), "mask_as"))


@register_kernel("mask_as_coo_grad", layout=COO, backends=BOTH, dtypes=ALL)
def mask_as_coo_grad(x, mask, out_grad):
    """The entries' gradients scatter-added into a dense tensor of x's shape."""
    return scatter_dense(mask.indices, out_grad.values, tuple(x.shape), mask.coalesced,
                         "mask_as_grad")


@register_kernel("mask_as_csr_grad", layout=CSR, backends=BOTH, dtypes=ALL)
def mask_as_csr_grad(x, mask, out_grad):
    """The entries' gradients scatter-added into a dense tensor of x's shape."""
    return scatter_dense(_csr_indices(mask), out_grad.values, tuple(x.shape), False,
                         "mask_as_grad")


# ---------------------------------------------------------------- values
@register_kernel("values_coo", layout=COO, backends=BOTH, dtypes=ALL)
@register_kernel("values_csr", layout=CSR, backends=BOTH, dtypes=ALL)
def values_of(x):
    """The stored values, shared."""
    return x.values


@register_kernel("values_coo_grad", layout=COO, backends=BOTH, dtypes=ALL)
@register_kernel("values_csr_grad", layout=CSR, backends=BOTH, dtypes=ALL)
def values_grad(x, out_grad):
    """The values' gradient on x's pattern, entry for entry."""
    return x._replace(values=out_grad)


# ---------------------------------------------------------------- with_values
@register_kernel("with_values_coo", layout=COO, backends=BOTH, dtypes=ALL)
@register_kernel("with_values_csr", layout=CSR, backends=BOTH, dtypes=ALL)
def with_values(x, values):
    """x's pattern holding ``values`` (shared): one per stored entry, or ValueError (the
    shape rule cannot see nnz)."""
    if values.shape[0] != x.nnz:
        raise ValueError(f"with_values: values has {values.shape[0]} rows (shape "
                         f"{list(values.shape)}); expected one per stored entry of x, "
                         f"nnz = {x.nnz}")
    return x._replace(values=values)


@register_kernel("with_values_coo_grad", layout=COO, backends=BOTH, dtypes=ALL)
@register_kernel("with_values_csr_grad", layout=CSR, backends=BOTH, dtypes=ALL)
def with_values_grad(x, out_grad):
    """The output's gradient values, which are the values' gradient."""
    return out_grad.values



# ---------------------------------------------------------------- cast
@register_kernel("cast_coo", layout=COO, backends=BOTH, dtypes=ALL)
def cast_coo(x, index_dtype=None, value_dtype=None):
    """Indices and values converted as numpy's ``astype`` converts them (ints truncate)."""
    indices = x.indices if index_dtype is None else x.indices.astype(index_dtype)
    values = x.values if value_dtype is None else x.values.astype(value_dtype)
    return x._replace(indices=indices, values=values)


@register_kernel("cast_csr", layout=CSR, backends=BOTH, dtypes=ALL)
def cast_csr(x, index_dtype=None, value_dtype=None):
    """crows, cols and values converted as numpy's ``astype`` converts them; ValueError
    if ``index_dtype`` cannot hold the row pointers (they reach nnz)."""
    if index_dtype is not None:
        top = int(x.crows.max()) if x.crows.shape[0] else 0
        if top > np.iinfo(index_dtype).max:
            raise ValueError(f"cast: index_dtype {np.dtype(index_dtype).name} cannot hold the "
                             f"row pointers of a CSR tensor with {x.nnz} entries (up to {top})")
        x = x._replace(crows=x.crows.astype(index_dtype), cols=x.cols.astype(index_dtype))
    return x if value_dtype is None else x._replace(values=x.values.astype(value_dtype))


@register_kernel("cast_coo_grad", layout=COO, backends=BOTH, dtypes=ALL)
@register_kernel("cast_csr_grad", layout=CSR, backends=BOTH, dtypes=ALL)
def cast_grad(x, out_grad):
    """The gradient's values back in x's value dtype, on x's pattern."""
    return x._replace(values=grad_in_dtype(out_grad.values, x.values.dtype))
