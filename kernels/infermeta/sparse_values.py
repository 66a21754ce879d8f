"""Shape rules of sparse ops that keep a pattern: mask_as, values, with_values."""

SPARSE = ("sparse_coo", "sparse_csr")


def require_sparse(op, arg, t):
    """Raise TypeError unless ``t`` is a sparse tensor (a sparse-only op's argument)."""
    if t.layout not in SPARSE:
        raise TypeError(f"{op}: {arg} must be a sparse COO or CSR tensor, got a {t.layout} "
                        f"tensor of shape {list(t.shape)}; convert it with to_sparse_coo() "
                        "or to_sparse_csr() first")


def mask_as_infer_meta(x, mask):
    """mask's pattern and layout with x's value dtype; x dense, of mask's shape."""
    if x.layout != "dense":
        raise TypeError(f"mask_as: x must be a dense tensor, got a {x.layout} tensor; "
                        "convert it with to_dense() first")
    require_sparse("mask_as", "mask", mask)
    if tuple(x.shape) != tuple(mask.shape):
        raise ValueError(f"mask_as: x has shape {list(x.shape)} but mask has shape "
                         f"{list(mask.shape)}; expected equal shapes")
    return mask.with_(dtype=x.dtype)


def values_infer_meta(x):
    """The stored values [nnz, *dense_dims] of sparse x as a dense tensor (nnz unknown: -1)."""
    require_sparse("values", "x", x)
    dense_dims = tuple(x.shape[x.sparse_dim:]) if x.layout == "sparse_coo" else ()
    return x.with_(shape=(-1,) + dense_dims, layout="dense", sparse_dim=None)


def with_values_infer_meta(x, values):
    """x's pattern and layout with ``values``' dtype; values is [nnz, *x's dense dims]."""
    require_sparse("with_values", "x", x)
    if values.layout != "dense":
        raise TypeError(f"with_values: values must be a dense tensor, got {values.layout}")
    dense_dims = tuple(x.shape[x.sparse_dim:]) if x.layout == "sparse_coo" else ()
    if tuple(values.shape[1:]) != dense_dims or values.ndim != 1 + len(dense_dims):
        raise ValueError(f"with_values: values has shape {list(values.shape)}; expected "
                         f"[nnz, {', '.join(map(str, dense_dims))}] for x of shape "
                         f"{list(x.shape)}".replace(", ]", "]"))
    return x.with_(dtype=values.dtype)


def sparse_unary_infer_meta(op, x, *params):
    """A value-wise op: x's pattern and layout, the dtype the family's op gives x's values."""
    from ..funcs.elementwise import UNARY, result_dtype
    require_sparse(op, "x", x)
    return x.with_(dtype=result_dtype(op, UNARY[op], x.dtype, *params))


def sparse_cast_infer_meta(x, index_dtype=None, value_dtype=None):
    """x's pattern with ``value_dtype`` values; ``index_dtype`` must be an integer dtype
    whose range holds every dim (dense dims too: folding them into sparse dims, as a
    mixed transpose does, indexes them; a CSR's row pointers, up to nnz, are checked by
    the kernel, which knows nnz)."""
    import numpy as np
    require_sparse("cast", "x", x)
    if index_dtype is not None:
        if index_dtype.kind not in "iu":
            raise TypeError(f"cast: index_dtype must be an integer dtype, got {index_dtype}")
        big = max(x.shape, default=0)
        if big - 1 > np.iinfo(index_dtype).max:
            raise ValueError(f"cast: index_dtype {index_dtype} cannot hold the indices of "
                             f"shape {list(x.shape)}")
    return x if value_dtype is None else x.with_(dtype=value_dtype)
