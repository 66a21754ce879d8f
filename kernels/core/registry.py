"""Kernel registry: kernels register under (name, backend, layout, dtype).

A kernel is a pure function of arrays (numpy or cupy) or array bundles and
plain attributes.  The YAML names the kernel; dispatch picks the entry for the
input's backend (from its place), layout and dtype.
"""
import importlib
import pkgutil
import sys
import types

import numpy as np

from .dtypes import ALL, canonical_dtype
from .meta import LAYOUTS

BACKENDS = ("cpu", "gpu")
#: The packages whose modules register the built-in kernels.  Dispatch imports an op's
#: module on the op's first call; a registration from any other module imports them all
#: first, so that it meets every built-in name (taken unless ``override=True``).
BUILTIN_PACKAGES = ("kernels.dense", "kernels.sparse")
_BUILTINS_LOADED = [False]
_KERNELS = {}
#: The module that registered each key's kernel (a kernel's own ``__module__`` may be
#: numpy's or functools' for a ufunc or a partial).
_ORIGINS = {}
#: A counter that changes with every registration: dispatch's cached bindings
#: compare it to know when to look a kernel up again.
GENERATION = [0]


class KernelNotFoundError(TypeError):
    """No kernel is registered for the requested key."""


def _load_builtins():
    """Import every built-in kernel module (once), so that their names are registered."""
    if _BUILTINS_LOADED[0]:
        return
    for package in BUILTIN_PACKAGES:
        path = importlib.import_module(package).__path__
        for info in pkgutil.iter_modules(path, package + "."):
            importlib.import_module(info.name)
    _BUILTINS_LOADED[0] = True


def _origin(fn, caller):
    """The module owning kernel ``fn``: the one defining it for a Python function (a
    helper that registers for others passes their functions), else (a ufunc, a partial)
    the module calling ``register_kernel``."""
    return fn.__module__ if isinstance(fn, types.FunctionType) else caller


def _check_args(name, layout, backends, dtypes, override):
    """The backends and dtypes (np.dtypes) as tuples, or TypeError or ValueError naming
    register_kernel for a malformed argument."""
    if type(name) is not str or not name:
        raise TypeError(f"register_kernel: name must be a non-empty str, got {name!r}")
    if type(layout) is not str or layout not in LAYOUTS:
        kind = ValueError if isinstance(layout, str) else TypeError
        raise kind(f"register_kernel: layout {layout!r} is not one of {list(LAYOUTS)}")
    if isinstance(backends, str) or not hasattr(backends, "__iter__"):
        raise TypeError(f"register_kernel: backends must be a tuple of str from {BACKENDS}, "
                        f"got {backends!r}")
    backends = tuple(backends)
    for backend in backends:
        if backend not in BACKENDS:
            raise ValueError(f"register_kernel: backend {backend!r} not in {BACKENDS}")
    if isinstance(dtypes, str) or not hasattr(dtypes, "__iter__"):
        raise TypeError(f"register_kernel: dtypes must be an iterable of dtypes, got "
                        f"{dtypes!r}")
    dtypes = tuple(canonical_dtype(dt, "register_kernel", "dtypes entry") for dt in dtypes)
    if type(override) is not bool:
        raise TypeError(f"register_kernel: override must be a bool, got {override!r}")
    return backends, dtypes


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
        reload does).  The module is the one defining a Python function
        ``fn``, else (a ufunc, a partial) the one calling ``register_kernel``.
        A kernel from outside ``kernels`` first imports the built-in kernels
        (which dispatch otherwise imports on an op's first call), so that a
        built-in name is taken before its op has run.
    """
    backends, dtypes = _check_args(name, layout, backends, dtypes, override)
    caller = sys._getframe(1).f_globals.get("__name__")
    keys = [(name, backend, layout, dt) for backend in backends for dt in dtypes]

    def deco(fn):
        if not callable(fn):
            raise TypeError(f"register_kernel: kernel '{name}' must be a function, got "
                            f"{fn!r}")
        origin = _origin(fn, caller)
        if str(origin).partition(".")[0] != "kernels":
            _load_builtins()
        for key in keys:
            old = _KERNELS.get(key)
            if old is not None and old is not fn and not override \
                    and _ORIGINS.get(key) != origin:
                raise ValueError(f"register_kernel: kernel '{name}' ({key[1]}, {layout}, "
                                 f"{key[3]}) is already registered by "
                                 f"{_ORIGINS.get(key)}; pick another name "
                                 "or pass override=True")
        for key in keys:
            if _KERNELS.get(key) is not fn:
                _KERNELS[key], _ORIGINS[key] = fn, origin
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
