"""Launchers for the ``.cu`` kernels, written once for every backend.

Each launcher takes an execution backend first (see
:mod:`kernels.gpu.backend`): ``CupyBackend`` on a GPU, or the tests' CPU
emulator of the same ``.cu`` source. Arrays are the backend's ``xp``
arrays. ``grid`` and ``block`` force the launch geometry (default: block
256, one thread per item up to 65535 blocks); the kernels loop grid-stride,
so any geometry gives the same result. Nothing is launched for 0 items.

Data-movement kernels (expand, repeat, gather) copy raw unsigned words, so
they serve every dtype: an item of 16 bytes (complex128) is two 8-byte words
in a trailing dim.
"""
import math

import numpy as np

from kernels.funcs.portable import check_index
from kernels.gpu.backend import launch_config

INT32_MAX = 2**31 - 1
_INDEX_SUFFIX = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
_RESTRIDE_PAIRS = {("i32", "i32"), ("i32", "i64"), ("i64", "i64")}
# gather_grad's accumulation dtype and components per item; see gather_grad.
_GRAD_WORK = {
    np.dtype(np.float16): (np.dtype(np.float32), 1),
    np.dtype(np.float32): (np.dtype(np.float32), 1),
    np.dtype(np.float64): (np.dtype(np.float64), 1),
    np.dtype(np.complex64): (np.dtype(np.float32), 2),
    np.dtype(np.complex128): (np.dtype(np.float64), 2),
}
_REAL_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _launch(backend, file, name, n, args, grid, block):
    """Launch kernel ``name`` of ``file`` over ``n`` items (none if 0)."""
    if n > 0:
        backend.function(file, name)(*launch_config(n, grid, block), args)


def _i64(backend, values):
    """Small int64 metadata (shapes, strides) as a 1-D ``xp`` array."""
    return backend.xp.asarray(np.asarray(values, dtype=np.int64).reshape(-1))


def _index_suffix(op, name, dtype):
    """Kernel suffix of the int32/int64 index ``dtype``; TypeError otherwise."""
    suffix = _INDEX_SUFFIX.get(np.dtype(dtype))
    if suffix is None:
        raise TypeError(f"{op}: {name} dtype {np.dtype(dtype)} is not int32 or int64")
    return suffix


