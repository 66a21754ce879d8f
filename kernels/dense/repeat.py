"""Dense repeat (tile): forward kernels ('cpu' and 'gpu') and the backward.

Repeat is reshape -> expand -> reshape, as in OneFlow's expand/repeat article
(:func:`kernels.funcs.broadcast.repeat_as_expand`), run inside one kernel: x
viewed as ``input_reshape`` is expanded to ``expand_size`` by expand's
stride-0 copy (:func:`kernels.funcs.broadcast.expand_copy` on the CPU,
``expand.cu`` on a GPU) and the result viewed as the output.  The gradient
is expand's on the same view (:func:`sum_to_shape`), as tinygrad gets it by
composing the three ops, but in one dispatch: a tiny repeat costs one op
call, not three (see the README's speed section).
"""
import functools

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..funcs.broadcast import expand_copy, expand_output_stride, repeat_as_expand
from ..funcs.sum_to_shape import sum_to_shape
from ..gpu.backend import device
from ..gpu.expand import expand as cuda_expand


#: :func:`repeat_as_expand` remembered per (shape, repeats): a pure function of them.
_plan = functools.lru_cache(maxsize=256)(repeat_as_expand)


@register_kernel("repeat", dtypes=ALL)
def repeat(x, repeats):
    """x tiled ``repeats`` times per dim: reshape, expand, reshape."""
    in_r, exp, out_r = _plan(x.shape, tuple(repeats))
    return expand_copy(x.reshape(in_r), exp, out_r)


@register_kernel("repeat", backends=("gpu",), dtypes=ALL)
def repeat_gpu(x, repeats):
    """x tiled ``repeats`` times per dim: reshape, ``expand.cu``, reshape."""
    in_r, exp, out_r = _plan(x.shape, tuple(repeats))
    strides = expand_output_stride(in_r, exp)
    return cuda_expand(device(), x.reshape(in_r), exp, strides).reshape(out_r)


@register_kernel("repeat_grad", backends=("cpu", "gpu"), dtypes=ALL)
def repeat_grad(x, out_grad, repeats):
    """out_grad viewed as the expand's output, summed back to x's view; ``x`` is
    metadata only (no_need_buffer)."""
    in_r, exp, _ = _plan(tuple(x.shape), tuple(repeats))
    return sum_to_shape(out_grad.reshape(exp), in_r).reshape(x.shape)
