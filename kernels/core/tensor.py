"""TensorBase: what every tensor layout shares (place, autograd state).

``dense.Tensor`` and the sparse tensors subclass it and register themselves
per layout, so dispatch can wrap kernel outputs without importing them.
"""
from . import autograd

_LAYOUT_CLASSES = {}
_GLOBAL = []


def register_layout(layout, cls):
    """Make ``cls`` the tensor class for ``layout`` (called by dense/ and sparse/)."""
    _LAYOUT_CLASSES[layout] = cls


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


class TensorBase:
    """Autograd state shared by all layouts.

    Subclasses provide ``meta``, ``_data()`` (the kernel's view of the data),
    ``_from_kernel(data, meta)``, ``_root_grad(grad_tensor)`` and
    ``_add_grad(other)``.
    """

    layout = None

    def _init_autograd(self, stop_gradient):
        self._stop_gradient = bool(stop_gradient)
        self._grad = None
        self._grad_fn = None
        self._out_index = 0

    @property
    def stop_gradient(self):
        """True (the default) if no gradient is computed for this tensor."""
        return self._stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value):
        self._stop_gradient = bool(value)

    @property
    def grad(self):
        """The accumulated gradient of a leaf, else None."""
        return self._grad

    @property
    def is_leaf(self):
        """True if no recorded op produced this tensor."""
        return self._grad_fn is None

    def clear_grad(self):
        """Forget the accumulated gradient."""
        self._grad = None

    def backward(self, grad_tensor=None, retain_graph=False):
        """Compute gradients of this tensor with respect to every leaf that needs one.

        Parameters
        ----------
        grad_tensor : Tensor, optional
            The gradient flowing into this tensor; None means ones like it.
        retain_graph : bool
            Keep the graph so that backward can run through it again.
        """
        autograd.run_backward(self, grad_tensor, retain_graph)

    def _accumulate_leaf(self, g):
        self._grad = g if self._grad is None else self._grad._add_grad(g)

    def detach(self):
        """The same data, cut from the graph, with stop_gradient=True."""
        return type(self)._from_kernel(self._data(), self.meta)

    # ------------------------------------------------------------ global view
    is_global = False

    @property
    def sbp(self):
        """The sbp of a global tensor; None for a local one."""
        return None

    @property
    def placement(self):
        """The placement of a global tensor; None for a local one."""
        return None

    def to_local(self):
        """This rank's shard of a global tensor; a local tensor is its own."""
        return self

    def to_global(self, placement=None, sbp=None):
        """A global tensor whose shard on this rank is this tensor (a collective).

        See :func:`kernels.core.dist.to_global`: a global tensor is re-boxed
        to ``sbp`` (the placement cannot change); for a local one the shard is this rank's slice
        under ``dense.sbp.split(axis)`` (sizes as ``numpy.array_split``), a whole
        copy under ``dense.sbp.broadcast`` and an addend under
        ``dense.sbp.partial_sum``; ``placement`` defaults to every rank.
        """
        return global_runtime("to_global").to_global(self, placement, sbp)