def _words(xp, x):
    """``x`` as contiguous unsigned words with a trailing dim of words per item.

    Returns
    -------
    words : array
        Shape ``x.shape + (k,)``, dtype ``uint8``/``16``/``32``/``64``.
    suffix : str
        The kernel suffix of the word type, e.g. ``"u64"``.
    """
    x = xp.asarray(x)
    size = x.dtype.itemsize
    word = next(w for w in (8, 4, 2, 1) if size % w == 0)
    flat = x.reshape(-1).view(np.dtype(f"u{word}"))
    return flat.reshape(tuple(x.shape) + (size // word,)), f"u{8 * word}"


def _from_words(words, dtype, shape):
    """Inverse of :func:`_words`: reinterpret words as ``dtype`` in ``shape``."""
    return words.reshape(-1).view(dtype).reshape(shape)


def _c_strides(shape):
    """C-order strides, in elements, of ``shape``."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _shared_dims(old, new):
    """How many leading and then trailing dims ``old`` and ``new`` share."""
    lead = 0
    while lead < min(len(old), len(new)) and old[lead] == new[lead]:
        lead += 1
    trail = 0
    while (trail < min(len(old), len(new)) - lead
           and old[-1 - trail] == new[-1 - trail]):
        trail += 1
    return lead, trail


def coo_restride(backend, indices, old_shape, new_shape, order="C",
                 index_dtype=None, grid=None, block=None):
    """New COO coordinates of every nonzero after a reshape.

    Parameters
    ----------
    backend : CupyBackend or an emulator with the same interface
    indices : xp array, int32 or int64, shape ``[len(old_shape), nnz]``
    old_shape, new_shape : sequence of int
        Concrete shapes with the same number of elements.
    order : {'C', 'F'}
        Index order of the reshape; 'F' reverses the dims on the host.
    index_dtype : dtype, optional
        Output dtype; by default the input's, or int64 when a new dim is
        ``>= 2**31``. int32 -> int64 is allowed, int64 -> int32 is not.

    Returns
    -------
    xp array, shape ``[len(new_shape), nnz]``
        Dims shared at the front and back of both shapes are copied; the
        rest go through a 64-bit flat offset, so int32 coordinates of a huge
        tensor do not overflow.
    """
    old = tuple(int(s) for s in old_shape)
    new = tuple(int(s) for s in new_shape)
    if order not in ("C", "F"):
        raise ValueError(f"coo_restride: order {order!r} is not 'C' or 'F'")
    if math.prod(old) != math.prod(new):
        raise ValueError(f"coo_restride: shape {list(new)} does not hold "
                         f"the {math.prod(old)} elements of {list(old)}")
    if indices.ndim != 2 or indices.shape[0] != len(old):
        raise ValueError(f"coo_restride: indices shape {list(indices.shape)} "
                         f"is not [{len(old)}, nnz]")
    in_suffix = _index_suffix("coo_restride", "indices", indices.dtype)
    if index_dtype is None:
        index_dtype = np.int64 if any(s > INT32_MAX for s in new) else indices.dtype
    out_suffix = _index_suffix("coo_restride", "index_dtype", index_dtype)
    if (in_suffix, out_suffix) not in _RESTRIDE_PAIRS:
        raise ValueError(f"coo_restride: index_dtype {np.dtype(index_dtype)} "
                         f"cannot hold {indices.dtype} coordinates")
    if order == "F":
        indices, old, new = indices[::-1], old[::-1], new[::-1]
    xp = backend.xp
    indices = xp.ascontiguousarray(indices)
    nnz = indices.shape[1]
    lead, trail = _shared_dims(old, new)
    out = xp.empty((len(new), nnz), dtype=index_dtype)
    args = (indices, out, np.int64(nnz), np.int32(len(old)), np.int32(len(new)),
            np.int32(lead), np.int32(trail),
            _i64(backend, _c_strides(old[lead:len(old) - trail])),
            _i64(backend, new[lead:len(new) - trail]))
    _launch(backend, "coo_restride.cu", f"coo_restride_{in_suffix}_{out_suffix}",
            nnz, args, grid, block)
    return xp.ascontiguousarray(out[::-1]) if order == "F" else out


def _csr_geometry(op, shape):
    """``(n_batch, n_rows, batched)`` of a 2-D or batched 3-D CSR shape."""
    if len(shape) not in (2, 3):
        raise ValueError(f"{op}: shape {list(shape)} is not 2-D or 3-D")
    batched = len(shape) == 3
    return (int(shape[0]) if batched else 1), int(shape[-2]), batched


def csr_to_coo_indices(backend, crows, cols, shape, grid=None, block=None):
    """COO indices ``[batch,] row, col`` of a 2-D or batched 3-D CSR tensor.

    Parameters
    ----------
    crows : xp array, int32 or int64
        ``rows + 1`` entries, or ``batch * (rows + 1)`` for 3-D, each batch
        starting from 0.
    cols : xp array, same dtype, ``nnz`` entries over all batches in order
    shape : sequence of int
        ``(rows, cols)`` or ``(batch, rows, cols)``.

    Returns
    -------
    xp array, shape ``[len(shape), nnz]``, dtype of ``crows``
        One thread per nonzero finds its batch and row by binary search.

    Raises
    ------
    ValueError
        When crows has the wrong length or its batch ends do not add up to
        ``nnz`` (the kernel would read out of bounds).
    """
    xp = backend.xp
    n_batch, n_rows, batched = _csr_geometry("csr_to_coo_indices", shape)
    suffix = _index_suffix("csr_to_coo_indices", "crows", crows.dtype)
    if cols.dtype != crows.dtype:
        raise TypeError(f"csr_to_coo_indices: cols dtype {cols.dtype} "
                        f"differs from crows dtype {crows.dtype}")
    crows = xp.ascontiguousarray(crows).reshape(-1)
    cols = xp.ascontiguousarray(cols).reshape(-1)
    if crows.size != n_batch * (n_rows + 1):
        raise ValueError(f"csr_to_coo_indices: crows has {crows.size} entries, "
                         f"expected {n_batch * (n_rows + 1)}")
    ends = crows[n_rows::n_rows + 1].astype(np.int64)
    offsets = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(ends)])
    nnz = cols.size
    if int(offsets[-1]) != nnz:
        raise ValueError(f"csr_to_coo_indices: crows count {int(offsets[-1])} "
                         f"nonzeros but cols has {nnz}")
    out = xp.empty((len(shape), nnz), dtype=crows.dtype)
    args = (crows, cols, offsets, out, np.int64(nnz), np.int64(n_batch),
            np.int64(n_rows), np.int32(batched))
    _launch(backend, "csr_coo.cu", f"csr_coo_indices_{suffix}", nnz, args,
            grid, block)
    return out


def coo_to_crows(backend, indices, shape, grid=None, block=None):
    """CSR crows from COO indices sorted by ``([batch,] row)``.

    Parameters
    ----------
    indices : xp array, int32 or int64, shape ``[len(shape), nnz]``
        Sorted by batch then row (a coalesced COO tensor is); unsorted
        input gives wrong crows but never reads out of bounds.
    shape : sequence of int
        ``(rows, cols)`` or ``(batch, rows, cols)``.

    Returns
    -------
    xp array, ``batch * (rows + 1)`` entries, dtype of ``indices``
        One thread per entry counts the nonzeros before its row by binary
        search; every batch starts from 0.
    """
    n_batch, n_rows, batched = _csr_geometry("coo_to_crows", shape)
    suffix = _index_suffix("coo_to_crows", "indices", indices.dtype)
    if indices.ndim != 2 or indices.shape[0] != len(shape):
        raise ValueError(f"coo_to_crows: indices shape {list(indices.shape)} "
                         f"is not [{len(shape)}, nnz]")
    xp = backend.xp
    indices = xp.ascontiguousarray(indices)
    crows = xp.empty(n_batch * (n_rows + 1), dtype=indices.dtype)
    args = (indices, crows, np.int64(indices.shape[1]), np.int64(n_batch),
            np.int64(n_rows), np.int32(batched))
    _launch(backend, "csr_coo.cu", f"coo_crows_{suffix}", crows.size, args,
            grid, block)
    return crows


def _expand_strides(in_shape, out_shape):
    """Output strides into the input (expand's output_stride): 0 on broadcast and new dims."""
    new = len(out_shape) - len(in_shape)
    if new < 0:
        raise ValueError(f"expand: shape {list(out_shape)} has fewer dims "
                         f"than x {list(in_shape)}")
    strides = [0] * new
    for d, (size, stride) in enumerate(zip(in_shape, _c_strides(in_shape), strict=True)):
        if size == out_shape[new + d]:
            strides.append(stride)
        elif size == 1:
            strides.append(0)
        else:
            raise ValueError(f"expand: dim {d} of size {size} cannot become "
                             f"{out_shape[new + d]}")
    return strides


def expand(backend, x, shape, grid=None, block=None):
    """Broadcast ``x`` to the concrete ``shape`` (new dims only in front).

    Returns
    -------
    xp array of ``shape`` and ``x.dtype``, contiguous; equals
    ``np.broadcast_to(x, shape)``.
    """
    out_shape = tuple(int(s) for s in shape)
    strides = _expand_strides(tuple(x.shape), out_shape)
    words, suffix = _words(backend.xp, x)
    k = words.shape[-1]
    out = backend.xp.empty(out_shape + (k,), dtype=words.dtype)
    args = (words, out, np.int64(out.size), np.int32(out.ndim),
            _i64(backend, out.shape), _i64(backend, [s * k for s in strides] + [1]))
    _launch(backend, "expand.cu", f"expand_{suffix}", out.size, args, grid, block)
    return _from_words(out, x.dtype, out_shape)


def repeat(backend, x, repeats, grid=None, block=None):
    """Tile ``x``: ``repeats`` has at least ``x.ndim`` entries, new dims in front.

    Returns
    -------
    xp array of shape ``padded x.shape * repeats``; equals
    ``np.tile(x, repeats)``. Repeats of 0 give a 0-size output.
    """
    repeats = tuple(int(r) for r in repeats)
    if len(repeats) < x.ndim or any(r < 0 for r in repeats):
        raise ValueError(f"repeat: repeats {list(repeats)} must be >= 0 with "
                         f"at least {x.ndim} entries")
    in_shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    out_shape = tuple(s * r for s, r in zip(in_shape, repeats, strict=True))
    words, suffix = _words(backend.xp, x)
    k = words.shape[-1]
    out = backend.xp.empty(out_shape + (k,), dtype=words.dtype)
    args = (words, out, np.int64(out.size), np.int32(out.ndim),
            _i64(backend, out.shape), _i64(backend, in_shape + (k,)))
    _launch(backend, "repeat.cu", f"repeat_{suffix}", out.size, args, grid, block)
    return _from_words(out, x.dtype, out_shape)


def check_gather_index(xp, index, size, axis=0, op="gather"):
    """Bounds pre-pass: raise before any kernel runs, then wrap negatives.

    :func:`kernels.funcs.portable.check_index` runs a min/max reduction (one
    cupy reduction each on a GPU) and raises the CPU kernels' IndexError,
    word for word, when any value lies outside ``[-size, size)``.

    Parameters
    ----------
    index : xp array, int32 or int64
    size : int
        Length of the gathered axis.

    Returns
    -------
    xp array
        ``index`` with negatives wrapped into ``[0, size)`` like numpy;
        int64 when int32 could not hold ``size``.

    Raises
    ------
    IndexError
        Naming the first bad value and its position.

    Examples
    --------
    >>> check_gather_index(np, np.array([0, -1]), 3)
    array([0, 2])
    >>> check_gather_index(np, np.array([[0, 1], [5, 0]]), 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IndexError: gather: index 5 at position (1, 0) is out of range for axis 0 of size 3; ...
    """
    _index_suffix(op, "index", index.dtype)
    low = check_index(index, size, axis, op)
    if low is None or low >= 0:
        return index
    if size > INT32_MAX:
        index = index.astype(np.int64)
    return xp.where(index < 0, index + size, index)


def _gather_geometry(op, x_shape, index_shape, axis, batch_dims):
    """``(axis, (batch, outer, n_index, inner), out_shape)`` of a gather."""
    ndim = len(x_shape)
    if batch_dims < 0:
        batch_dims += len(index_shape)
    axis = batch_dims if axis is None else (axis + ndim if axis < 0 else axis)
    if not 0 <= batch_dims <= min(len(index_shape), axis) or axis >= ndim:
        raise ValueError(f"{op}: axis {axis} and batch_dims {batch_dims} do not "
                         f"fit x of rank {ndim} and index of rank {len(index_shape)}")
    if tuple(x_shape[:batch_dims]) != tuple(index_shape[:batch_dims]):
        raise ValueError(f"{op}: batch dims of x {list(x_shape[:batch_dims])} "
                         f"and index {list(index_shape[:batch_dims])} differ")
    dims = (math.prod(x_shape[:batch_dims]), math.prod(x_shape[batch_dims:axis]),
            math.prod(index_shape[batch_dims:]), math.prod(x_shape[axis + 1:]))
    out_shape = tuple(x_shape[:axis]) + tuple(index_shape[batch_dims:]) + tuple(x_shape[axis + 1:])
    return axis, dims, out_shape


def gather(backend, x, index, axis=None, batch_dims=0, offset=0,
           gather_size=None, op="gather", grid=None, block=None):
    """tf.gather with ``batch_dims``, through the [B, O, P, I] primitive.

    Parameters
    ----------
    x : xp array, any dtype
        Holds the slice ``[offset, offset + x.shape[axis])`` of a gathered
        axis of length ``gather_size`` (default: all of it, offset 0).
    index : xp array, int32 or int64
        Values in ``[-gather_size, gather_size)``; checked first, see
        :func:`check_gather_index`.
    axis : int, optional
        Defaults to ``batch_dims``; negative counts from the end.
    batch_dims : int
        Leading dims shared by ``x`` and ``index``; negative counts from
        the end of ``index``.
    op : str
        The op named in the bounds pre-pass's IndexError.

    Returns
    -------
    xp array
        Shape ``x.shape[:axis] + index.shape[batch_dims:] +
        x.shape[axis+1:]``. Indices outside the local slice give 0, so the
        outputs of all slices sum to the full gather.
    """
    axis, (_, outer, n_index, inner), out_shape = _gather_geometry(
        "gather", x.shape, index.shape, axis, batch_dims)
    local_size = x.shape[axis]
    size = local_size if gather_size is None else int(gather_size)
    index = check_gather_index(backend.xp, index, size, axis, op)
    words, suffix = _words(backend.xp, x)
    k = words.shape[-1]
    out = backend.xp.empty(out_shape + (k,), dtype=words.dtype)
    args = (words, backend.xp.ascontiguousarray(index), out, np.int64(out.size),
            np.int64(outer), np.int64(n_index), np.int64(inner * k), np.int64(local_size),
            np.int64(offset))
    _launch(backend, "gather.cu", f"gather_{suffix}_{_INDEX_SUFFIX[index.dtype]}",
            out.size, args, grid, block)
    return _from_words(out, x.dtype, out_shape)


def gather_grad(backend, out_grad, index, x_shape, axis=None, batch_dims=0,
                offset=0, gather_size=None, op="gather_grad", grid=None, block=None):
    """Gradient of :func:`gather`: scatter-add ``out_grad`` into zeros of ``x_shape``.

    Atomic policy: float32 and float64 use the native ``atomicAdd``
    (float64 needs sm_60+; the NVRTC check targets sm_70 and up). complex64
    and complex128 are viewed as interleaved float32/float64 pairs and each
    component is added by its own real atomic; a complex sum is the sum of
    its components, so the result is the same. float16 is accumulated in a
    float32 temporary and rounded to float16 once at the end, which needs no
    ``cuda_fp16.h`` and is more accurate than half-precision atomics. Other
    dtypes raise TypeError. The order of atomic adds varies between runs,
    so float results may differ in the last bits from ``np.add.at``.

    Parameters
    ----------
    out_grad : xp array of the gather's output shape
    index, axis, batch_dims, offset, gather_size, op
        As given to :func:`gather`; ``x_shape`` is the local slice's shape.

    Returns
    -------
    xp array of ``x_shape`` and ``out_grad.dtype``
    """
    xp = backend.xp
    x_shape = tuple(int(s) for s in x_shape)
    axis, (_, outer, n_index, inner), out_shape = _gather_geometry(
        "gather_grad", x_shape, index.shape, axis, batch_dims)
    if tuple(out_grad.shape) != out_shape:
        raise ValueError(f"gather_grad: out_grad shape {list(out_grad.shape)} "
                         f"is not the gather's output shape {list(out_shape)}")
    if np.dtype(out_grad.dtype) not in _GRAD_WORK:
        raise TypeError(f"gather_grad: out_grad dtype {out_grad.dtype} is not "
                        f"float16/32/64 or complex64/128")
    work, k = _GRAD_WORK[np.dtype(out_grad.dtype)]
    size = x_shape[axis] if gather_size is None else int(gather_size)
    index = check_gather_index(xp, index, size, axis, op)
    grad = out_grad.reshape(-1)
    grad = grad.view(work) if k == 2 else grad.astype(work, copy=False)
    x_grad = xp.zeros(math.prod(x_shape) * k, dtype=work)
    args = (xp.ascontiguousarray(grad), xp.ascontiguousarray(index), x_grad,
            np.int64(grad.size), np.int64(outer), np.int64(n_index), np.int64(inner * k),
            np.int64(x_shape[axis]), np.int64(offset))
    name = f"gather_grad_{_REAL_SUFFIX[work]}_{_INDEX_SUFFIX[index.dtype]}"
    _launch(backend, "gather.cu", name, grad.size, args, grid, block)
    x_grad = x_grad.view(out_grad.dtype) if k == 2 else x_grad.astype(out_grad.dtype, copy=False)
    return x_grad.reshape(x_shape)
