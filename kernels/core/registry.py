"""Kernel registry: kernels register under (name, backend, layout, dtype).

A kernel is a pure function of arrays (numpy or cupy) or array bundles and
plain attributes.  The YAML names the kernel; dispatch picks the entry for the
input's backend (from its place), layout and dtype.
"""
import numpy as np

from .dtypes import ALL

BACKENDS = ("cpu", "gpu")
_KERNELS = {}
#: A counter that changes with every registration: dispatch's cached bindings
#: compare it to know when to look a kernel up again.
GENERATION = [0]


class KernelNotFoundError(TypeError):
    """No kernel is registered for the requested key."""


def _origin(fn):
    return getattr(fn, "__module__", None)


def register_kernel(name, layout="dense", backends=("cpu",), dtypes=ALL, override=False):
    """Decorator: register ``fn`` as kernel ``name`` for each backend and dtype.

    Parameters
    ----------
    name : str
        The kernel name the YAML uses (``reshape_coo``, ``gather_grad``...).
    layout : str
        Layout of the input that selects the kernel.
    backends : tuple of str
        'cpu' and/or 'gpu'.  An xp-generic kernel can register for both.
    dtypes : iterable of numpy dtypes
        Dtypes of the ``data_type`` argument this kernel accepts.
    override : bool
        Replace a kernel that another module registered under the same key.
        Without it that raises ValueError, so a user package cannot silently
        change a built-in kernel (a module may re-register its own, as a
        reload does).
    """
    def deco(fn):
        keys = []
        for backend in backends:
            if backend not in BACKENDS:
                raise ValueError(f"register_kernel: backend {backend!r} not in {BACKENDS}")
            keys += [(name, backend, layout, np.dtype(dt)) for dt in dtypes]
        for key in keys:
            old = _KERNELS.get(key)
            if old is not None and not override and _origin(old) != _origin(fn):
                raise ValueError(f"register_kernel: kernel '{name}' ({key[1]}, {layout}, "
                                 f"{key[3]}) is already registered by "
                                 f"{_origin(old)}; pick another name "
                                 "or pass override=True")
        for key in keys:
            _KERNELS[key] = fn
        GENERATION[0] += 1
        return fn
    return deco


def has_kernel(name):
    """True if any kernel is registered under ``name``."""
    return any(key[0] == name for key in _KERNELS)


def functions(name):
    """The distinct functions registered as kernel ``name`` (any backend, layout, dtype)."""
    return list({id(fn): fn for key, fn in _KERNELS.items() if key[0] == name}.values())


def registered(name):
    """Sorted (backend, layout, dtype) keys registered for kernel ``name``."""
    return sorted((b, lay, str(d)) for n, b, lay, d in _KERNELS if n == name)


def lookup(name, backend, layout, dtype, op=None):
    """Return the kernel for the key, or raise KernelNotFoundError listing what exists."""
    fn = _KERNELS.get((name, backend, layout, np.dtype(dtype)))
    if fn is not None:
        return fn
    have = registered(name)
    shown = ", ".join(f"({b}, {l}, {d})" for b, l, d in have) or "nothing"
    raise KernelNotFoundError(
        f"{op or name}: no kernel '{name}' for backend={backend}, layout={layout}, "
        f"dtype={dtype}; registered (backend, layout, dtype): {shown}")
