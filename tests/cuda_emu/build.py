"""Compile a ``.cu`` file for the CPU with g++ and the emulation header.

The ``.cu`` text is not modified: it is read as NVRTC gets it (the shared
preamble in front, :func:`kernels.gpu.read_source`) and preprocessed (it has
no ``#include``, so this expands only its own macros) to find every
``extern "C" __global__ void NAME(PARAMS)``, and a generated wrapper
includes ``cuda_emu.h``, then holds that source text, then defines
``extern "C" void emu_NAME(unsigned grid, unsigned block, unsigned workers,
PARAMS)`` for each kernel. The shared library is cached under
``$PHISPARSE_EMU_CACHE`` (default ``~/.cache/phisparse-emu``), keyed by a
hash of everything that goes into it.
"""
import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from kernels.gpu import read_source

HEADER = Path(__file__).resolve().with_name("cuda_emu.h")
CXX = os.environ.get("CXX", "g++")
FLAGS = ("-std=c++14", "-O1", "-shared", "-fPIC", "-pthread",
         "-Wall", "-Wextra", "-Werror")
ASAN_FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer", "-g")

# Parameter base types the kernels may use: ctypes type and numpy dtype.
_TYPES = {
    "unsigned char": (ctypes.c_ubyte, np.dtype(np.uint8)),
    "unsigned short": (ctypes.c_ushort, np.dtype(np.uint16)),
    "int": (ctypes.c_int, np.dtype(np.int32)),
    "unsigned int": (ctypes.c_uint, np.dtype(np.uint32)),
    "long long": (ctypes.c_longlong, np.dtype(np.int64)),
    "unsigned long long": (ctypes.c_ulonglong, np.dtype(np.uint64)),
    "float": (ctypes.c_float, np.dtype(np.float32)),
    "double": (ctypes.c_double, np.dtype(np.float64)),
}
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_TYPEDEF = re.compile(r"typedef\s+([A-Za-z_][\w ]*?)\s+(\w+)\s*;")
_QUALIFIERS = {"const", "__restrict__", "volatile"}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its declaration text, name and resolved type."""

    decl: str
    name: str
    base: str
    pointer: bool
    const: bool

    @property
    def ctype(self):
        """The ctypes type the launcher passes (a pointer is ``c_void_p``)."""
        return ctypes.c_void_p if self.pointer else _TYPES[self.base][0]

    @property
    def dtype(self):
        """The numpy dtype of the value, or of the pointee."""
        return _TYPES[self.base][1]


@dataclass(frozen=True)
class Kernel:
    """An ``extern "C" __global__`` kernel found in a ``.cu`` file."""

    name: str
    params: tuple


def source(cu_path):
    """The text NVRTC compiles for ``cu_path``: the shared preamble, then the file."""
    cu_path = Path(cu_path)
    return read_source(cu_path.name, cu_path.parent)


def preprocess(cu_path):
    """The source of ``cu_path`` with its macros expanded (``g++ -E -P``)."""
    result = subprocess.run([CXX, "-E", "-P", "-x", "c++", "-"], input=source(cu_path),
                            capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"preprocessing {cu_path} failed:\n{result.stderr}")
    return result.stdout


def _param(decl, typedefs):
    """Parse one parameter declaration such as ``const i64* __restrict__ x``."""
    words = [w for w in decl.replace("*", " ").split() if w not in _QUALIFIERS]
    base = " ".join(words[:-1])
    base = typedefs.get(base, base)
    if base not in _TYPES:
        raise ValueError(f"unsupported kernel parameter type in {decl!r}")
    return Param(decl.strip(), words[-1], base, "*" in decl, "const" in decl.split())


def parse_kernels(text):
    """Every ``extern "C" __global__`` kernel of preprocessed ``.cu`` text.

    Examples
    --------
    >>> k, = parse_kernels('typedef long long i64; extern "C" __global__ '
    ...                    'void f(const i64* __restrict__ a, int n) {}')
    >>> [(p.name, p.base, p.pointer, p.const) for p in k.params]
    [('a', 'long long', True, True), ('n', 'int', False, False)]
    """
    typedefs = {alias: " ".join(base.split()) for base, alias in _TYPEDEF.findall(text)}
    return [Kernel(name, tuple(_param(d, typedefs) for d in params.split(",") if d.strip()))
            for name, params in _KERNEL.findall(text)]


def wrapper_source(cu_path, kernels):
    """C++ source: the header, the unmodified source, one launcher per kernel."""
    parts = [f'#include "{HEADER}"', source(cu_path)]
    for kernel in kernels:
        params = "".join(", " + p.decl for p in kernel.params)
        args = ", ".join(p.name for p in kernel.params)
        parts.append(
            f'extern "C" void emu_{kernel.name}(unsigned grid, unsigned block, '
            f"unsigned workers{params})\n{{\n"
            f"    emu_launch(grid, block, workers, [&]() {{ {kernel.name}({args}); }});\n}}")
    return "\n\n".join(parts) + "\n"


def cache_dir():
    """Where built libraries are kept (created on demand)."""
    root = os.environ.get("PHISPARSE_EMU_CACHE") or Path.home() / ".cache" / "phisparse-emu"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=None)
def _compiler_version():
    return subprocess.run([CXX, "--version"], capture_output=True, text=True,
                          check=True).stdout


def build(cu_path, sanitize=False):
    """Build (or find cached) the emulation library of ``cu_path``.

    Parameters
    ----------
    cu_path : path-like
    sanitize : bool
        Build with AddressSanitizer; such a library only loads into a
        process with ``libasan`` preloaded.

    Returns
    -------
    path : Path
        The shared library.
    kernels : list of Kernel
        The kernels it exports as ``emu_<name>``.
    """
    kernels = parse_kernels(preprocess(cu_path))
    wrapper = wrapper_source(cu_path, kernels)
    flags = FLAGS + (ASAN_FLAGS if sanitize else ())
    key = hashlib.sha256("\0".join(
        [HEADER.read_text(), wrapper, " ".join(flags),
         _compiler_version()]).encode()).hexdigest()[:24]
    stem = f"{Path(cu_path).stem}-{'asan-' if sanitize else ''}{key}"
    library = cache_dir() / f"{stem}.so"
    if not library.exists():
        _compile(wrapper, flags, library)
    return library, kernels


def _compile(source, flags, library):
    """Compile ``source`` into ``library``; the wrapper is kept beside it.

    Both land under their final names by ``os.replace``, so runs in
    parallel never see a half-written file.
    """
    with tempfile.TemporaryDirectory(dir=library.parent) as tmp:
        cpp = Path(tmp) / library.with_suffix(".cpp").name
        cpp.write_text(source)
        result = subprocess.run([CXX, *flags, str(cpp), "-o", str(cpp.with_suffix(".so"))],
                                capture_output=True, text=True, check=False)
        if result.returncode:
            raise RuntimeError(f"g++ failed on the wrapper of {library.stem}:\n"
                               f"{result.stderr}\n--- wrapper ---\n{source}")
        os.replace(cpp, library.with_suffix(".cpp"))
        os.replace(cpp.with_suffix(".so"), library)
