"""CUDA kernels (``*.cu``, loaded by ``cupy.RawModule``) and their launchers.

Every ``.cu`` file here holds ``extern "C"`` kernels only, has no
``#include``, runs grid-stride loops and computes flat offsets in 64 bits.
The launchers in :mod:`kernels.gpu.launch` take an execution backend
(:class:`kernels.gpu.backend.CupyBackend` on a GPU; the tests add a CPU
emulator of the same source), so one launcher body serves both.
:mod:`kernels.gpu.ops` (dense) and :mod:`kernels.gpu.sparse_ops` register
the kernels that run them under backend 'gpu'.
"""
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
NVRTC_OPTIONS = ("--std=c++14",)


def cu_files():
    """Names of the ``.cu`` sources, sorted.

    Returns
    -------
    list of str
        File names relative to :data:`SOURCE_DIR`.

    Examples
    --------
    >>> "gather.cu" in cu_files()
    True
    """
    return sorted(p.name for p in SOURCE_DIR.glob("*.cu"))


def read_source(file):
    """The text of the ``.cu`` file ``file`` in :data:`SOURCE_DIR`.

    Examples
    --------
    >>> 'extern "C"' in read_source("expand.cu")
    True
    """
    return (SOURCE_DIR / file).read_text()
