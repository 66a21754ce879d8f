"""Dense gather and batch_gather (tf.gather with ``batch_dims``; OneFlow's batch_gather).

One kernel signature on every backend::

    gather(x, index, axis=None, batch_dims=0, offset=0, bound=None)
    gather_grad(x, index, out_grad, axis=None, batch_dims=0, offset=0, bound=None)

and the same for batch_gather without ``axis`` and ``batch_dims``.  Both fold
the call into the ``[batch, outer, size, inner]`` view of OneFlow's
gather-primitive article (:func:`kernels.funcs.gather_view.gather_view`, the
one shape validator) and check the index once
(:func:`kernels.funcs.gather_view.checked_index`).  ``offset`` and ``bound``
are the article's split mode: x may hold only the slice ``[offset, offset +
x.shape[axis])`` of a gathered axis of logical length ``bound`` (a global
tensor split on that axis); indices are checked against ``bound``, and one
outside the slice gives a zero row (forward) or contributes nothing
(gradient), so the shards' results sum to the full gather.

The CPU moves whole rows in threaded blocks (:mod:`kernels.funcs.row_blocks`);
a small unbatched, unsplit gather is one ``ndarray.take`` instead.  It
scatter-adds the gradient (:mod:`kernels.funcs.scatter_add`); the GPU
runs ``gather.cu`` (:mod:`kernels.gpu.gather`), its gradient with atomics.
"""
import numpy as np

from ..core.dtypes import ALL, COMPLEX, FLOATS
from ..core.registry import register_kernel
from ..funcs.gather_view import checked_index, gather_view
from ..funcs.row_blocks import take_rows
from ..funcs.scatter_add import scatter_add_rows
from ..gpu import gather as cuda
from ..gpu.backend import device

GRAD_DTYPES = FLOATS + COMPLEX
#: CPU outputs up to this many bytes are one ``ndarray.take`` after the bounds
#: check: below it the row-block set-up (view, row map, block list, threads)
#: costs more than the copy (see the README's per-call table).
SMALL_BYTES = 1 << 16


def _prepare(x_shape, index, axis, batch_dims, offset, bound, op):
    """``(view, index, split)``: the checked view, the index wrapped into
    ``[0, bound)``, and whether x holds only part of the gathered axis."""
    view = gather_view(x_shape, index.shape, axis, batch_dims, op)
    bound = view.size if bound is None else int(bound)
    return view, checked_index(index, bound, view.axis, op), offset != 0 or bound != view.size


def _local(view, index, offset):
    """The index as ``[batch, per_batch]`` int64 positions in x's slice."""
    local = index.astype(np.int64, copy=False).reshape(view.index_dims)
    return local - offset if offset else local


