"""numpy/cupy helpers: one kernel body serves both through an ``xp`` namespace."""
import numpy as np

from .meta import PLACES


def xp_of(array):
    """The array namespace (numpy or cupy) that owns ``array``."""
    if type(array) is np.ndarray:
        return np
    mod = type(array).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return np


def place_of(array):
    """'gpu' for a cupy array, else 'cpu'."""
    return "gpu" if type(array).__module__.startswith("cupy") else "cpu"


def gpu_ready():
    """(True, '') if cupy is importable and sees a CUDA device, else (False, reason)."""
    try:
        import cupy
    except ImportError:
        return False, "cupy is not installed (pip install 'phisparse[gpu]')"
    try:
        ok = bool(cupy.is_available())
    except Exception as exc:  # a broken driver must not crash the caller
        return False, f"cupy cannot reach CUDA: {exc}"
    return (True, "") if ok else (False, "cupy is installed but no CUDA GPU is available")


def check_place(place, op):
    """Raise RuntimeError naming what is missing if ``place`` is 'gpu' and no GPU is usable."""
    if place == "gpu":
        ok, why = gpu_ready()
        if not ok:
            raise RuntimeError(f"{op}: place 'gpu' is unavailable: {why}")


def canonical_place(place, op):
    """'cpu', 'gpu' or None for a ``place`` argument; 'cuda' is 'gpu', and ':0' names device 0.

    phisparse uses one GPU (device 0); another device index raises ValueError.
    """
    if place is None:
        return None
    name, _, index = str(place).partition(":") if isinstance(place, str) else (place, "", "")
    name = "gpu" if name == "cuda" else name
    if name not in PLACES or (index and (name == "cpu" or index != "0")):
        raise ValueError(f"{op}: place {place!r} is not one of 'cpu', 'gpu', 'gpu:0', "
                         "'cuda', 'cuda:0'")
    return name


def to_place(array, place, op="to_tensor"):
    """Move ``array`` to ``place`` ('cpu' or 'gpu'), copying only when it must move."""
    if place == place_of(array):
        return array
    if place == "cpu":
        return array.get()
    check_place(place, op)
    import cupy
    return cupy.asarray(array)


def to_numpy(array):
    """A host numpy copy of ``array``."""
    if place_of(array) == "gpu":
        return array.get()
    return np.array(array, copy=True)
