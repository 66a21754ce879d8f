"""Shape rules of the sparse structure ops: transpose, slice and index_select."""
from ..funcs.permute import resolve_perm
from ..funcs.slicing import resolve_index_select, resolve_slice, window_shape


def keeps_dense_dims(perm, sparse_dim):
    """True when ``perm`` permutes the sparse dims among themselves (and so the dense dims)."""
    return sorted(perm[:sparse_dim]) == list(range(sparse_dim))


def sparse_transpose_infer_meta(x, perm):
    """x's dims permuted by ``perm``.

    COO: a permutation of the sparse dims among themselves keeps
    ``sparse_dim``; one that mixes sparse and dense dims folds the dense dims
    first, so the result has dense_dim 0.  CSR stays CSR.
    """
    perm = resolve_perm(perm, x.ndim, "transpose")
    shape = tuple(x.shape[p] for p in perm)
    if x.layout != "sparse_coo" or keeps_dense_dims(perm, x.sparse_dim):
        return x.with_(shape=shape)
    return x.with_(shape=shape, sparse_dim=x.ndim)


def sparse_slice_infer_meta(x, axes, starts, ends):
    """The shape of x's window (:func:`kernels.funcs.slicing.resolve_slice`); layout kept."""
    return x.with_(shape=window_shape(resolve_slice(x.shape, axes, starts, ends, "slice")))


def sparse_index_select_infer_meta(x, index, axis=0):
    """x's shape with dim ``axis`` replaced by the length of the 1-D ``index``."""
    ax = resolve_index_select(x.shape, index, axis)
    return x.with_(shape=x.shape[:ax] + (index.shape[0],) + x.shape[ax + 1:])
