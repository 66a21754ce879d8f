"""Compiled CPU loops for the kernels no sequence of numpy calls runs at memory speed.

A loop written here is compiled by numba (``njit``) the first time it runs
with a new combination of argument types, and the machine code is cached on
disk (``cache=True``), so later processes load it instead of compiling again.
numba is imported only then: ``import sparse`` does not pay for it.

Every loop is compiled with ``nogil=True``, so :func:`.threads.run_parallel`
runs one range of work per thread truly in parallel, and with IEEE
arithmetic, unless made with ``loop(reassoc=True)``: such a loop may reorder
its floating-point sums (the ``reassoc`` fast-math flag alone), so that a
reduction over a contiguous row is vectorized while infinities, NaNs and
signed zeros keep IEEE semantics.  The reduction's order then depends on the
row length alone, never on which thread or which range computes it, so
results are bit-identical on any number of threads.

:data:`DTYPES` are the value dtypes the loops are compiled for; a kernel
keeps its numpy path for the others (bool, float16, longdouble, object), and
for every dtype where numba cannot be imported (an install with
``--no-deps``, or a numba too old for this numpy): :func:`compiles` says
which.  Where no cache directory is writable, the loops are compiled in each
process instead.

:func:`prefetch_row` asks the memory system for a row a loop will read a few
iterations later (LLVM's ``llvm.prefetch``); in plain Python it does nothing.
A loop calls it by the name it was imported under (``from kernels.funcs.jit
import prefetch_row``): compiling swaps the module's global for the intrinsic.
"""
import threading
import types

import numpy as np

#: Value dtypes numba compiles arithmetic for, as this module uses it.
DTYPES = frozenset(np.dtype(t) for t in (
    np.float32, np.float64, np.complex64, np.complex128,
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64))

_LOCK = threading.Lock()


class Loop:
    """A Python function compiled by numba on its first call (see the module docstring).

    >>> total = Loop(lambda a: a.sum())
    >>> float(total(np.arange(4.0)))
    6.0
    """

    def __init__(self, fn, reassoc=False):
        self.fn, self.reassoc = fn, reassoc
        self.compiled = None

    def __call__(self, *args):
        if self.compiled is None:
            with _LOCK:
                if self.compiled is None:
                    self.compiled = _compile(self.fn, self.reassoc)
        return self.compiled(*args)


def loop(fn=None, *, reassoc=False):
    """Decorator: ``fn`` becomes a :class:`Loop`; ``loop(reassoc=True)`` lets it reorder
    a floating-point reduction (see the module docstring)."""
    if fn is None:
        return lambda f: Loop(f, reassoc)
    return Loop(fn, reassoc)


def _compile(fn, reassoc=False):
    """numba's machine code for ``fn``, whose calls of this module's stubs (such as
    :func:`prefetch_row`) become their numba intrinsics."""
    import numba                                  # noqa: PLC0415 (lazy: 0.24 s to import)
    options = {"nogil": True, "fastmath": {"reassoc"} if reassoc else False}
    stubs = {name: _intrinsic(value) for name, value in fn.__globals__.items()
             if any(value is stub for stub in _BUILDERS)}
    if stubs:
        fn = types.FunctionType(fn.__code__, {**fn.__globals__, **stubs}, fn.__name__,
                                fn.__defaults__, fn.__closure__)
    if fn.__name__ == "<lambda>":
        return numba.njit(**options)(fn)
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:                          # no writable cache directory
        return numba.njit(**options)(fn)


def prefetch_row(a, i):
    """Prefetch the first 256 bytes of row ``i`` of the 2-D array ``a`` into every cache
    level (a random row read some iterations later: SDDMM's gather of ``yt`` rows,
    7.7 -> 6.5 ms at nnz 1e6, k = 64, one thread).  A hint only: nothing is read,
    so a row past the end is harmless, and in plain Python it does nothing."""


def _intrinsic(stub):
    """The numba intrinsic behind ``stub`` (built once, after numba is imported)."""
    if stub not in _BUILT:
        _BUILT[stub] = _BUILDERS[stub]()
    return _BUILT[stub]


def _prefetch_row_intrinsic():
    from llvmlite import ir                       # noqa: PLC0415
    from numba import types as nb                 # noqa: PLC0415
    from numba.core import cgutils                # noqa: PLC0415
    from numba.extending import intrinsic         # noqa: PLC0415

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        i64, i32, i8p = ir.IntType(64), ir.IntType(32), ir.IntType(8).as_pointer()
        stride = cgutils.unpack_tuple(builder, array.strides)[0]
        row = builder.sext(args[1], i64) if args[1].type.width < 64 else args[1]
        start = builder.add(builder.ptrtoint(array.data, i64), builder.mul(row, stride))
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        for offset in range(0, 256, 64):          # (address, read, locality 3, data)
            line = builder.inttoptr(builder.add(start, ir.Constant(i64, offset)), i8p)
            builder.call(hint, [line, ir.Constant(i32, 0), ir.Constant(i32, 3),
                                ir.Constant(i32, 1)])
        return context.get_dummy_value()

    def typer(typingctx, a, i):
        return nb.none(a, i), codegen
    return intrinsic(typer)


#: Each signed index dtype's unsigned twin (:func:`unsigned`).
UNSIGNED = {np.dtype(np.int32): np.dtype(np.uint32), np.dtype(np.int64): np.dtype(np.uint64)}
#: Each unsigned index dtype's signed twin.
SIGNED = {u: s for s, u in UNSIGNED.items()}


def unsigned(*arrays):
    """int32 or int64 index arrays viewed as their unsigned twins (no copy).  numba checks
    every read through a signed index for a negative one (Python's wraparound); an
    unsigned index skips that check: a merge of two sorted rows took 8.4 ms instead
    of 11.8 on 2e6 entries.  A loop then counts with ``one`` of the index dtype
    (:func:`one`): numba makes an unsigned integer plus an int literal a float.

    >>> unsigned(np.array([1, 2]))[0].dtype
    dtype('uint64')
    """
    return [a.view(UNSIGNED[a.dtype]) for a in arrays]


def one(array):
    """The number 1 in ``array``'s dtype (for a loop's counters: see :func:`unsigned`)."""
    return array.dtype.type(1)


def compiles(*dtypes):
    """Whether every one of ``dtypes`` is one the loops are compiled for (and numba is
    there to compile them)."""
    return available() and all(np.dtype(d) in DTYPES for d in dtypes)


def available():
    """Whether numba imports (tried once, at the first loop's first call): an install
    without it, or one whose numba refuses this numpy, keeps the numpy paths."""
    if not _FOUND:
        try:
            import numba  # noqa: F401, PLC0415
            _FOUND.append(True)
        except Exception:                         # noqa: BLE001 (ImportError, version checks)
            _FOUND.append(False)
    return _FOUND[0]


_FOUND = []


_BUILDERS = {prefetch_row: _prefetch_row_intrinsic}
_BUILT = {}
