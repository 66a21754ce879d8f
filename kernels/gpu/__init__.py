"""The device layer: CUDA sources, their loader, execution backends and launchers.

Op families own their kernels: ``kernels/dense/*.py`` and
``kernels/sparse/*.py`` register their 'gpu' kernels beside the 'cpu' ones.
This package holds only what those kernels launch through:

- ``*.cu``: ``extern "C"`` kernels only, no ``#include``, grid-stride loops
  and 64-bit flat offsets.  :func:`read_source` puts the shared
  ``preamble.cuh`` (index and word typedefs, ``GRID_STRIDE_LOOP``) in front
  of each one.
- :mod:`.backend`: the cupy execution backend, created on first launch (the
  tests plug in a CPU emulator of the same sources), and launch geometry.
- :mod:`.launch`: what every launcher shares (launch, raw words, metadata arrays).
- one thin launcher per ``.cu``, named after it: :mod:`.expand`,
  :mod:`.gather`, :mod:`.coo_restride`, :mod:`.csr_coo`, :mod:`.sddmm`,
  :mod:`.sum_axis` (repeat launches expand.cu).
"""
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
PREAMBLE = "preamble.cuh"
NVRTC_OPTIONS = ("--std=c++14",)


def cu_files(source_dir=SOURCE_DIR):
    """Names of the ``.cu`` sources, sorted.

    Examples
    --------
    >>> "gather.cu" in cu_files()
    True
    """
    return sorted(p.name for p in Path(source_dir).glob("*.cu"))


def read_source(file, source_dir=SOURCE_DIR):
    """The text NVRTC compiles for ``file``: the shared preamble, then the file.

    A ``#line`` directive after the preamble keeps compiler messages on the
    file's own line numbers.

    Examples
    --------
    >>> text = read_source("expand.cu")
    >>> "typedef long long i64;" in text and 'extern "C"' in text
    True
    """
    preamble = (SOURCE_DIR / PREAMBLE).read_text()
    return f'{preamble}#line 1 "{file}"\n{(Path(source_dir) / file).read_text()}'
