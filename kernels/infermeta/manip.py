"""Shape rules of the dense shape ops: transpose, squeeze, unsqueeze, flatten, concat, stack."""
import functools

import numpy as np

from ..core.meta import Canonical
from ..core.size import MAX_DIMS
from ..funcs.shape import normalize_axis, prod


def resolve_perm(perm, ndim, op="transpose"):
    """``perm`` with negative entries resolved; ValueError unless a permutation of range(ndim)."""
    if len(perm) != ndim:
        raise ValueError(f"{op}: perm {list(perm)} has {len(perm)} entries; the tensor has "
                         f"rank {ndim}")
    norm = tuple(normalize_axis(p, ndim, op, "perm") for p in perm)
    if sorted(norm) != list(range(ndim)):
        raise ValueError(f"{op}: perm {list(perm)} is not a permutation of the axes "
                         f"0..{ndim - 1}")
    return norm


def inverse_perm(perm, ndim):
    """The permutation that undoes ``perm`` (transpose's backward)."""
    inv = [0] * ndim
    for i, p in enumerate(resolve_perm(perm, ndim)):
        inv[p] = i
    return inv


def transpose_axis(perm, ndim, i):
    """Where axis ``i`` of the input goes: ``perm^-1(i)`` (transpose's SBP rule)."""
    return inverse_perm(perm, ndim)[i]


def transpose_infer_meta(x, perm):
    """x's shape permuted; the kernel gets ``perm`` resolved (negative entries counted)."""
    perm = resolve_perm(perm, x.ndim)
    return Canonical(x.with_(shape=tuple(x.shape[p] for p in perm)), {"perm": perm})


@functools.lru_cache(maxsize=1024)
def squeeze_shape(shape, axis=None, op="squeeze"):
    """Paddle's squeeze: drop the size-1 dims among ``axis`` (all when None); others stay."""
    gone = squeezed_axes(shape, axis, op)
    return tuple(s for i, s in enumerate(shape) if i not in gone)


def squeezed_axes(shape, axis=None, op="squeeze"):
    """The axes squeeze drops: the size-1 dims among ``axis`` (all when None or empty).

    A 0-d tensor takes axis 0 or -1 and drops nothing, as numpy's and Paddle's squeeze."""
    if not shape and axis is not None:
        axis = [a for a in axis if a not in (0, -1)]
    axes = range(len(shape)) if axis is None or len(axis) == 0 else \
        {normalize_axis(a, len(shape), op) for a in axis}
    return tuple(i for i in sorted(axes) if shape[i] == 1)


def squeeze_sbp_physical(s):
    """SBP physical attributes of squeeze: the axes the logical shape drops, so a
    shard of extent 1 along a split axis keeps it (``s`` is a
    :class:`kernels.core.dist.rules.Shards`).  Where it drops none (then the shards
    are whole copies), an axis of another size, since an empty axis drops them all."""
    gone = squeezed_axes(s.x.shape, s.axis)
    if gone or not s.x.shape:
        return {"axis": gone}
    return {"axis": (next((i for i, n in enumerate(s.x.shape) if n != 1), 0),)}


def unsqueeze_axis(ndim, axis, i):
    """The output axis of input axis ``i`` after unsqueeze (from the inserted
    positions, not the sizes, which a zero-size shape leaves ambiguous)."""
    out = list(range(ndim))
    for a in axis:
        out.insert(normalize_axis(a, len(out) + 1, "unsqueeze"), None)
    return out.index(i)


@functools.lru_cache(maxsize=1024)
def unsqueeze_shape(shape, axis, op="unsqueeze"):
    """Paddle's unsqueeze: insert a size-1 dim at each of ``axis`` in turn."""
    if len(shape) + len(axis) > MAX_DIMS:      # before the inserts, each a list shift
        raise ValueError(f"{op}: the output would have {len(shape) + len(axis)} dims; a "
                         f"tensor has at most {MAX_DIMS} (numpy's limit)")
    out = list(shape)
    for a in axis:
        n = len(out) + 1
        if not -n <= a < n:
            raise ValueError(f"{op}: axis {a} is out of range for inserting a dim into a "
                             f"tensor of rank {n - 1}; expected a value in [{-n}, {n})")
        out.insert(a % n, 1)
    return tuple(out)


