"""GlobalTensor: a logical tensor over a placement, holding this rank's shard.

Every op on it runs the local kernel on the shard (see :mod:`.runtime`), so
autograd records the physical computation on each rank: local ops and
boxing steps, whose gradients are the dual boxing steps.  A physical
gradient therefore has the dual sbp of its tensor (broadcast <-> partial_sum,
split stays split).
"""
import numpy as np

from .. import autograd
from ..dispatch import get_op
from ..tensor import (TensorBase, frozen_delattr, frozen_setattr, global_runtime,
                      layout_class, set_attribute)
from ..xp import to_numpy, to_place, xp_of
from ..opspec import Arg, OpSpec
from . import layouts
from .failures import shared_failure
from .sbp import broadcast, partial_sum, shard_shape


class GlobalTensor(TensorBase):
    """A global tensor: logical metadata, sbp, placement and this rank's shard.

    Make one with ``x.to_global(placement=..., sbp=...)``.  ``shape``,
    ``dtype`` and ``ndim`` are logical.  ``numpy()``, ``grad``, ``backward()``
    and re-boxing are collectives: every rank of the placement must call them
    in the same order.
    """

    is_global = True

    __setattr__ = frozen_setattr
    __delattr__ = frozen_delattr

    def __init__(self, local, sbp, placement, meta):
        set_attribute(self, "_local", local)
        set_attribute(self, "_sbp", sbp)
        set_attribute(self, "_placement", placement)
        set_attribute(self, "_meta", meta)
        set_attribute(self, "_nnz", None)

    # ------------------------------------------------------------ attributes
    @property
    def layout(self):
        return self._meta.layout

    @property
    def meta(self):
        """The logical shape, dtype, layout and place."""
        return self._meta

    @property
    def shape(self):
        """The logical shape (the same on every rank)."""
        return list(self._meta.shape)

    @property
    def dtype(self):
        return self._meta.dtype

    @property
    def ndim(self):
        return self._meta.ndim

    @property
    def size(self):
        """The logical number of elements."""
        return self._meta.size

    def numel(self):
        """The logical number of elements (the product of the logical shape), as torch's
        DTensor and sparse tensors count them."""
        return self.size

    @property
    def place(self):
        return self._meta.place

    def is_sparse_coo(self):
        return self.layout == "sparse_coo"

    def is_sparse_csr(self):
        return False          # a global tensor is dense or sparse COO

    def sparse_dim(self):
        """The number of indexed (leading) dims of a sparse COO tensor."""
        return self._meta.sparse_dim

    def dense_dim(self):
        """The number of trailing dims stored densely in each value."""
        return self.ndim - self._meta.sparse_dim

    def nnz(self):
        """The stored entries of the logical sparse tensor (collective): one shard's
        count under broadcast, the sum of every rank's under split and partial_sum."""
        from .comm import allreduce_ints
        if self._nnz is None:
            local = self._local.nnz()
            set_attribute(self, "_nnz", local if self._sbp.kind == "B" else
                          int(allreduce_ints(self._placement.group, [local], "sum")[0]))
        return self._nnz

    def indices(self):
        raise TypeError("indices: a global COO tensor's entries live on several ranks; "
                        "use g.to_local().indices() for this rank's shard")

    def values(self):
        raise TypeError("values: a global COO tensor's entries live on several ranks; "
                        "use g.to_local().values() for this rank's shard")

    def to_scipy(self):
        raise TypeError("to_scipy: a global tensor's entries live on several ranks; use "
                        "g.to_local().to_scipy() for this rank's shard")

    @property
    def sbp(self):
        """How the shards make the logical tensor: split(axis), broadcast or partial_sum."""
        return self._sbp

    @property
    def placement(self):
        """The ranks holding shards."""
        return self._placement

    def to_local(self):
        """This rank's physical shard, a local tensor (gradients flow through it).

        As in OneFlow, the gradient a rank's shard receives is read under this
        tensor's sbp.  Under broadcast every rank holds the whole tensor and is
        taken to compute the same loss from it, so the gradient counts once,
        not once a rank: rank 0's goes back and the others' are dropped, and
        ``x.grad`` equals the one-process gradient (the ranks' losses must
        agree).  Under split each rank's gradient is its slice's, and under
        partial_sum each addend's goes back as it is.
        """
        if self._sbp.kind != "B":
            return self._local
        out = type(self._local)._from_kernel(self._local._data(), self._local.meta)
        return layouts.record(TO_LOCAL, [self._local], out, {"shape": self._meta.shape,
                                                             "placement": self._placement})

    def numpy(self):
        """The logical array, on every rank.

        A collective, as in OneFlow: every rank of the placement must call it.
        """
        if self.layout != "dense":
            raise TypeError(f"numpy: a global {self.layout} tensor has no numpy(); "
                            "call to_dense().numpy()")
        with autograd.no_grad():
            return to_numpy(box(self, broadcast)._local._data())

    def item(self):
        """The value of a one-element tensor (collective)."""
        if self._meta.size != 1:
            raise ValueError(f"item: the tensor has {self._meta.size} elements, expected 1")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        return (f"GlobalTensor(shape={self.shape}, dtype={self.dtype.name}, "
                f"layout={self.layout}, sbp={self._sbp!r}, placement={self._placement!r},\n"
                f"  local={self._local!r})")

    # ------------------------------------------------------------ autograd
    @property
    def stop_gradient(self):
        return self._local.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value):
        self._local.stop_gradient = value

    @property
    def is_leaf(self):
        return self._local.is_leaf

    @property
    def grad(self):
        """The gradient of a global leaf (collective): broadcast stays broadcast after an
        all-reduce, split stays split, and a dense partial_sum leaf's gradient is broadcast
        (every addend's gradient is the whole gradient).  A sparse partial_sum leaf
        returns this rank's local gradient."""
        g = self._local.grad
        if self._sbp.kind == "B":           # a collective: every rank joins or none does
            g = _on_every_rank(self, g)
        if g is None:
            return None
        if self._sbp.kind == "P" and self.layout != "dense":
            return g
        if self._sbp.kind == "B" and self.layout != "dense":
            return GlobalTensor(layouts.summed_by_position(g, self._placement.group),
                                broadcast, self._placement, self._meta)
        dst = broadcast if self._sbp.kind == "P" else self._sbp
        with autograd.no_grad():
            phys = GlobalTensor(g, self._sbp.dual(), self._placement, self._meta)
            return box(phys, dst)

    def clear_grad(self):
        self._local.clear_grad()

    def backward(self, grad_tensor=None, retain_graph=False):
        """Backpropagate from this global tensor (collective).

        ``grad_tensor`` is a global tensor of this shape (any sbp), a local tensor or
        array taken as broadcast, or None for ones.
        """
        with autograd.no_grad():
            if grad_tensor is None:
                seed = self._ones_seed()
            else:
                if not isinstance(grad_tensor, TensorBase):       # an array: a local tensor
                    grad_tensor = layout_class("dense")._wrap_array(np.asarray(grad_tensor))
                if not getattr(grad_tensor, "is_global", False):
                    grad_tensor = global_runtime("backward").to_global(
                        grad_tensor, self._placement, broadcast)
                elif grad_tensor.placement != self._placement:
                    raise ValueError(f"backward: grad_tensor is on {grad_tensor.placement!r}, "
                                     f"the tensor on {self._placement!r}; expected one "
                                     f"placement (the same communicator and ranks)")
                if list(grad_tensor.shape) != list(self.shape):   # logical: alike on every rank
                    raise ValueError(f"backward: grad_tensor has shape {list(grad_tensor.shape)}, "
                                     f"expected {list(self.shape)} (the logical shapes)")
                if self._sbp.kind == "B" and grad_tensor.sbp.kind != "B":
                    # made whole first, so the partial_sum addends are rank 0's whole seed
                    # and marked zeros: addends zero off a rank's slice, or of mixed sign,
                    # would meet an infinite derivative as 0 * inf or inf - inf = nan
                    grad_tensor = box(grad_tensor, broadcast)
                seed = box(grad_tensor, self._sbp.dual())._local
        group = self._placement.group
        autograd.run_backward(self._local, seed, retain_graph,
                              finish=lambda failure, op: shared_failure(group, failure, op))

    def _ones_seed(self):
        """This rank's shard of ones under the dual sbp, as a read-only broadcast view:
        nothing of the logical size is allocated (partial_sum addends: rank 0 holds
        the ones, the others zeros)."""
        dual = self._sbp.dual()
        place = self._placement
        shape = shard_shape(self._meta.shape, dual, place.size, place.rank)
        one = 0 if dual.kind == "P" and place.rank != 0 else 1
        scalar = to_place(np.asarray(one, self._meta.dtype), self._meta.place)
        data = xp_of(scalar).broadcast_to(scalar, shape)
        meta = self._meta.with_(layout="dense", sparse_dim=None, shape=tuple(shape))
        seed = layouts.local_tensor(data, meta)
        return autograd.mark_zero_addend(seed) if one == 0 else seed

    def detach(self):
        return GlobalTensor(self._local.detach(), self._sbp, self._placement, self._meta)

    # ------------------------------------------------------------ methods
    @property
    def T(self):
        """The tensor with its dims reversed, as the local class's ``T`` (a transpose)."""
        local_T = getattr(type(self._local), "T", None)
        if local_T is None:
            raise AttributeError(f"T: a global {self.layout} tensor has no T")
        return local_T.fget(self)

    def to_dense(self):
        """The dense global tensor with the same sbp (each rank densifies its shard)."""
        return GlobalTensor(self._local.to_dense(), self._sbp, self._placement,
                            self._meta.with_(layout="dense", sparse_dim=None))

    def __getattr__(self, name):
        """Op methods of the local tensor class (``x.reshape(...)``) work on globals."""
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(type(self._local), name, None)
        if not any(_has_op(ns, name) for ns in ("dense", "sparse")):
            method = None
        if method is None:
            raise AttributeError(f"'GlobalTensor' object has no attribute '{name}'")
        return method.__get__(self)


