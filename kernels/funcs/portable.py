"""The array-API-portable paths: expand, repeat, the gather forward and its bounds check.

These functions use only operations of the array API standard (``reshape``,
``broadcast_to``, ``asarray(copy=True)``, ``take``, ``where``, ``min``/``max``,
``argmax``, ``astype``, ``arange``), so one body runs on numpy, cupy and any
conforming namespace; ``tests/test_array_api.py`` runs them under
array-api-strict against numpy.  Restriding (:func:`kernels.funcs.restride.restride`)
is portable too and is tested the same way.  They compute the same index maps
as the fast kernels -- the numpy-tuned CPU kernels in ``kernels/dense`` and the
``.cu`` kernels in ``kernels/gpu`` -- and :func:`check_index` is the bounds
pre-pass the CUDA gather launchers run, so the GPU raises the CPU's IndexError.

Not portable, by declaration: scatter-add (gather's gradient, densifying
duplicate COO entries), bincount, sorting by numpy's ``argsort(kind=...)``
and coalesce's segmented sums.  The array API has no scatter-add
(``ufunc.at``/``index_add``), no bincount and no segmented reduction, so these
have a numpy implementation and a cupy one (the same xp code through cupy's
numpy-compatible API, or the ``.cu`` atomics of ``gather.cu``) instead.
"""
from .broadcast import repeat_as_expand
from .gather_view import OffsetHelper, gather_view
from .restride import namespace
from .shape import prod


def broadcast_copy(x, shape):
    """expand: ``x`` broadcast to the concrete ``shape`` as a new array.

    Examples
    --------
    >>> import numpy as np
    >>> broadcast_copy(np.array([[1], [2]]), (3, 2, 2)).tolist()[0]
    [[1, 1], [2, 2]]
    """
    xp = namespace(x)
    return xp.asarray(xp.broadcast_to(x, tuple(shape)), copy=True)


def tile(x, repeats):
    """repeat: reshape -> expand -> reshape (see :func:`repeat_as_expand`).

    Examples
    --------
    >>> import numpy as np
    >>> tile(np.array([1, 2]), (2, 2)).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    xp = namespace(x)
    in_r, exp, out_r = repeat_as_expand(tuple(x.shape), tuple(repeats))
    return xp.reshape(broadcast_copy(xp.reshape(x, in_r), exp), out_r)


def check_index(index, size, axis, op="gather"):
    """Bounds pre-pass of a gather: IndexError unless ``index`` lies in ``[-size, size)``.

    A min/max reduction decides; only on failure is the first bad position
    looked up, for the message (the CPU kernels' message, word for word).

    Returns
    -------
    int or None
        The smallest value (None for an empty index), so that a caller can
        skip wrapping negatives when it is >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> check_index(np.array([[0, 1], [5, 0]]), 3, axis=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IndexError: gather: index 5 at position (1, 0) is out of range for axis 1 of size 3; ...
    """
    if prod(index.shape) == 0:
        return None
    xp = namespace(index)
    low, high = int(xp.min(index)), int(xp.max(index))
    if low >= -size and high < size:
        return low
    flat = xp.reshape(index, (-1,))
    at = int(xp.argmax(xp.astype((flat < -size) | (flat >= size), xp.int8)))
    where = tuple(int(c) for c in OffsetHelper(*index.shape).to_nd(at))
    raise IndexError(f"{op}: index {int(flat[at])} at position {where} is out of range "
                     f"for axis {axis} of size {size}; expected values in [{-size}, {size})")


def gather(x, index, axis=None, batch_dims=0, op="gather"):
    """tf.gather with ``batch_dims`` as one ``take`` of rows of the
    [batch, outer, size, inner] view of OneFlow's gather-primitive article.

    x is viewed as rows ``[batch * outer * size, inner]``; output row
    ``(b, o, p)`` is x row ``(b * outer + o) * size + index[b, p]``, with
    negative indices wrapped after :func:`check_index`.

    Examples
    --------
    >>> import numpy as np
    >>> gather(np.arange(6).reshape(2, 3), np.array([2, -3]), axis=1).tolist()
    [[2, 0], [5, 3]]
    """
    view = gather_view(tuple(x.shape), tuple(index.shape), axis, batch_dims, op)
    xp = namespace(x)
    check_index(index, view.size, view.axis, op)
    idx = xp.astype(xp.reshape(index, (view.batch, 1, view.per_batch)), xp.int64)
    idx = xp.where(idx < 0, idx + view.size, idx)
    b = xp.reshape(xp.arange(view.batch, dtype=xp.int64), (-1, 1, 1))
    o = xp.reshape(xp.arange(view.outer, dtype=xp.int64), (1, -1, 1))
    rows = xp.reshape((b * view.outer + o) * view.size + idx, (-1,))
    x_rows = xp.reshape(x, (view.batch * view.outer * view.size, view.inner))
    return xp.reshape(xp.take(x_rows, rows, axis=0), view.out_shape)
