"""The up-front size checks dispatch runs on every op's outputs."""
import os
from math import prod

import numpy as np

_LIMIT = []
#: 2**63: every dim (and element count) must be below it to fit in int64.
INT64_LIMIT = 2 ** 63
#: The most dims a tensor may have: numpy's NPY_MAXDIMS (64 since numpy 2.0).
MAX_DIMS = 64


def memory_limit():
    """Bytes an output may take: physical memory, or a lower address-space rlimit."""
    if not _LIMIT:
        try:
            ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            ram = INT64_LIMIT
        try:
            import resource
            soft = resource.getrlimit(resource.RLIMIT_AS)[0]
            ram = ram if soft in (resource.RLIM_INFINITY, -1) else min(ram, soft)
        except (ImportError, OSError, ValueError):
            pass
        _LIMIT.append(ram)
    return _LIMIT[0]


def check_output_size(op, out):
    """Return MetaTensor ``out`` if a tensor of its shape can exist here, else raise ValueError.

    Its dims must pass :func:`check_output_dims`, and a dense output's bytes
    must fit in this machine's memory (:func:`memory_limit`), so that an op
    never starts work it cannot finish (numpy's own error names no op).
    A COO output holds only its stored entries (its dims are checked); a
    CSR output also holds a row pointer per row.
    Dispatch runs this on every local op's outputs.

    Examples
    --------
    >>> from kernels.core.meta import MetaTensor
    >>> check_output_size("expand", MetaTensor((2, 3), "float32")).shape
    (2, 3)
    >>> check_output_size("expand", MetaTensor((10**12,), "float64"))
    Traceback (most recent call last):
    ...
    ValueError: expand: the output of shape [1000000000000] and dtype float64 needs 8000000000000 bytes (8.0 TB) of values, ...
    """
    shape = check_output_dims(op, out).shape
    if out.layout == "sparse_coo":
        if out.sparse_dim is not None and out.sparse_dim < len(shape):
            check_numpy_span(op, "the output's values", (0,) + tuple(shape[out.sparse_dim:]),
                             out.dtype)
        return out
    nbytes, what = _dense_bytes(out) if out.layout == "dense" else _crows_bytes(shape)
    if nbytes == 0 and out.layout == "dense":
        check_numpy_span(op, "the output", shape, out.dtype)
    check_bytes(op, f"the output of shape {list(shape)} and dtype "
                    f"{np.dtype(out.dtype).name}", nbytes, what)
    return out


def check_numpy_span(op, subject, shape, dtype):
    """ValueError naming ``op`` if numpy cannot make an array of ``shape`` even empty.

    numpy refuses any shape whose nonzero dims times the itemsize exceed
    2**63 - 1 bytes, 0-size or not (``np.zeros((0, 2**62))``: "array is too
    big"), since its strides must fit; a smaller empty shape is fine.

    Examples
    --------
    >>> check_numpy_span("zeros", "the output", (0, 2**59), "float64")
    >>> check_numpy_span("zeros", "the output", (0, 2**62), "float64")
    Traceback (most recent call last):
    ...
    ValueError: zeros: the output of shape [0, 4611686018427387904] and dtype float64 cannot exist even empty: numpy wants its nonzero dims times the itemsize (36893488147419103232 bytes) to be at most 2**63 - 1
    """
    dtype = np.dtype(dtype)
    span = prod(d for d in shape if d) * dtype.itemsize
    if span >= INT64_LIMIT:
        raise ValueError(f"{op}: {subject} of shape {list(shape)} and dtype {dtype.name} "
                         f"cannot exist even empty: numpy wants its nonzero dims times the "
                         f"itemsize ({span} bytes) to be at most 2**63 - 1")


def check_bytes(op, subject, nbytes, what):
    """ValueError naming ``op`` if ``subject`` needs more than :func:`memory_limit` bytes
    (``what`` says of what: values, row pointers, ...)."""
    if nbytes > memory_limit():
        raise ValueError(f"{op}: {subject} needs {nbytes} bytes ({_readable(nbytes)}) "
                         f"{what}, more than the {memory_limit()} bytes of memory this "
                         "process may use")


def _readable(nbytes):
    """``nbytes`` in the largest decimal unit that keeps a leading digit: '34.4 GB'."""
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes / 1e6:.1f} MB"


def _dense_bytes(out):
    return prod(out.shape) * np.dtype(out.dtype).itemsize, "of values"


def _crows_bytes(shape):
    """A CSR tensor's row pointers at least: rows + 1 per batch, 4 bytes each."""
    return prod(shape[:-2]) * (shape[-2] + 1) * 4 if len(shape) >= 2 else 0, "of row pointers"


def check_output_dims(op, out):
    """Return MetaTensor ``out`` if its shape is one a tensor may have, else raise
    ValueError: every dim fits in int64 and there are at most :data:`MAX_DIMS`
    (numpy's limit).  This holds for a global tensor's logical shape too.

    Examples
    --------
    >>> from kernels.core.meta import MetaTensor
    >>> check_output_dims("concat", MetaTensor((2**63, 4), "float32", "sparse_coo"))
    Traceback (most recent call last):
    ...
    ValueError: concat: the output shape [9223372036854775808, 4] has a dim of 2**63 or more; every dim must fit in int64
    """
    shape = out.shape
    if len(shape) > MAX_DIMS:
        raise ValueError(f"{op}: the output would have {len(shape)} dims; a tensor has at "
                         f"most {MAX_DIMS} (numpy's limit)")
    if any(s >= INT64_LIMIT for s in shape):
        raise ValueError(f"{op}: the output shape {list(shape)} has a dim of 2**63 or more; "
                         "every dim must fit in int64")
    return out