def _on_every_rank(leaf, g):
    """A broadcast leaf's local gradient ``g``, or zeros where this rank has none while
    another rank has one (a pass that reached the leaf on some ranks only, or failed):
    one small all-reduce, so that the collective read of ``.grad`` is joined by every rank
    or by none (None everywhere)."""
    from .comm import allreduce_ints
    if not allreduce_ints(leaf._placement.group, [int(g is not None)], "max")[0]:
        return None
    return g if g is not None else autograd.zero_addend_like(leaf._local)


#: Operators run the local tensor class's operator on the global tensor, so they
#: dispatch the same ops (dense or sparse) and take the same operands.
OPERATORS = ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "pow",
             "rpow", "matmul", "rmatmul", "eq", "ne", "lt", "le", "gt", "ge", "neg", "abs")


def _operator(name):
    dunder = f"__{name}__"

    def method(self, *args):
        local_method = getattr(type(self._local), dunder, None)
        if local_method is None:
            return NotImplemented
        out = local_method(self, *args)
        if out is NotImplemented and name in REFLECTED and getattr(args[0], "is_global", False):
            # Python tries no reflected method between two operands of one class: a dense
            # global with a sparse one runs the sparse class's, as two local tensors do.
            other_method = getattr(type(args[0]._local), f"__r{name}__", None)
            if other_method is not None:
                return other_method(args[0], self)
        return out
    method.__name__ = dunder
    method.__doc__ = f"``{dunder}`` of the local tensor class, on the global tensor."
    return method