def _forward_cpu(x, index, axis, batch_dims, offset, bound, op):
    """A small plain call (no batch dims, x whole and not empty, at most
    :data:`SMALL_BYTES` out, ``axis`` the infer-meta's non-negative int) is one
    ``ndarray.take``; the rest take whole rows in threaded blocks.  (numpy's take
    checks no bound when the dims before ``axis`` hold no element, so an empty x
    goes through :func:`_prepare`.)"""
    if not (batch_dims or offset) and bound is None and type(axis) is int \
            and 0 <= axis < x.ndim and x.size \
            and index.size * (x.size // x.shape[axis]) * x.itemsize <= SMALL_BYTES:
        try:          # numpy's take checks the bounds as checked_index does, negatives wrapped
            return x.take(index, axis=axis)
        except IndexError:
            checked_index(index, x.shape[axis], axis, op)      # raises, naming the op
            raise
    view, index, split = _prepare(x.shape, index, axis, batch_dims, offset, bound, op)
    return take_rows(x, view, _local(view, index, offset), split)


def _forward_gpu(x, index, axis, batch_dims, offset, bound, op):
    view, index, _ = _prepare(x.shape, index, axis, batch_dims, offset, bound, op)
    return cuda.gather(device(), x, index, view, offset)


def _grad_view(x, index, out_grad, axis, batch_dims, offset, bound, op):
    view, index, split = _prepare(x.shape, index, axis, batch_dims, offset, bound, op)
    if tuple(out_grad.shape) != view.out_shape:
        raise ValueError(f"{op}: out_grad shape {list(out_grad.shape)} is not the "
                         f"gather's output shape {list(view.out_shape)}")
    return view, index, split


def _backward_cpu(x, index, out_grad, axis, batch_dims, offset, bound, op):
    view, index, split = _grad_view(x, index, out_grad, axis, batch_dims, offset, bound, op)
    return scatter_add_rows(view, _local(view, index, offset), out_grad, tuple(x.shape), split)


def _backward_gpu(x, index, out_grad, axis, batch_dims, offset, bound, op):
    view, index, _ = _grad_view(x, index, out_grad, axis, batch_dims, offset, bound, op)
    return cuda.gather_grad(device(), out_grad, index, view, x.shape, offset)


# ---------------------------------------------------------------- gather
@register_kernel("gather", dtypes=ALL)
def gather(x, index, axis=None, batch_dims=0, offset=0, bound=None):
    """tf.gather with ``batch_dims`` on the CPU: ``np.take`` of whole rows."""
    return _forward_cpu(x, index, axis, batch_dims, offset, bound, "gather")


@register_kernel("gather", backends=("gpu",), dtypes=ALL)
def gather_gpu(x, index, axis=None, batch_dims=0, offset=0, bound=None):
    """tf.gather with ``batch_dims`` by ``gather.cu``; bad indices raise before the launch."""
    return _forward_gpu(x, index, axis, batch_dims, offset, bound, "gather")


@register_kernel("gather_grad", dtypes=GRAD_DTYPES)
def gather_grad(x, index, out_grad, axis=None, batch_dims=0, offset=0, bound=None):
    """Scatter-add of ``out_grad``; ``x`` is metadata only (no_need_buffer)."""
    return _backward_cpu(x, index, out_grad, axis, batch_dims, offset, bound, "gather_grad")


@register_kernel("gather_grad", backends=("gpu",), dtypes=GRAD_DTYPES)
def gather_grad_gpu(x, index, out_grad, axis=None, batch_dims=0, offset=0, bound=None):
    """Scatter-add of ``out_grad`` with atomics; ``x`` is metadata only."""
    return _backward_gpu(x, index, out_grad, axis, batch_dims, offset, bound, "gather_grad")


# ---------------------------------------------------------------- batch_gather
@register_kernel("batch_gather", dtypes=ALL)
def batch_gather(x, index, offset=0, bound=None):
    """OneFlow batch_gather: gather on axis ``index.ndim - 1`` with as many batch dims."""
    bd = index.ndim - 1
    return _forward_cpu(x, index, bd, bd, offset, bound, "batch_gather")


@register_kernel("batch_gather", backends=("gpu",), dtypes=ALL)
def batch_gather_gpu(x, index, offset=0, bound=None):
    """OneFlow batch_gather by ``gather.cu``."""
    bd = index.ndim - 1
    return _forward_gpu(x, index, bd, bd, offset, bound, "batch_gather")


@register_kernel("batch_gather_grad", dtypes=GRAD_DTYPES)
def batch_gather_grad(x, index, out_grad, offset=0, bound=None):
    """Scatter-add of ``out_grad``; ``x`` is metadata only (no_need_buffer)."""
    bd = index.ndim - 1
    return _backward_cpu(x, index, out_grad, bd, bd, offset, bound, "batch_gather_grad")


@register_kernel("batch_gather_grad", backends=("gpu",), dtypes=GRAD_DTYPES)
def batch_gather_grad_gpu(x, index, out_grad, offset=0, bound=None):
    """Scatter-add of ``out_grad`` with atomics; ``x`` is metadata only."""
    bd = index.ndim - 1
    return _backward_gpu(x, index, out_grad, bd, bd, offset, bound, "batch_gather_grad")
