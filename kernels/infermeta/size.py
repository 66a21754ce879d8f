"""The up-front size check every shape rule runs on its output."""
import os

import numpy as np

from ..funcs.shape import INT64_LIMIT, prod

_LIMIT = []


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
    """Return MetaTensor ``out`` if a tensor of its shape can exist, else raise ValueError.

    Every dim must fit in int64, and a dense output's bytes must fit in this
    machine's memory (:func:`memory_limit`), so that an op never starts work
    it cannot finish (numpy's own error names no op).  Sparse outputs hold
    only their stored entries; their dims are checked.

    Examples
    --------
    >>> from kernels.core.meta import MetaTensor
    >>> check_output_size("expand", MetaTensor((2, 3), "float32")).shape
    (2, 3)
    >>> check_output_size("expand", MetaTensor((10**12,), "float64"))
    Traceback (most recent call last):
    ...
    ValueError: expand: the output of shape [1000000000000] and dtype float64 needs 8000000000000 bytes (8.0 TB), ...
    """
    shape = out.shape
    if any(s >= INT64_LIMIT for s in shape):
        raise ValueError(f"{op}: the output shape {list(shape)} has a dim of 2**63 or more; "
                         "every dim must fit in int64")
    if out.layout != "dense":
        return out
    nbytes = prod(shape) * np.dtype(out.dtype).itemsize
    if nbytes > memory_limit():
        raise ValueError(f"{op}: the output of shape {list(shape)} and dtype "
                         f"{np.dtype(out.dtype).name} needs {nbytes} bytes "
                         f"({nbytes / 1e12:.1f} TB), more than the {memory_limit()} bytes "
                         "of memory this process may use")
    return out
