"""Dense kernels registered under backend 'gpu': the ``.cu`` kernels through their launchers.

Each kernel runs its launcher (:mod:`kernels.gpu.launch`) on the process's
:func:`kernels.gpu.backend.device`, created on the first launch, so importing
this module never needs a GPU.  The kernel modules of these ops import it at
their bottom, so the 'gpu' entries exist whenever the op's ``module`` is
loaded.

==================  ==============================================
op kernel           'gpu' implementation
==================  ==============================================
expand              ``expand.cu`` (stride-0 map)
expand_grad         xp-generic ``sum_to_shape`` (a cupy reduction)
repeat              ``repeat.cu`` (direct)
repeat_grad         invoke of reshape + sum (xp-generic)
gather              ``gather.cu`` after the min/max bounds pre-pass
batch_gather        ``gather.cu``, batch_dims = axis = index.ndim - 1
gather_grad         ``gather.cu`` scatter-add with atomicAdd
batch_gather_grad   ``gather.cu`` scatter-add with atomicAdd
==================  ==============================================

Gradients take float16/32/64 and complex64/128; see
:func:`kernels.gpu.launch.gather_grad` for the atomic policy.
"""
from kernels.core.dtypes import ALL, COMPLEX, FLOATS
from kernels.core.registry import register_kernel
from kernels.gpu import launch
from kernels.gpu.backend import device
from kernels.infermeta.expand import resolve_expand

GRAD_DTYPES = FLOATS + COMPLEX


@register_kernel("expand", backends=("gpu",), dtypes=ALL)
def expand(x, shape):
    """x broadcast to ``shape`` (-1 keeps a dim) by ``expand.cu``."""
    return launch.expand(device(), x, resolve_expand(x.shape, shape))


@register_kernel("repeat", backends=("gpu",), dtypes=ALL)
def repeat(x, repeats):
    """x tiled ``repeats`` times per dim by ``repeat.cu``."""
    return launch.repeat(device(), x, repeats)


@register_kernel("gather", backends=("gpu",), dtypes=ALL)
def gather(x, index, axis=None, batch_dims=0):
    """tf.gather with ``batch_dims`` by ``gather.cu``; bad indices raise first."""
    return launch.gather(device(), x, index, axis, batch_dims)


@register_kernel("gather_grad", backends=("gpu",), dtypes=GRAD_DTYPES)
def gather_grad(x, index, out_grad, axis=None, batch_dims=0):
    """Scatter-add of ``out_grad`` with atomics; ``x`` is metadata only."""
    return launch.gather_grad(device(), out_grad, index, x.shape, axis, batch_dims)


@register_kernel("batch_gather", backends=("gpu",), dtypes=ALL)
def batch_gather(x, index):
    """OneFlow batch_gather: gather on axis ``index.ndim - 1`` with as many batch dims."""
    bd = index.ndim - 1
    return launch.gather(device(), x, index, bd, bd, op="batch_gather")


@register_kernel("batch_gather_grad", backends=("gpu",), dtypes=GRAD_DTYPES)
def batch_gather_grad(x, index, out_grad):
    """Scatter-add of ``out_grad`` with atomics; ``x`` is metadata only."""
    bd = index.ndim - 1
    return launch.gather_grad(device(), out_grad, index, x.shape, bd, bd,
                              op="batch_gather_grad")
