"""Broadcast index math from OneFlow's expand/repeat article: expand's
output_stride, repeat as reshape + expand + reshape, and the copy that
writes a broadcast view into a fresh contiguous array."""
import numpy as np

from ..core.xp import xp_of
from . import pool
from .shape import c_strides, prod
from .threads import run_parallel, split_index


def expand_output_stride(in_shape, out_shape, in_stride=None):
    """``output_stride`` (OneFlow's expand/repeat article): where each output dim steps in x.

    Output element ``(i_0, ..., i_n)`` reads input element
    ``sum(i_d * output_stride[d])``: a dim kept from x keeps x's stride, a
    grown size-1 dim and a new leading dim get stride 0.

    Parameters
    ----------
    in_shape : sequence of int
    out_shape : sequence of int
        A valid expanded shape (see :func:`kernels.infermeta.expand.resolve_expand`).
    in_stride : sequence of int, optional
        x's strides in any unit (elements or bytes); default C-contiguous
        element strides.

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> expand_output_stride((4, 1, 3, 5), (2, 1, 4, 4, 3, 5))
    (0, 0, 15, 0, 5, 1)
    """
    in_stride = c_strides(in_shape) if in_stride is None else tuple(in_stride)
    new = len(out_shape) - len(in_shape)
    return tuple(0 if d < new or in_shape[d - new] != out_shape[d]
                 else in_stride[d - new] for d in range(len(out_shape)))


def repeat_as_expand(in_shape, repeats):
    """Repeat as reshape -> expand -> reshape, as in OneFlow's expand/repeat article.

    Dim ``i`` of x with count ``r`` becomes ``[s]`` when r is 1, ``[r]``
    (expanding x's size-1 dim) when s is 1, else ``[r, s]`` expanded from
    ``[1, s]``; new dims become ``[r]``.  A count of 0 is a count like any
    other but 1, and a size of 0 like any other but 1, so 0-size inputs and
    outputs take the same path.

    Parameters
    ----------
    in_shape : sequence of int
    repeats : sequence of int
        Counts >= 0, at least one per dim of x.

    Returns
    -------
    (tuple, tuple, tuple)
        ``input_reshape``, ``expand_size``, ``output_reshape``.

    Examples
    --------
    >>> repeat_as_expand((3, 1, 5), (2, 5, 3, 1))
    ((1, 3, 1, 5), (2, 5, 3, 3, 5), (2, 15, 3, 5))
    >>> repeat_as_expand((3,), (0,))
    ((1, 3), (0, 3), (0,))
    """
    new = len(repeats) - len(in_shape)
    in_r, exp, out_r = [], list(repeats[:new]), list(repeats[:new])
    for r, s in zip(repeats[new:], in_shape):
        if r == 1 or s == 1:
            in_r.append(s)
            exp.append(r * s)
        else:
            in_r += [1, s]
            exp += [r, s]
        out_r.append(r * s)
    return tuple(in_r), tuple(exp), tuple(out_r)


def coalesce_dims(shape, *strides):
    """Drop size-1 dims and merge neighbours that every stride list steps through evenly.

    Returns ``(shape, [strides...])`` addressing the same elements with
    fewer dims (at least one).

    Examples
    --------
    >>> coalesce_dims((4096, 1, 64, 1024), (4096, 4096, 0, 1), (262144, 262144, 1024, 1))
    ((4096, 64, 1024), [(4096, 0, 1), (262144, 1024, 1)])
    """
    dims = [(n, [st[d] for st in strides]) for d, n in enumerate(shape) if n != 1]
    merged = [dims[0]] if dims else [(1, [0] * len(strides))]
    for n, st in dims[1:]:
        m, outer = merged[-1]
        if all(o == s * n for o, s in zip(outer, st)):
            merged[-1] = (m * n, st)
        else:
            merged.append((n, st))
    return (tuple(n for n, _ in merged),
            [tuple(st[k] for _, st in merged) for k in range(len(strides))])


def copy_into(out, src):
    """``out[...] = src`` for a ``src`` of out's shape with any strides (0 included).

    On numpy the dims are coalesced, a run contiguous in both arrays is
    copied as one wide element (:func:`as_words`; numpy's per-run loop
    overhead otherwise dominates short runs), and the copy is split over
    threads (see :mod:`kernels.funcs.threads`).
    """
    xp = xp_of(out)
    if xp is not np or out.size == 0:
        xp.copyto(out, src)
        return
    shape, (o_st, s_st) = coalesce_dims(out.shape, out.strides, src.strides)
    o = np.lib.stride_tricks.as_strided(out, shape, o_st)
    s = np.lib.stride_tricks.as_strided(src, shape, s_st, writeable=False)
    if _contiguous_run(o) and _contiguous_run(s):
        o, s = as_words(o), as_words(s)
    run_parallel(lambda part: np.copyto(o[part], s[part]), split_index(o.shape, out.nbytes))


_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}


def _contiguous_run(a):
    return a.ndim >= 2 and a.shape[-1] >= 2 and a.strides[-1] == a.itemsize


def as_words(a):
    """``a`` with its contiguous last dim viewed as one raw element (a word of its bytes).

    Examples
    --------
    >>> a = np.zeros((5, 3), np.float32)
    >>> as_words(a).shape, as_words(a).dtype.itemsize
    ((5,), 12)
    """
    nbytes = a.shape[-1] * a.itemsize
    return a.view(_WORDS.get(nbytes, np.dtype(("V", nbytes))))[..., 0]


#: Host outputs up to this size are written by one broadcasting assignment:
#: below it the set-up of the coalesced, word-wide, threaded copy costs more.
SMALL_COPY_BYTES = 1 << 16


def expand_copy(x, out_shape, result_shape=None):
    """A new C-contiguous array of ``out_shape`` holding x expanded, returned with
    ``result_shape`` if given (repeat's final reshape, made here for free).

    Output element ``i`` is x's element at ``sum(i_d * output_stride[d])``
    (:func:`expand_output_stride` over x's byte strides), so the result never
    shares memory with x.  ``out_shape`` must be a valid expand of x's shape
    with -1 resolved (:func:`kernels.infermeta.expand.resolve_expand`).
    """
    nbytes = prod(out_shape) * x.itemsize
    if type(x) is np.ndarray and nbytes < SMALL_COPY_BYTES and nbytes < pool.MIN_BYTES:
        if result_shape is None:
            out = np.empty(out_shape, x.dtype)
            out[...] = x        # numpy's broadcasting is expand's rule; np.copyto's Python
            return out          # dispatcher would double a tiny call's copy cost
        out = np.empty(result_shape, x.dtype)
        out.reshape(out_shape)[...] = x
        return out
    xp = xp_of(x)
    out = pool.new_array(x, tuple(out_shape))
    if out.size:
        stride = expand_output_stride(x.shape, out.shape, x.strides)
        copy_into(out, xp.lib.stride_tricks.as_strided(x, out.shape, stride))
    return out if result_shape is None else out.reshape(result_shape)