#: The operators with a reflected form (``__radd__`` ...).
REFLECTED = frozenset({"add", "sub", "mul", "truediv", "pow", "matmul"})

for _name in OPERATORS:
    setattr(GlobalTensor, f"__{_name}__", _operator(_name))


#: Methods that run the local tensor class's method on the global tensor: indexing
#: (``g[0, 1:]`` lowers to basic_index and gather, with their SBP rules),
#: ``astype``, conversion of a one-element tensor to a Python scalar (collectives),
#: and numpy ufuncs, so an ndarray operand is a local input taken as broadcast
#: (``np.ones(3) * g`` is a global tensor, as ``np.ones(3) * t`` is a Tensor).
DELEGATED = ("__getitem__", "astype", "__float__", "__int__", "__complex__", "__bool__",
             "__index__", "_scalar", "__array_ufunc__", "__iter__", "__array_function__",
             "__format__")


def _delegated(name):
    def method(self, *args, **kwargs):
        local_method = getattr(type(self._local), name, None)
        if local_method is None:
            if name == "__array_ufunc__":
                return _deferred_ufunc(self, *args, **kwargs)
            raise TypeError(f"{name}: a global {self.layout} tensor does not support it "
                            f"(its local class {type(self._local).__name__} has none)")
        return local_method(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``{name}`` of the local tensor class, on the global tensor."
    return method


#: numpy's ufuncs that stand for a binary operator.
_UFUNC_OPERATORS = {np.add: "add", np.subtract: "sub", np.multiply: "mul",
                    np.true_divide: "truediv", np.power: "pow", np.matmul: "matmul"}


def _deferred_ufunc(self, ufunc, method, *inputs, **kwargs):
    """What numpy's deferral gives a local class that sets ``__array_ufunc__ = None`` (the
    sparse ones): ``np.float64(2) * g`` runs g's reflected operator, as ``* s`` does for a
    local sparse s; any other ufunc call is NotImplemented (numpy raises TypeError)."""
    op = _UFUNC_OPERATORS.get(ufunc)
    if method != "__call__" or op is None or kwargs or len(inputs) != 2:
        return NotImplemented
    a, b = inputs
    if b is self:
        return getattr(self, f"__r{op}__")(a)
    return getattr(self, f"__{op}__")(b) if a is self else NotImplemented


for _name in DELEGATED:
    setattr(GlobalTensor, _name, _delegated(_name))
GlobalTensor.__hash__ = object.__hash__     # == is elementwise; hash by identity


def _has_op(namespace, name):
    try:
        get_op(namespace, name)
    except KeyError:
        return False
    return True


def _to_local_backward(node, out_grad):
    """A broadcast tensor's shard gradient, read as broadcast, in the physical
    gradient's partial_sum form: rank 0 keeps it, the others hold zeros."""
    shape, place = node.attrs["shape"], node.attrs["placement"]
    if out_grad is None:
        return {"x": None}
    return {"x": layouts.box_local(out_grad, shape, broadcast, partial_sum, place)[0]}


TO_LOCAL = OpSpec(name="to_local", namespace="dist", args=(Arg("x", "Tensor"),),
                  outputs=("out",), backward_fn=_to_local_backward)


def box(g, dst):
    """The global tensor ``g`` re-boxed to ``dst``, recorded for autograd."""
    if g.sbp == dst:
        return g
    shape = g.meta.shape
    out, steps = layouts.box_local(g._local, shape, g.sbp, dst, g.placement)
    out = layouts.record(layouts.BOXING, [g._local], out,
                         {"shape": shape, "src": g.sbp, "dst": dst, "placement": g.placement,
                          "steps": steps})
    return GlobalTensor(out, dst, g.placement, g.meta)
