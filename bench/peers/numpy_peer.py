"""numpy (cupy on the gpu backend): broadcast_to().copy(), tile, take, take_along_axis, add.at.

Gradients are the closed forms, called directly: a sum over the broadcast
axes, a reshape-and-sum for tile and a scatter-add (``np.add.at``,
``cupyx.scatter_add`` on a GPU) for the gathers.
"""
import functools

import numpy as np

from ..measure import Case
from ..workloads import BINARY, REDUCE, UNARY
from ._dense_ops import CLIP, impls
from ._grad import split_axis, sum_to_shape, tile_grad

BACKENDS = ("cpu", "gpu")


def version():
    return np.__version__


def _add_at(xp):
    if xp is np:
        return np.add.at
    import cupyx
    return cupyx.scatter_add


def _batch_index(index, x_ndim):
    """``index`` with trailing 1-dims, to broadcast along x's inner dims."""
    return index.reshape(index.shape + (1,) * (x_ndim - index.ndim))


def reshape(inp, be):
    x, shape = be.asarray(inp["x"]), inp["new_shape"]
    return Case(lambda: x.reshape(shape))


def expand(inp, be):
    x, shape = be.asarray(inp["x"]), inp["new_shape"]
    return Case(lambda: be.xp.broadcast_to(x, shape).copy())


def expand_grad(inp, be):
    g, shape = be.asarray(inp["out_grad"]), inp["shape"]
    return Case(lambda: sum_to_shape(g, shape))


def repeat(inp, be):
    x, reps = be.asarray(inp["x"]), inp["repeats"]
    return Case(lambda: be.xp.tile(x, reps))


def repeat_grad(inp, be):
    g, shape, reps = be.asarray(inp["out_grad"]), inp["shape"], inp["repeats"]
    return Case(lambda: tile_grad(g, shape, reps))


def gather(inp, be):
    x, index, axis = be.asarray(inp["x"]), be.asarray(inp["index"]), inp["axis"]
    return Case(lambda: be.xp.take(x, index, axis=axis))


def gather_grad(inp, be):
    g, index, axis, shape = (be.asarray(inp["out_grad"]), be.asarray(inp["index"]),
                             inp["axis"], inp["shape"])
    add_at, xp = _add_at(be.xp), be.xp

    def run():
        out = xp.zeros(shape, g.dtype)
        add_at(out, (slice(None),) * axis + (index,), g)
        return out
    return Case(run)


def batch_gather(inp, be):
    x, index = be.asarray(inp["x"]), be.asarray(inp["index"])
    axis, idx = index.ndim - 1, _batch_index(index, x.ndim)
    return Case(lambda: be.xp.take_along_axis(x, idx, axis=axis))


def batch_gather_flat(inp, be):
    """batch_gather as one flat take: index + batch offset into x as [batch*n, inner]."""
    x, index = be.asarray(inp["x"]), be.asarray(inp["index"])
    batch, n, inner = split_axis(x.shape, index.ndim - 1)
    offset = (be.xp.arange(batch) * n).reshape(index.shape[:-1] + (1,))
    out_shape = index.shape + x.shape[index.ndim:]
    rows = x.reshape(batch * n, inner)
    return Case(lambda: be.xp.take(rows, (index + offset).ravel(), axis=0).reshape(out_shape))


def batch_gather_grad(inp, be):
    g, index, shape = be.asarray(inp["out_grad"]), be.asarray(inp["index"]), inp["shape"]
    add_at, xp = _add_at(be.xp), be.xp
    batch = tuple(xp.arange(n).reshape((-1,) + (1,) * (index.ndim - 1 - i))
                  for i, n in enumerate(index.shape[:-1]))

    def run():
        out = xp.zeros(shape, g.dtype)
        add_at(out, batch + (index,), g)
        return out
    return Case(run)


def matmul(inp, be):
    x, y = be.asarray(inp["x"]), be.asarray(inp["y"])
    return Case(lambda: be.xp.matmul(x, y))


def scale(inp, be):
    x = be.asarray(inp["x"])
    return Case(lambda: x * 2.0)


def _dense_ops():
    """IMPLS of issue 19's elementwise ops and reductions: what a numpy user writes
    (``1 / (1 + exp(-x))`` for sigmoid, ``maximum(x, 0)`` for relu).  Each entry takes
    the backend's array namespace (numpy, or cupy on a GPU) and returns the call."""
    unary = {op: _named(op) for op in UNARY if op not in ("sigmoid", "relu", "clip")}
    unary.update(sigmoid=lambda xp: lambda x: 1 / (1 + xp.exp(-x)),
                 relu=lambda xp: functools.partial(xp.maximum, 0),
                 clip=lambda xp: functools.partial(xp.clip, a_min=CLIP[0], a_max=CLIP[1]))
    reduce = {op: (lambda xp, op=op: lambda axis: functools.partial(getattr(xp, op), axis=axis))
              for op in REDUCE}
    return impls(lambda a, be: be.asarray(a), unary, {op: _named(op) for op in BINARY},
                 reduce, lambda xp: xp.where, lambda op: NP_NAMES.get(op, op),
                 bind=lambda entry, be: entry(be.xp))


#: numpy's name where it differs from the op's.
NP_NAMES = {"neg": "negative", "pow": "power"}


def _named(op):
    """A table entry: the namespace's function of the op's numpy name."""
    return lambda xp: getattr(xp, NP_NAMES.get(op, op))


IMPLS = {
    "reshape": {"reshape": reshape},
    "expand": {"broadcast_to().copy()": expand},
    "expand_grad": {"sum": expand_grad},
    "repeat": {"tile": repeat},
    "repeat_grad": {"reshape+sum": repeat_grad},
    "gather": {"take": gather},
    "gather_grad": {"add.at": gather_grad},
    "batch_gather": {"take_along_axis": batch_gather, "flat take": batch_gather_flat},
    "batch_gather_grad": {"add.at": batch_gather_grad},
    "matmul": {"matmul": matmul},
    "scale": {"x * 2.0": scale},
}
IMPLS.update(_dense_ops())
