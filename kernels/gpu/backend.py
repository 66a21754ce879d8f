"""Execution backends for the CUDA launchers, and launch geometry.

A backend has ``xp`` (the array namespace its kernels read and write) and
``function(file, name)``, which returns a callable ``f(grid, block, args)``
with the calling convention of ``cupy.RawKernel``: ``grid`` and ``block``
are tuples and ``args`` holds arrays and numpy scalars (``np.int64``,
``np.int32``) matching the kernel's parameter types exactly.
"""
from kernels.core.xp import gpu_ready
from kernels.gpu import NVRTC_OPTIONS, read_source

BLOCK = 256
MAX_GRID = 65535
MAX_BLOCK = 1024


def gpu_available():
    """Whether cupy is importable and ``cupy.is_available()`` sees a GPU.

    Examples
    --------
    >>> isinstance(gpu_available(), bool)
    True
    """
    return gpu_ready()[0]


def require_gpu(what):
    """Raise RuntimeError naming what is missing unless a GPU is usable.

    Parameters
    ----------
    what : str
        What needs the GPU; it starts the message.

    Raises
    ------
    RuntimeError
        ``"<what>: cupy is not installed ..."`` or ``"<what>: cupy is
        installed but no CUDA GPU is available"``.
    """
    ok, why = gpu_ready()
    if not ok:
        raise RuntimeError(f"{what}: {why}")


def launch_config(n, grid=None, block=None, cap=None):
    """Grid and block sizes for ``n`` work items.

    Parameters
    ----------
    n : int
        Number of work items (> 0); the kernels loop grid-stride, so any
        grid covers them.
    grid, block : int, optional
        Forced sizes; tests force ``1, 1`` to drive the grid-stride loops.
        ``block`` defaults to 256 and ``grid`` to ``ceil(n / block)``
        capped at ``cap`` (default 65535).

    Returns
    -------
    tuple of (tuple of int, tuple of int)
        ``((grid,), (block,))`` as ``cupy.RawKernel`` takes them.

    Examples
    --------
    >>> launch_config(1000)
    ((4,), (256,))
    >>> launch_config(1000, grid=1, block=1)
    ((1,), (1,))
    >>> launch_config(10**9, block=128, cap=2**20)
    ((1048576,), (128,))
    """
    block = BLOCK if block is None else int(block)
    if not 1 <= block <= MAX_BLOCK:
        raise ValueError(f"launch: block {block} is not in [1, {MAX_BLOCK}]")
    cap = MAX_GRID if cap is None else cap
    grid = min(-(-n // block), cap) if grid is None else int(grid)
    if not 1 <= grid <= 2**31 - 1:
        raise ValueError(f"launch: grid {grid} is not in [1, 2**31 - 1]")
    return (grid,), (block,)


class CupyBackend:
    """Runs the ``.cu`` kernels on a CUDA GPU through ``cupy.RawModule``.

    Raises
    ------
    RuntimeError
        When cupy is missing or sees no GPU (see :func:`require_gpu`).
    """

    name = "cupy"

    def __init__(self):
        require_gpu("CupyBackend")
        import cupy

        self.xp = cupy
        self._modules = {}

    def function(self, file, name):
        """The kernel ``name`` of ``file``, compiled once per file."""
        if file not in self._modules:
            self._modules[file] = self.xp.RawModule(
                code=read_source(file), options=NVRTC_OPTIONS)
        return self._modules[file].get_function(name)



_device = None


def device():
    """The process's :class:`CupyBackend`, created on first use.

    The registered 'gpu' kernels launch through it; importing them never
    needs a GPU. Tests substitute an emulator by setting ``_device``.

    Raises
    ------
    RuntimeError
        On first use without a usable GPU (see :func:`require_gpu`).
    """
    global _device
    if _device is None:
        _device = CupyBackend()
    return _device
