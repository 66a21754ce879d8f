"""Dense repeat (tile): two forward kernels; the backward is an ``invoke``.

``repeat`` is reshape -> expand -> reshape, as in OneFlow's expand/repeat
article: one broadcast copy into the output.  ``repeat_direct`` copies x into
the first tile and then doubles the filled part along each dim.  Both are checked against np.tile;
the faster in one-process interleaved timings is the default ``repeat``.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..funcs import pool
from ..funcs.broadcast import copy_into, expand_copy, repeat_as_expand
from ..gpu import repeat as cuda
from ..gpu.backend import device
from ..infermeta.expand import resolve_repeat


@register_kernel("repeat", dtypes=ALL)
def repeat(x, repeats):
    """x tiled ``repeats`` times per dim: reshape, expand, reshape."""
    in_r, exp, out_r = repeat_as_expand(x.shape, repeats)
    return expand_copy(x.reshape(in_r), exp).reshape(out_r)


@register_kernel("repeat", backends=("gpu",), dtypes=ALL)
def repeat_gpu(x, repeats):
    """x tiled ``repeats`` times per dim by ``repeat.cu``."""
    return cuda.repeat(device(), x, repeats)


def repeat_direct(x, repeats):
    """x tiled ``repeats`` times per dim by filling one tile and doubling it.

    The output is viewed as ``[r_0, s_0, r_1, s_1, ...]`` (new dims have
    ``s = 1``); x goes to count index 0 everywhere, then, innermost dim
    first, each count axis is filled by copying its filled prefix forward.
    """
    out_shape = resolve_repeat(x.shape, repeats)
    sizes = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    split = [n for pair in zip(repeats, sizes) for n in pair]
    out = pool.new_array(x, split)
    if out.size:
        first = tuple(k for _ in sizes for k in (0, slice(None)))
        copy_into(out[first], x.reshape(sizes))
        for d in reversed(range(len(sizes))):
            _double(out, d, repeats[d])
    return out.reshape(out_shape)


def _double(out, d, count):
    """Fill count axis ``2d`` of ``out`` from its first entry, doubling each step."""
    head = tuple(k for _ in range(d) for k in (slice(0, 1), slice(None)))
    filled = 1
    while filled < count:
        n = min(filled, count - filled)
        copy_into(out[head + (slice(filled, filled + n),)], out[head + (slice(0, n),)])
        filled += n