def flatten_shape(shape, start_axis=0, stop_axis=-1, op="flatten"):
    """Paddle's flatten: dims start_axis..stop_axis become one; a 0-d tensor becomes [1]."""
    if len(shape) == 0:
        if start_axis not in (0, -1) or stop_axis not in (0, -1):
            raise ValueError(f"{op}: start_axis {start_axis} and stop_axis {stop_axis} must "
                             "be 0 or -1 for a 0-d tensor")
        return (1,)
    lo = normalize_axis(start_axis, len(shape), op, "start_axis")
    hi = normalize_axis(stop_axis, len(shape), op, "stop_axis")
    if lo > hi:
        raise ValueError(f"{op}: start_axis {start_axis} comes after stop_axis {stop_axis}")
    return tuple(shape[:lo]) + (prod(shape[lo:hi + 1]),) + tuple(shape[hi + 1:])


def flatten_axis(shape, start_axis, stop_axis, i):
    """The output axis of input axis ``i`` after flatten, else -1 (from the axes'
    positions, not the sizes, which a zero-size shape leaves ambiguous).

    Axes before ``start_axis`` keep their place and those after ``stop_axis``
    move down by the merged span; an axis inside it maps to the merged axis
    only when the other merged dims hold one element each, so that its
    ``array_split`` shards are the merged axis's.
    """
    lo = normalize_axis(start_axis, len(shape), "flatten", "start_axis")
    hi = normalize_axis(stop_axis, len(shape), "flatten", "stop_axis")
    if i < lo or i > hi:
        return i if i < lo else i - (hi - lo)
    return lo if prod(shape[lo:i] + shape[i + 1:hi + 1]) == 1 else -1


def squeeze_infer_meta(x, axis=None):
    return x.with_(shape=squeeze_shape(x.shape, axis))


def unsqueeze_infer_meta(x, axis):
    return x.with_(shape=unsqueeze_shape(x.shape, axis))


def flatten_infer_meta(x, start_axis=0, stop_axis=-1):
    return x.with_(shape=flatten_shape(x.shape, start_axis, stop_axis))


def _list_dtype(xs, op):
    try:
        return np.result_type(*[x.dtype for x in xs])
    except TypeError:
        raise TypeError(f"{op}: dtypes {[x.dtype.name for x in xs]} have no common "
                        "dtype") from None


def concat_infer_meta(xs, axis=0):
    """numpy.concatenate: equal shapes but along ``axis``; numpy's common dtype."""
    first = xs[0]
    if first.ndim == 0:
        raise ValueError("concat: 0-d tensors cannot be concatenated; use stack")
    ax = normalize_axis(axis, first.ndim, "concat")
    for k, x in enumerate(xs):
        if x.ndim != first.ndim or any(a != b for d, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if d != ax):
            raise ValueError(f"concat: tensor {k} has shape {list(x.shape)}; expected "
                             f"{list(first.shape)} except along axis {ax}")
    shape = list(first.shape)
    shape[ax] = sum(x.shape[ax] for x in xs)
    return first.with_(shape=tuple(shape), dtype=_list_dtype(xs, "concat"))


def stack_infer_meta(xs, axis=0):
    """numpy.stack: equal shapes, a new axis at ``axis``; numpy's common dtype."""
    first = xs[0]
    for k, x in enumerate(xs):
        if tuple(x.shape) != tuple(first.shape):
            raise ValueError(f"stack: tensor {k} has shape {list(x.shape)}; expected "
                             f"{list(first.shape)} like tensor 0")
    ax = normalize_axis(axis, first.ndim + 1, "stack")
    shape = first.shape[:ax] + (len(xs),) + first.shape[ax:]
    return first.with_(shape=shape, dtype=_list_dtype(xs, "stack"))


def list_grad_infer_meta(xs):
    """The gradients of a Tensor[] input: one per element, with its metadata."""
    return list(xs)
