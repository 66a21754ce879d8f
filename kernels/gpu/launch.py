"""What every launcher shares: the launch itself, metadata arrays and raw words.

A launcher takes an execution backend first (see :mod:`kernels.gpu.backend`):
``CupyBackend`` on a GPU, or the tests' CPU emulator of the same ``.cu``
source; arrays are the backend's ``xp`` arrays.  ``grid`` and ``block``
force the launch geometry (default: block 256, one thread per item up to
65535 blocks); the kernels loop grid-stride, so any geometry gives the same
result.  Nothing is launched for 0 items.

Data-movement kernels (expand, repeat, gather) copy rows of raw unsigned
words, so they serve every dtype: a row moves in the widest words (up to 8
bytes) its bytes and address allow, and a team of threads copies each row
(:func:`row_words`, :func:`team_shift`).
"""
import numpy as np

from .backend import launch_config

#: Words a thread of a row-copying team moves per row, about (see :func:`team_shift`):
#: enough to spread a row's offset arithmetic thin, few enough that a team of 8-byte
#: words spans whole 32-byte memory sectors.
WORDS_PER_THREAD = 8

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


def row_words(xp, x, row):
    """``x`` as flat contiguous unsigned words as wide as rows of ``row`` elements allow.

    The word is the widest of 8, 4, 2 and 1 bytes that divides a row's bytes
    and x's address, so every row (and x, a whole number of rows) is whole
    words: float32 rows of even length move as 8-byte words.

    Returns
    -------
    words : 1-D array of ``uint8``/``16``/``32``/``64``
    word : int
        Bytes per word.
    """
    x = xp.ascontiguousarray(x)
    nbytes, address = row * x.dtype.itemsize, _address(x)
    word = next(w for w in (8, 4, 2, 1) if nbytes % w == 0 and address % w == 0)
    return x.reshape(-1).view(np.dtype(f"u{word}")), word


def _address(a):
    """The device or host address of ``a``'s first byte."""
    return a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data


def team_shift(row_words):
    """log2 of the threads that copy one row of ``row_words`` words together: a power
    of two near ``row_words / WORDS_PER_THREAD``, so consecutive threads store
    consecutive words and a row's offset is worked out once per thread, not per word.

    Examples
    --------
    >>> [team_shift(n) for n in (1, 8, 9, 32, 512, 4096)]
    [0, 0, 1, 2, 6, 9]
    """
    return (max(1, -(-row_words // WORDS_PER_THREAD)) - 1).bit_length()
