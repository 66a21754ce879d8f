"""What every launcher shares: the launch itself, metadata arrays and raw words.

A launcher takes an execution backend first (see :mod:`kernels.gpu.backend`):
``CupyBackend`` on a GPU, or the tests' CPU emulator of the same ``.cu``
source; arrays are the backend's ``xp`` arrays.  ``grid`` and ``block``
force the launch geometry (default: block 256, one thread per item up to
65535 blocks); the kernels loop grid-stride, so any geometry gives the same
result.  Nothing is launched for 0 items.

Data-movement kernels (expand, repeat, gather) copy raw unsigned words, so
they serve every dtype: an item of 16 bytes (complex128) is two 8-byte words
in a trailing dim.
"""
import numpy as np

from .backend import launch_config

INT32_MAX = 2**31 - 1
INDEX_SUFFIX = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


def launch(backend, file, name, n, args, grid=None, block=None):
    """Launch kernel ``name`` of ``file`` over ``n`` items (none if 0)."""
    if n > 0:
        backend.function(file, name)(*launch_config(n, grid, block), args)


def i64(backend, values):
    """Small int64 metadata (shapes, strides) as a 1-D ``xp`` array."""
    return backend.xp.asarray(np.asarray(values, dtype=np.int64).reshape(-1))


def index_suffix(op, name, dtype):
    """Kernel suffix of the int32/int64 index ``dtype``; TypeError otherwise."""
    suffix = INDEX_SUFFIX.get(np.dtype(dtype))
    if suffix is None:
        raise TypeError(f"{op}: {name} dtype {np.dtype(dtype)} is not int32 or int64")
    return suffix


def words(xp, x):
    """``x`` as contiguous unsigned words with a trailing dim of words per item.

    Returns
    -------
    words : array
        Shape ``x.shape + (k,)``, dtype ``uint8``/``16``/``32``/``64``.
    suffix : str
        The kernel suffix of the word type, e.g. ``"u64"``.
    """
    x = xp.ascontiguousarray(x)
    size = x.dtype.itemsize
    word = next(w for w in (8, 4, 2, 1) if size % w == 0)
    flat = x.reshape(-1).view(np.dtype(f"u{word}"))
    return flat.reshape(tuple(x.shape) + (size // word,)), f"u{8 * word}"


def from_words(words, dtype, shape):
    """Inverse of :func:`words`: reinterpret words as ``dtype`` in ``shape``."""
    return words.reshape(-1).view(dtype).reshape(shape)
