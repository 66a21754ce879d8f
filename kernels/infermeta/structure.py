"""Shape rules of the sparse structure ops: transpose, slice, index_select, concat, stack."""
import numpy as np

from ..funcs.permute import resolve_perm
from ..funcs.shape import normalize_axis
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


def _common_dtype(xs):
    """The values' result dtype (numpy's promotion) of a list of tensors."""
    return np.result_type(*[x.dtype for x in xs])


def check_one_layout(xs, op):
    """TypeError unless every tensor of ``xs`` has one layout."""
    layouts = sorted({x.layout for x in xs})
    if len(layouts) > 1:
        raise TypeError(f"{op}: argument 'xs' mixes layouts {layouts}; every tensor of the "
                        "list must have one layout")


def check_same_rank(xs, op):
    """ValueError unless every tensor of ``xs`` has the first one's rank."""
    for k, x in enumerate(xs):
        if x.ndim != xs[0].ndim:
            raise ValueError(f"{op}: xs[{k}] has shape {list(x.shape)}, of rank {x.ndim}, but "
                             f"xs[0] has shape {list(xs[0].shape)}; expected tensors of one rank")


def concat_sparse_dim(sparse_dims, axis):
    """sparse_dim of a COO concat: the largest input's, extended through ``axis`` when it is dense."""
    return max(max(sparse_dims), axis + 1)


def sparse_concat_infer_meta(xs, axis=0):
    """The shape of xs joined along ``axis``: every other dim must agree."""
    check_one_layout(xs, "concat")
    check_same_rank(xs, "concat")
    ax = normalize_axis(axis, xs[0].ndim, "concat")
    for k, x in enumerate(xs):
        if x.shape[:ax] + x.shape[ax + 1:] != xs[0].shape[:ax] + xs[0].shape[ax + 1:]:
            raise ValueError(f"concat: xs[{k}] has shape {list(x.shape)} and xs[0] has shape "
                             f"{list(xs[0].shape)}; expected equal dims except along axis {ax}")
    shape = list(xs[0].shape)
    shape[ax] = sum(x.shape[ax] for x in xs)
    out = xs[0].with_(shape=tuple(shape), dtype=_common_dtype(xs))
    if xs[0].layout == "sparse_coo":
        out = out.with_(sparse_dim=concat_sparse_dim([x.sparse_dim for x in xs], ax))
    return out


def stack_sparse_dim(sparse_dim, axis):
    """sparse_dim of a COO input after a new dim is inserted at ``axis``."""
    return sparse_dim + 1 if axis <= sparse_dim else sparse_dim


def sparse_stack_infer_meta(xs, axis=0):
    """xs, all of one shape, stacked along a new dim ``axis``; CSR inputs must be 2-D."""
    check_one_layout(xs, "stack")
    for k, x in enumerate(xs):
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: xs[{k}] has shape {list(x.shape)} and xs[0] has shape "
                             f"{list(xs[0].shape)}; expected tensors of one shape")
    ax = normalize_axis(axis, xs[0].ndim + 1, "stack")
    if xs[0].layout == "sparse_csr" and xs[0].ndim != 2:
        raise ValueError(f"stack: xs[0] is a CSR tensor of shape {list(xs[0].shape)}; CSR "
                         "tensors stack only from 2-D into batched 3-D")
    shape = xs[0].shape[:ax] + (len(xs),) + xs[0].shape[ax:]
    out = xs[0].with_(shape=shape, dtype=_common_dtype(xs))
    if xs[0].layout == "sparse_coo":
        dims = [stack_sparse_dim(x.sparse_dim, ax) for x in xs]
        out = out.with_(sparse_dim=concat_sparse_dim(dims, ax))
    return out


def each_unchanged_infer_meta(xs):
    """The gradients of a ``Tensor[]`` input: each has its tensor's metadata."""
    return list(xs)
