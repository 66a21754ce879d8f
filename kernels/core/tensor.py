"""TensorBase: what every tensor layout shares (place, autograd state).

``dense.Tensor`` and the sparse tensors subclass it and register themselves
per layout, so dispatch can wrap kernel outputs without importing them.
"""
from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from . import autograd
from .dtypes import is_differentiable

_T = TypeVar("_T", bound="TensorBase")

#: How phisparse itself sets a tensor's attributes: the tensor classes refuse
#: assignment (:func:`frozen_setattr`), so their own code goes around it.
set_attribute = object.__setattr__

_LAYOUT_CLASSES = {}
#: The layout classes, whose instances are local tensors (dispatch's short path).
LOCAL_CLASSES = set()
_GLOBAL = []


def register_layout(layout, cls):
    """Make ``cls`` the tensor class for ``layout`` (called by dense/ and sparse/)."""
    _LAYOUT_CLASSES[layout] = cls
    LOCAL_CLASSES.add(cls)


def layout_class(layout):
    """The tensor class registered for ``layout``."""
    try:
        return _LAYOUT_CLASSES[layout]
    except KeyError:
        raise RuntimeError(f"no tensor class registered for layout {layout!r}; "
                           "import dense and sparse first") from None


def install_global(runtime):
    """Plug in the global-tensor runtime: ``runtime.run(spec, inputs, attrs)`` runs an
    op with a global input and ``runtime.to_global(x, placement, sbp)`` makes one.

    :mod:`kernels.core.dist` installs itself when imported (``import dense`` does),
    so the core never imports it.
    """
    _GLOBAL[:] = [runtime]


def global_runtime(op):
    """The installed global-tensor runtime; RuntimeError naming ``op`` if there is none."""
    if not _GLOBAL:
        raise RuntimeError(f"{op}: global tensors need kernels.core.dist, which is not "
                           "loaded (import dense)")
    return _GLOBAL[0]


def frozen_setattr(self, name, value):
    """``__setattr__`` of the tensor classes (local and global): tensors are immutable.

    Only a public property with a setter (``stop_gradient``) may be assigned;
    any other name, a new one or a private one holding the data (``_array``),
    raises AttributeError, so no caller can swap a tensor's data or hang
    state on it.  phisparse sets its own attributes with :data:`set_attribute`.
    """
    prop = getattr(type(self), name, None)
    if isinstance(prop, property) and prop.fset is not None:
        set_attribute(self, name, value)
        return
    raise AttributeError(f"{type(self).__name__}: cannot set attribute {name!r}; tensors are "
                         "immutable (ops return new tensors; only stop_gradient is settable)")


def frozen_delattr(self, name):
    """``__delattr__`` of the tensor classes: no attribute can be deleted."""
    raise AttributeError(f"{type(self).__name__}: cannot delete attribute {name!r}; tensors "
                         "are immutable")


def named(op, exc):
    """TypeError ``exc`` of a constructor, its stop_gradient message prefixed with ``op``."""
    return TypeError(f"{op}: {exc}") if str(exc).startswith("stop_gradient") else exc


class TensorBase:
    """Autograd state shared by all layouts.

    Subclasses provide ``meta``, ``_data()`` (the kernel's view of the data),
    ``_from_kernel(data, meta)``, ``_root_grad(grad_tensor)`` and
    ``_add_grad(other)``.
    """

    layout = None
    #: The state of a fresh tensor, as class defaults: an instance holds its own
    #: only once it differs, so wrapping a kernel's output sets none of them.
    _meta = None
    _stop_gradient = True
    #: True on a gradient addend known to be zeros (:data:`kernels.core.autograd.ZERO_ADDEND`).
    _zero_addend = False
    _grad = None
    _grad_fn = None
    _out_index = 0

    def _init_autograd(self, stop_gradient):
        set_attribute(self, "_stop_gradient", True)
        set_attribute(self, "_grad", None)
        set_attribute(self, "_grad_fn", None)
        set_attribute(self, "_out_index", 0)
        if stop_gradient is not True:
            self.stop_gradient = stop_gradient

    @property
    def stop_gradient(self) -> bool:
        """True (the default) if no gradient is computed for this tensor.

        Only a bool is accepted, and only floating and complex tensors may
        set it to False (as torch's ``requires_grad``): TypeError otherwise.
        """
        return self._stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"stop_gradient must be a bool, got {value!r} of type "
                            f"{type(value).__name__}")
        if not value and not is_differentiable(self.dtype):
            raise TypeError(f"stop_gradient=False needs a floating or complex tensor; this "
                            f"one has dtype {np.dtype(self.dtype).name}, which has no "
                            "gradient (cast it to a float dtype first)")
        set_attribute(self, "_stop_gradient", bool(value))

    @property
    def grad(self: _T) -> _T | None:
        """The accumulated gradient of a leaf, else None."""
        return self._grad

    @property
    def is_leaf(self) -> bool:
        """True if no recorded op produced this tensor."""
        return self._grad_fn is None

    def clear_grad(self) -> None:
        """Forget the accumulated gradient."""
        set_attribute(self, "_grad", None)

    def backward(self, grad_tensor: Any = None, retain_graph: bool = False) -> None:
        """Compute gradients of this tensor with respect to every leaf that needs one.

        Parameters
        ----------
        grad_tensor : Tensor, optional
            The gradient flowing into this tensor; None means ones like it.
        retain_graph : bool
            Keep the graph so that backward can run through it again.
        """
        autograd.run_backward(self, grad_tensor, retain_graph)

    def _check_grad_dtype(self, dtype):
        """A complex grad_tensor for a real tensor would lose its imaginary part: TypeError."""
        if np.dtype(dtype).kind == "c" and np.dtype(self.dtype).kind != "c":
            raise TypeError(f"backward: grad_tensor has dtype {np.dtype(dtype).name}, but the "
                            f"tensor is real ({np.dtype(self.dtype).name}); its imaginary "
                            "part would be lost: pass a real grad_tensor")

    def _accumulate_leaf(self, g):
        autograd.accumulate_leaf(self, g)

    def detach(self: _T) -> _T:
        """The same data, cut from the graph, with stop_gradient=True."""
        return type(self)._from_kernel(self._data(), self.meta)

    # ------------------------------------------------------------ global view
    is_global = False

    @property
    def sbp(self) -> Any:
        """The sbp of a global tensor; None for a local one."""
        return None

    @property
    def placement(self) -> Any:
        """The placement of a global tensor; None for a local one."""
        return None

    def to_local(self: _T) -> _T:
        """This rank's shard of a global tensor; a local tensor is its own."""
        return self

    def to_global(self: _T, placement: Any = None, sbp: Any = None) -> _T:
        """A global tensor whose shard on this rank is this tensor (a collective).

        See :func:`kernels.core.dist.to_global`: a global tensor is re-boxed
        to ``sbp`` (the placement cannot change); for a local one the shard is this rank's slice
        under ``dense.sbp.split(axis)`` (sizes as ``numpy.array_split``), a whole
        copy under ``dense.sbp.broadcast`` and an addend under
        ``dense.sbp.partial_sum``; ``placement`` defaults to every rank.
        """
        return global_runtime("to_global").to_global(self, placement, sbp)
