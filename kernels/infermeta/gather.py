"""Shape rules of gather (tf.gather with batch_dims) and batch_gather (OneFlow)."""
from ..core.dtypes import INDEX
from ..core.meta import Canonical
from ..funcs.gather_view import gather_view, resolve_gather_axes
from ..core.size import check_output_size


def check_index_dtype(index, op):
    """Raise TypeError unless ``index`` (a MetaTensor or array) is int32 or int64."""
    if index.dtype not in INDEX:
        raise TypeError(f"{op}: index dtype {index.dtype.name} is not supported; expected "
                        f"int32 or int64")


def gather_infer_meta(x, index, axis=None, batch_dims=0):
    """Output meta of gather: ``x.shape[:axis] + index.shape[batch_dims:] + x.shape[axis+1:]``,
    and ``axis`` and ``batch_dims`` normalised (non-negative, ``axis`` resolved
    from None) as the kernel's and the SBP rules' canonical attributes.

    Checks run in the order axis/batch_dims, index dtype, batch prefixes.
    """
    ax, bd = resolve_gather_axes(x.ndim, index.ndim, axis, batch_dims, "gather")
    check_index_dtype(index, "gather")
    out = x.with_(shape=gather_view(x.shape, index.shape, ax, bd).out_shape)
    return Canonical(check_output_size("gather", out), {"axis": ax, "batch_dims": bd})


def batch_gather_infer_meta(x, index):
    """Output meta of batch_gather: gather on axis ``index.ndim - 1`` with as many batch dims.

    Checks run in the contract's order (API.md): ranks and shapes, then the index
    dtype (then, in the kernel, the index values).
    """
    if x.ndim == 0:
        raise ValueError("batch_gather: x is 0-d; expected a tensor of rank >= 1")
    if index.ndim == 0:
        raise ValueError("batch_gather: index is 0-d; expected a tensor of rank >= 1 "
                         "whose last dim holds the indices of each batch")
    if index.ndim > x.ndim:
        raise ValueError(f"batch_gather: index has rank {index.ndim} (shape "
                         f"{list(index.shape)}), more than x's rank {x.ndim} (shape "
                         f"{list(x.shape)}); expected index rank <= x rank")
    bd = index.ndim - 1
    out = x.with_(shape=gather_view(x.shape, index.shape, bd, bd, "batch_gather").out_shape)
    check_index_dtype(index, "batch_gather")
    return check_output_size("batch_gather", out)


def gather_sbp_physical(s):
    """SBP kernel attributes of a gather shard: the ``offset`` of x's slice of
    the gathered axis (0 unless x is split on it) and the axis' logical length
    ``bound`` (OneFlow's gather-primitive article: a split gathered axis gives
    partial sums, each rank zero-filling the rows it does not hold).

    ``s`` is a :class:`kernels.core.dist.rules.Shards`; its ``axis`` is
    canonical (see :func:`gather_infer_meta`).
    """
    return _split_gather(s, s.axis)


def batch_gather_sbp_physical(s):
    """:func:`gather_sbp_physical` of batch_gather (axis ``index.ndim - 1``)."""
    return _split_gather(s, s.index.ndim - 1)


def _split_gather(s, ax):
    return {"offset": s.x_slice[0] if s.x_axis == ax else 0, "bound": s.x.shape[ax]}
