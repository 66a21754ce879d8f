"""``EmuBackend``: the launchers' backend interface on the CPU emulator.

``function(file, name)`` returns a callable with ``cupy.RawKernel``'s
calling convention, ``f(grid, block, args)``. It is stricter than cupy
where cupy would silently misbehave on a GPU: every argument must match
its parameter's type exactly (an array of the pointee's dtype, C-contiguous
and writeable when the pointer is not const; a numpy scalar of the
parameter's dtype), and the launch geometry must be valid for CUDA.
"""
import ctypes

import numpy as np

from cuda_emu.build import build
from kernels.gpu import SOURCE_DIR


class EmuKernel:
    """One emulated kernel; call it as ``kernel(grid, block, args)``."""

    def __init__(self, library, kernel, workers):
        self.name = kernel.name
        self.params = kernel.params
        self.workers = workers
        self._fn = getattr(library, f"emu_{kernel.name}")
        self._fn.argtypes = [ctypes.c_uint] * 3 + [p.ctype for p in kernel.params]
        self._fn.restype = None

    def __call__(self, grid, block, args):
        grid, block = _extent("grid", grid, 2**31 - 1), _extent("block", block, 1024)
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}: takes {len(self.params)} arguments, "
                            f"{len(args)} given")
        values = [self._convert(p, a) for p, a in zip(self.params, args, strict=True)]
        self._fn(grid, block, self.workers, *values)

    def _convert(self, param, value):
        """The ctypes value for ``param``; TypeError on any mismatch."""
        where = f"{self.name}: argument {param.name} ({param.decl})"
        if param.pointer:
            if not isinstance(value, np.ndarray) or value.dtype != param.dtype:
                raise TypeError(f"{where} needs a {param.dtype} array, got {_describe(value)}")
            if not value.flags.c_contiguous or not (param.const or value.flags.writeable):
                raise ValueError(f"{where}: the array is not C-contiguous and writeable")
            return value.ctypes.data
        if not isinstance(value, np.generic) or value.dtype != param.dtype:
            raise TypeError(f"{where} needs a numpy {param.dtype} scalar, got {_describe(value)}")
        return value.item()


def _describe(value):
    """A short description of an argument for error messages."""
    dtype = getattr(value, "dtype", None)
    return f"{type(value).__name__} of {dtype}" if dtype is not None else type(value).__name__


def _extent(what, size, limit):
    """The x extent of a 1-D launch; ValueError where CUDA would refuse it."""
    size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    if not 1 <= len(size) <= 3 or any(s != 1 for s in size[1:]):
        raise ValueError(f"launch: {what} {size} is not a 1-D extent")
    if not 1 <= size[0] <= limit:
        raise ValueError(f"launch: {what} {size[0]} is not in [1, {limit}] "
                         f"(cudaErrorInvalidConfiguration)")
    return int(size[0])


class EmuBackend:
    """Runs the unmodified ``.cu`` sources on the CPU, with numpy arrays.

    Parameters
    ----------
    sanitize : bool
        Use the AddressSanitizer build (the process must preload libasan).
    workers : int
        OS threads that share the blocks of a launch, so atomics race.
    source_dir : path-like
        Where the ``.cu`` files are; defaults to ``kernels/gpu``.
    """

    name = "emu"
    xp = np

    def __init__(self, sanitize=False, workers=2, source_dir=SOURCE_DIR):
        self.sanitize = sanitize
        self.workers = workers
        self.source_dir = source_dir
        self._modules = {}

    def function(self, file, name):
        """The kernel ``name`` of ``file``, built and loaded once per file."""
        if file not in self._modules:
            path, kernels = build(self.source_dir / file, self.sanitize)
            self._modules[file] = (ctypes.CDLL(str(path)), {k.name: k for k in kernels})
        library, kernels = self._modules[file]
        if name not in kernels:
            raise AttributeError(f"{file} has no kernel {name}; it has {sorted(kernels)}")
        return EmuKernel(library, kernels[name], self.workers)
