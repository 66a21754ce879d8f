"""Sparse kernels registered under backend 'gpu' that run ``.cu`` kernels.

:mod:`kernels.sparse` imports this module last, so the 'gpu' entries exist
whenever the sparse ops' ``module`` is loaded.  Launches go to
:func:`kernels.gpu.backend.device`, created on first use.

==================  ====================================================
kernel              'gpu' implementation
==================  ====================================================
reshape_coo         ``coo_restride.cu``: one thread per nonzero, 64-bit
                    flat offsets (dense dims folded first as on the CPU)
csr_to_coo          ``csr_coo.cu``: row ids from crows (2-D and 3-D)
coo_to_csr          stable sort by row where needed, then ``csr_coo.cu``
                    crows from the sorted row ids
coo_to_csr_grad     the same row order, undone on the values
==================  ====================================================

The other sparse kernels (reshape_coo_grad, reshape_csr and its gradient,
to_dense, dense to COO/CSR, coalesce and the remaining gradients) are
xp-generic and registered for 'cpu' and 'gpu' in :mod:`kernels.sparse`;
on a GPU their CSR -> COO step also runs ``csr_coo.cu``
(:func:`kernels.sparse.data.csr_coords`).
"""
from kernels.core.dtypes import ALL
from kernels.core.registry import register_kernel
from kernels.core.xp import xp_of
from kernels.funcs.restride import index_dtype
from kernels.gpu import launch
from kernels.gpu.backend import device
from kernels.sparse.convert import unpermute
from kernels.sparse.coo_reshape import reshape_coo_by
from kernels.sparse.data import CooData, CsrData, csr_indices_cuda, fold_dense, row_keys, row_order

COO, CSR = "sparse_coo", "sparse_csr"


@register_kernel("reshape_coo", layout=COO, backends=("gpu",), dtypes=ALL)
def reshape_coo(x, shape, order="C"):
    """x reshaped to ``shape``; ``coo_restride.cu`` computes the new indices."""
    return reshape_coo_by(_restride, x, shape, order)


def _restride(indices, old_shape, new_shape, order):
    return launch.coo_restride(device(), indices, old_shape, new_shape, order)


@register_kernel("csr_to_coo", layout=CSR, backends=("gpu",), dtypes=ALL)
def csr_to_coo(x, sparse_dim):
    """A CSR tensor as COO in storage order; ``csr_coo.cu`` finds each entry's row."""
    return CooData(csr_indices_cuda(x), x.values, x.shape, False)


@register_kernel("coo_to_csr", layout=COO, backends=("gpu",), dtypes=ALL)
def coo_to_csr(x):
    """COO to CSR: dense dims folded, entries stably sorted by row where needed.

    ``csr_coo.cu`` computes crows from the sorted rows; duplicates are kept.
    """
    x, perm = _by_row(x)
    dtype = index_dtype(x.shape, x.indices.dtype, extent=x.nnz, xp=xp_of(x.indices))
    indices = x.indices if perm is None else x.indices[:, perm]
    indices = indices.astype(dtype, copy=False)
    crows = launch.coo_to_crows(device(), indices, x.shape)
    values = x.values.reshape(-1)
    return CsrData(crows, indices[-1], values if perm is None else values[perm], tuple(x.shape))


@register_kernel("coo_to_csr_grad", layout=COO, backends=("gpu",), dtypes=ALL)
def coo_to_csr_grad(x, out_grad):
    """The CSR gradient's values put back in x's entry order."""
    perm = _by_row(x)[1]
    return x._replace(values=unpermute(out_grad.values, perm).reshape(x.values.shape))


def _by_row(x):
    """x with dense dims folded, and the stable row order of its entries (None: sorted)."""
    x = fold_dense(x)
    return x, row_order(row_keys(x.indices, x.shape))
