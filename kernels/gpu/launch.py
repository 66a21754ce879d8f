"""What every launcher shares: the launch itself, metadata arrays and raw words.

A launcher takes an execution backend first (see :mod:`kernels.gpu.backend`):
``CupyBackend`` on a GPU, or the tests' CPU emulator of the same ``.cu``
source; arrays are the backend's ``xp`` arrays.  ``grid`` and ``block``
force the launch geometry (default: block 256, one thread per item up to
65535 blocks, or a kernel's :data:`TUNED` geometry); the kernels loop
grid-stride, so any geometry gives the same result.  Nothing is launched for 0 items.

Data-movement kernels (expand, repeat, gather) copy rows of raw unsigned
words, so they serve every dtype: a row moves in the widest words (up to 16
bytes) its bytes and address allow, and a team of threads copies each row
(:func:`row_words`, :func:`team_shift`).
"""
import functools

import numpy as np

from .backend import launch_config

#: Words a thread of a row-copying team moves per row, about (see :func:`team_shift`):
#: one batch of ``copy_row``'s four loads in flight before their stores.  On an H200
#: (2026-11-28, ``python -m bench.gpu_launch``: 1.5-4 GiB outputs, blocks of 256, grid
#: capped at 65535) 4 beat 8: gather 1.25 -> 1.14 ms (256-byte rows), repeat 0.62 -> 0.50,
#: batch_gather and expand within 1%.  2 gave gather 1.12 but repeat 0.71; 16 was 3.5
#: times slower for gather and 4.6 times for repeat.
WORDS_PER_THREAD = 4

#: Launch geometry (block, grid cap) of the kernels whose names start with a key, where
#: ``python -m bench.gpu_launch --others`` on an H200 (2026-11-28) beat the default
#: (``BLOCK`` 256, ``MAX_GRID`` 65535) by 5% or more: the COO restride at nnz 1e8 1.465 ->
#: 1.345 ms and 1.347 -> 1.258 (blocks of 512 were slower still), gather_grad 2.553 ->
#: 2.314 (batch_gather_grad, the same kernel, 1.456 -> 1.474).  Every other kernel was
#: within 5% of the default on every variant but expand_grad's sums (once 10% faster with
#: blocks of 128, within run-to-run spread).
TUNED = {"coo_restride": (128, 65535), "gather_grad": (128, 2**20)}

INT32_MAX = 2**31 - 1
INDEX_SUFFIX = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
#: Value dtypes of the arithmetic kernels (``sddmm.cu``, ``spmm.cu``), and their suffixes.
VALUE_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
                np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}


def launch(backend, file, name, n, args, grid=None, block=None):
    """Launch kernel ``name`` of ``file`` over ``n`` items (none if 0), with the forced
    ``grid`` and ``block`` if given, else the :data:`TUNED` geometry of its name."""
    if n > 0:
        cap = None
        if grid is None and block is None:
            block, cap = next((g for k, g in TUNED.items() if name.startswith(k)), (None, None))
        backend.function(file, name)(*launch_config(n, grid, block, cap), args)


def i64(backend, values):
    """Small int64 metadata (shapes, strides) as a 1-D ``xp`` array.

    The array is made once per distinct ``values`` and kept (the kernels only
    read it), so a repeated launch copies nothing from the host.
    """
    return _metadata(backend.xp, tuple(int(v) for v in values))


@functools.lru_cache(maxsize=4096)
def _metadata(xp, values):
    array = xp.asarray(np.asarray(values, dtype=np.int64))
    if xp is np:                        # the emulator's: kept read-only (cupy has no flag)
        array.flags.writeable = False
    return array


def divisors(backend, values):
    """The ``{d, m, sh1 + 256 * sh2}`` triples of ``div_u64`` (preamble.cuh), one per
    divisor, as a flat int64 ``xp`` array: ``n / d`` becomes a high multiply by ``m``
    and two shifts (Granlund and Montgomery 1994, figure 4.1), exact for every
    64-bit ``n``.  A dim of 0 leaves nothing to launch, and gets divisor 1.
    Kept per distinct ``values``, as :func:`i64` keeps its arrays.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> divisors(SimpleNamespace(xp=np), [1, 3]).tolist()
    [1, 1, 0, 3, 6148914691236517206, 257]
    """
    return _metadata(backend.xp, _triples(tuple(int(v) for v in values)))


@functools.lru_cache(maxsize=4096)
def _triples(values):
    triples = []
    for d in (max(v, 1) for v in values):
        if d >= 2**63:
            raise ValueError(f"divisors: divisor {d} is 2**63 or more")
        shift = (d - 1).bit_length()
        magic = (2**64 * ((1 << shift) - d)) // d + 1
        triples += [d, magic - 2**64 if magic >= 2**63 else magic,
                    min(shift, 1) + 256 * max(shift - 1, 0)]
    return tuple(triples)


def value_suffix(op, dtype):
    """Kernel suffix of the value ``dtype`` of an arithmetic kernel; TypeError otherwise."""
    suffix = VALUE_SUFFIX.get(np.dtype(dtype))
    if suffix is None:
        raise TypeError(f"{op}: dtype {np.dtype(dtype)} is not float32, float64, complex64 or "
                        "complex128")
    return suffix


def index_suffix(op, name, dtype):
    """Kernel suffix of the int32/int64 index ``dtype``; TypeError otherwise."""
    suffix = INDEX_SUFFIX.get(np.dtype(dtype))
    if suffix is None:
        raise TypeError(f"{op}: {name} dtype {np.dtype(dtype)} is not int32 or int64")
    return suffix


def row_words(xp, x, row):
    """``x`` as flat contiguous unsigned words as wide as rows of ``row`` elements allow.

    The word is the widest of 16, 8, 4, 2 and 1 bytes that divides a row's
    bytes and x's address, so every row (and x, a whole number of rows) is
    whole words: float32 rows of a multiple of 4 move as 16-byte words, which
    the kernels (``*_u128``) read as pairs of ``uint64``.

    Returns
    -------
    words : 1-D array of ``uint8``/``16``/``32``/``64`` (``uint64`` for 16 bytes)
    word : int
        Bytes per word.
    """
    x = xp.ascontiguousarray(x)
    nbytes, start = row * x.dtype.itemsize, address(x)
    word = next(w for w in (16, 8, 4, 2, 1) if nbytes % w == 0 and start % w == 0)
    return x.reshape(-1).view(np.dtype(f"u{min(word, 8)}")), word


def address(a):
    """The device or host address of ``a``'s first byte."""
    return a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data


def team_shift(row_words):
    """log2 of the threads that copy one row of ``row_words`` words together: a power
    of two near ``row_words / WORDS_PER_THREAD``, so consecutive threads store
    consecutive words and a row's offset is worked out once per thread, not per word.

    Examples
    --------
    >>> [team_shift(n) for n in (1, 4, 5, 32, 512, 4096)]
    [0, 0, 1, 3, 7, 10]
    """
    return (max(1, -(-row_words // WORDS_PER_THREAD)) - 1).bit_length()
