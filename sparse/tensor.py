"""SparseCooTensor and SparseCsrTensor: immutable sparse tensors with autograd.

Build them with :func:`sparse.sparse_coo_tensor`, :func:`sparse.sparse_csr_tensor`,
:func:`sparse.from_scipy` or ``dense.Tensor.to_sparse_coo/to_sparse_csr``.
Their buffers are the kernels' data bundles (:mod:`kernels.sparse.data`);
``indices()``, ``values()``, ``crows()`` and ``cols()`` are dense Tensors
sharing that memory.
"""
from __future__ import annotations

import numbers
from math import prod
from typing import Any, Iterator

import numpy as np

import dense
from dense.tensor import _sizes, sequence_operand, sparse_comparison_error
from kernels.core import dispatch
from kernels.core.autograd import grad_enabled, no_grad
from kernels.core.annotations import IntArray
from kernels.core.meta import MetaTensor
from kernels.core.owned import lock
from kernels.core.tensor import (TensorBase, frozen_delattr, frozen_setattr, register_layout,
                                 set_attribute)
from kernels.core.xp import place_of, to_numpy, to_place, xp_of
from kernels.sparse.convert import coo_of_csr, gather_dense, lookup_values
from kernels.sparse.data import CooData, CsrData, fold_dense


def _op(name, *args):
    """Run sparse op ``name`` through dispatch (how every tensor method reaches its op)."""
    return dispatch.call("sparse", name, *args)


def _arith():
    from . import arith
    return arith


_new = object.__new__


def _locked(data):
    """A data bundle whose arrays are locked (:func:`kernels.core.owned.lock`); rebuilt
    only when an array comes back as another object (a pooled block's read-only view)."""
    for v in data:
        if type(v) is np.ndarray and v.base is None:
            v.setflags(False)               # lock's whole work for an array with no base
        elif isinstance(v, np.ndarray) and lock(v) is not v:
            return type(data)(*[lock(v) for v in data])
    return data


def _operand(op, symbol, other):
    """An operator's other operand: a list or tuple as a numpy array, else as it is; a
    MetaTensor (no data) raises TypeError naming ``op``, as the sparse.* functions do."""
    if isinstance(other, MetaTensor):
        raise TypeError(f"{op}: the operand of {symbol} is a MetaTensor (metadata without "
                        f"data); pass a Tensor, or call sparse.{op}.infer_meta")
    return sequence_operand(op, symbol, other) if isinstance(other, (list, tuple)) else other


def _refusing(symbol):
    """A comparison method of sparse tensors, which raises TypeError naming ``symbol``."""
    def compare(x, y):
        if isinstance(y, (TensorBase, np.ndarray, np.generic, numbers.Number, list, tuple)) \
                or type(y).__module__.startswith("cupy"):
            raise sparse_comparison_error(symbol, x, y)
        return NotImplemented
    return compare


_NUMPY_REFUSAL = ("{what} does not take a sparse tensor: use x.to_dense().numpy() for a "
                  "numpy array, x.to_scipy() for a scipy sparse array, or the sparse.* ops")


class _SparseTensor(TensorBase):
    """What COO and CSR tensors share: buffers, attributes, conversions, autograd."""

    #: Tensors are immutable: assigning or deleting an attribute raises AttributeError
    #: (only ``stop_gradient`` is settable).
    __setattr__ = frozen_setattr
    __delattr__ = frozen_delattr

    def __init__(self, data: Any, stop_gradient: bool = True) -> None:
        """A tensor of the buffer bundle ``data`` (:mod:`kernels.sparse.data`), checked as
        :func:`sparse.sparse_coo_tensor` and :func:`sparse.sparse_csr_tensor` check their
        arguments, and copied; its flags (``coalesced``) are found again, not trusted.
        TypeError for anything but the layout's bundle."""
        set_attribute(self, "_d", self._checked(data)._d)
        if stop_gradient is not True:     # else the class defaults are the leaf state
            self._init_autograd(stop_gradient)

    @classmethod
    def _own(cls, data, stop_gradient=True):
        """Wrap buffers phisparse made and checked (no copy, no check)."""
        t = cls._from_kernel(data, None)
        if stop_gradient is not True:
            t._init_autograd(stop_gradient)
        return t

    @classmethod
    def _checked(cls, data):
        """A tensor the public constructor of the layout (:data:`CHECKED`) builds from
        ``data``'s buffers."""
        if type(data) is not cls._bundle():
            raise TypeError(f"{cls.__name__}: expected a {cls._bundle().__name__} bundle "
                            f"(kernels.sparse.data), got {type(data).__name__}; build "
                            f"sparse tensors with sparse.sparse_coo_tensor or "
                            f"sparse.sparse_csr_tensor")
        return CHECKED[cls.layout](data)

    def __reduce__(self):
        """Pickle and deepcopy keep the buffers and stop_gradient, not the graph."""
        fields = [to_numpy(v) if hasattr(v, "shape") and not isinstance(v, tuple) else v
                  for v in self._d]
        return _rebuild, (type(self), type(self._d), fields, self.place, self._stop_gradient)

    # ------------------------------------------------------------ internals
    @classmethod
    def _from_kernel(cls, data, meta):
        t = _new(cls)
        set_attribute(t, "_d", _locked(data))
        return t

    def _data(self):
        return self._d

    def _with_values(self, values):
        return type(self)._own(self._d._replace(values=values))

    def _root_grad(self, grad_tensor):
        """The gradient seed: grad_tensor's value at each stored entry's coordinate."""
        values = self._d.values
        if grad_tensor is None:
            return self._with_values(xp_of(values).ones_like(values))
        g = grad_tensor
        if not isinstance(g, TensorBase):
            g = dense.to_tensor(g)
        if g.shape != self.shape:
            raise ValueError(f"backward: grad_tensor has shape {g.shape}, expected "
                             f"{self.shape} (the tensor's shape)")
        if self._takes_dense_grad():
            g = g if g.layout == "dense" else g.to_dense()
            return dense.Tensor(to_place(g._data(), self.place).astype(values.dtype, copy=False))
        if g.layout == "dense":
            got = gather_dense(to_place(g._data(), self.place), self._coords(), "backward")
        elif g.layout == self.layout and self._unique() and g._same_pattern(self):
            got = g._d.values   # one entry per coordinate: the values are the lookup
        else:
            got = lookup_values(self._coords(), self._d.shape, g._coo(), "backward")
        self._check_grad_dtype(got.dtype)
        return self._with_values(to_place(got, self.place).astype(values.dtype, copy=False))

    def _takes_dense_grad(self):
        """True if the op that made this tensor has a backward kernel for a dense gradient.

        Such an op (a dense -> sparse conversion) is the identity on the
        logical tensor, so a ``backward(G)`` seed reaches it whole instead of
        being read at this tensor's stored entries; so does its output made
        global or re-boxed (``to_global``), the identity too.
        """
        node = self._grad_fn
        if node is None or node.freed:         # a freed graph: backward raises after
            return False
        if node.spec.namespace == "dist" and node.spec.name in ("boxing", "to_global"):
            return node.inputs[0]._takes_dense_grad()      # the identity, made global
        if node.spec.backward is None:
            return False
        bwd = dispatch.get_op(node.spec.namespace, node.spec.backward)
        layouts = []
        for a in bwd.tensor_args:
            t = node.saved.get(a.name) if a.name != "out_grad" else None
            t = t[0] if isinstance(t, (list, tuple)) and t else t   # a Tensor[] by its first
            if a.name != "out_grad" and (t is None or isinstance(t, (list, tuple))):
                return False
            layouts.append("dense" if t is None else t.layout)
        return any(sig.in_layouts == tuple(layouts) for sig in bwd.kernels)

    def _add_grad(self, other):
        if not (other.layout == self.layout and other._same_pattern(self)):
            raise RuntimeError("backward: gradients of one sparse tensor arrived with "
                               "different sparsity patterns")
        return self._with_values(self._d.values + other._d.values)

    # ------------------------------------------------------------ attributes
    @property
    def shape(self) -> list[int]:
        """The shape as a list of ints, as in Paddle."""
        return list(self._d.shape)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the values."""
        return self._d.values.dtype

    @property
    def place(self) -> str:
        """'cpu' or 'gpu'."""
        return place_of(self._d.values)

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self._d.shape)

    def nnz(self) -> int:
        """The number of stored entries (duplicates counted)."""
        return int(self._d.nnz)

    def numel(self) -> int:
        """The number of logical elements (the product of the shape), as torch and Paddle
        count a sparse tensor's; :meth:`nnz` counts the stored entries."""
        return prod(self._d.shape)

    def values(self) -> dense.Tensor:
        """The stored values as a dense Tensor sharing this tensor's memory.

        Differentiable (see :func:`sparse.values`): when this tensor needs a
        gradient, the result does too, and its gradient reaches the stored
        entries.
        """
        if self.stop_gradient or not grad_enabled():
            return dense.Tensor._own(self._d.values)
        return _op("values", self)

    def is_sparse_coo(self) -> bool:
        """True for a COO tensor."""
        return self.layout == "sparse_coo"

    def is_sparse_csr(self) -> bool:
        """True for a CSR tensor."""
        return self.layout == "sparse_csr"

    # ------------------------------------------------------------ ops
    def to_dense(self) -> dense.Tensor:
        """See :func:`sparse.to_dense`."""
        return _op("to_dense", self)

    def to_sparse_csr(self) -> SparseCsrTensor:
        """See :func:`sparse.to_sparse_csr`; a CSR tensor returns itself."""
        return self if self.is_sparse_csr() else _op("to_sparse_csr", self)

    def reshape(self, *shape: IntArray, order: str = "C") -> _SparseTensor:
        """See :func:`sparse.reshape`; sizes may be given one by one or as a list."""
        return _op("reshape", self, _sizes(shape), order)

    # ------------------------------------------------------------ operators
    # A list or tuple operand becomes an array, as numpy and dense.Tensor make it.
    __array_ufunc__ = None     # numpy defers: np.float64(2) * s calls s.__rmul__

    def __add__(self, other):
        return _arith().add(self, _operand("add", "+", other))

    def __radd__(self, other):
        return _arith().add(_operand("add", "+", other), self)

    def __sub__(self, other):
        return _arith().subtract(self, _operand("subtract", "-", other))

    def __rsub__(self, other):
        return _arith().subtract(_operand("subtract", "-", other), self)

    def __mul__(self, other):
        return _op("multiply", self, _operand("multiply", "*", other))

    def __rmul__(self, other):
        return _op("multiply", _operand("multiply", "*", other), self)

    def __truediv__(self, other):
        return _arith().divide(self, _operand("divide", "/", other))

    def __rtruediv__(self, other):
        return _arith().divide(_operand("divide", "/", other), self)

    # Comparisons of sparse tensors are not supported (as in torch and Paddle): with a
    # tensor, an array, a number or a list they raise TypeError naming the operator
    # (never Python's identity answer); with anything else (None) Python decides.
    __hash__ = TensorBase.__hash__

    __eq__, __ne__ = _refusing("=="), _refusing("!=")
    __lt__, __le__, __gt__, __ge__ = (_refusing(s) for s in ("<", "<=", ">", ">="))

    def __pow__(self, factor, *modulo):
        if modulo:
            raise TypeError(f"pow: takes no modulo (a third argument to pow), got "
                            f"{modulo[0]!r}")
        return _arith().power(self, factor)

    def __neg__(self):
        return _op("neg", self)

    def __abs__(self):
        return _arith().absolute(self)

    # ------------------------------------------------------------ Python protocols
    # As for dense tensors and numpy: float(), int(), complex() and bool() of a
    # one-element tensor give its logical value (duplicates summed), len() is the
    # first dim (as torch); iteration and indexing have no sparse op behind them
    # and raise TypeError naming what to use instead.
    def _scalar(self, what):
        """The logical value of a one-element tensor as a one-element dense Tensor (a
        global one too: its logical shape, not a shard's)."""
        n = prod(self.shape)
        if n != 1:
            ambiguous = "; its truth value is ambiguous" if what == "bool" else ""
            raise ValueError(f"{what}(): only a one-element tensor converts to a Python "
                             f"scalar; this {self.layout} tensor has shape {self.shape} "
                             f"({n} elements){ambiguous}")
        with no_grad():
            return _op("to_dense", self)

    def __bool__(self) -> bool:
        """The truth of a one-element tensor's logical value; ValueError for any other
        size, as for dense tensors and numpy (an all-zero sparse tensor is no 'empty')."""
        return bool(self._scalar("bool"))

    def __float__(self) -> float:
        """The logical value of a one-element tensor (duplicates summed) as a float."""
        return float(self._scalar("float"))

    def __int__(self) -> int:
        """The logical value of a one-element tensor (duplicates summed) as an int."""
        return int(self._scalar("int"))

    def __complex__(self) -> complex:
        """The logical value of a one-element tensor (duplicates summed) as a complex."""
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        """Refused: a sparse tensor is no index (``lst[s]``, ``range(s)``); use int(s)."""
        raise TypeError(f"operator.index(): a {self.layout} tensor is not an index; use "
                        "int(x) for the value of a one-element tensor")

    def __len__(self) -> int:
        """The size of the first dim (as torch); a 0-d tensor has no len() (TypeError)."""
        if self.ndim == 0:
            raise TypeError(f"len() of a 0-d {self.layout} tensor")
        return int(self._d.shape[0])

    def __iter__(self) -> Iterator[Any]:
        """Refused: iterating a sparse tensor would need an op per row."""
        raise TypeError(f"iteration over a {self.layout} tensor is not supported; use "
                        "sparse.index_select or sparse.slice, or iterate over x.to_dense()")

    def __getitem__(self, key: Any) -> Any:
        """Refused: sparse tensors have no indexing operator."""
        raise TypeError(f"getitem: a {self.layout} tensor cannot be indexed (x[{key!r}]); use "
                        "sparse.slice or sparse.index_select, or index x.to_dense()")

    # ------------------------------------------------------------ numpy
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """Refuse: numpy would make a 0-d object array of a sparse tensor."""
        raise TypeError(_NUMPY_REFUSAL.format(what="np.asarray()/np.array()"))

    def __array_function__(self, func, types, args, kwargs):
        """Refuse numpy's functions (``np.sum(s)``): they take dense arrays."""
        raise TypeError(_NUMPY_REFUSAL.format(what=f"numpy.{func.__name__}()"))

    def __matmul__(self, other: Any) -> Any:
        """``self @ other``: :func:`sparse.matmul`."""
        return _op("matmul", self, _operand("matmul", "@", other))

    def __rmatmul__(self, other: Any) -> Any:
        """``other @ self`` for a dense ``other``: :func:`sparse.matmul`."""
        return _op("matmul", _operand("matmul", "@", other), self)

    def __repr__(self) -> str:
        head = (f"Tensor(shape={self.shape}, dtype={self.dtype.name}, "
                f"place=Place({self.place}), stop_gradient={self.stop_gradient}")
        parts = [f"{name}=" + np.array2string(to_numpy(a), separator=", ", threshold=20,
                                              prefix=" " * (8 + len(name)))
                 for name, a in self._buffers()]
        return head + ",\n       " + ",\n       ".join(parts) + ")"


class SparseCooTensor(_SparseTensor):
    """A COO tensor: indices [sparse_dim, nnz] and values [nnz, *dense_dims]."""

    layout = "sparse_coo"

    @staticmethod
    def _bundle():
        return CooData

    @property
    def meta(self) -> MetaTensor:
        """Shape, dtype, layout, place and sparse_dim as a MetaTensor."""
        if self._meta is None:
            set_attribute(self, "_meta", MetaTensor(self._d.shape, self.dtype, self.layout,
                                                    self.place, sparse_dim=self._d.sparse_dim))
        return self._meta

    def indices(self) -> dense.Tensor:
        """The indices [sparse_dim, nnz] as a dense Tensor sharing this tensor's memory."""
        return dense.Tensor._own(self._d.indices)

    def sparse_dim(self) -> int:
        """The number of indexed (leading) dims."""
        return int(self._d.sparse_dim)

    def dense_dim(self) -> int:
        """The number of trailing dims stored densely in each value."""
        return int(self._d.dense_dim)

    def is_coalesced(self) -> bool:
        """True if the coordinates are known unique and sorted in C order."""
        return bool(self._d.coalesced)

    def coalesce(self) -> SparseCooTensor:
        """See :func:`sparse.coalesce`."""
        return _op("coalesce", self)

    def crows(self) -> dense.Tensor:
        """A COO tensor has no row pointers: TypeError naming what it has."""
        raise TypeError("crows: a sparse_coo tensor stores indices() and values(); "
                        "x.to_sparse_csr().crows() gives CSR row pointers")

    def cols(self) -> dense.Tensor:
        """A COO tensor has no column array: TypeError naming what it has."""
        raise TypeError("cols: a sparse_coo tensor stores indices() and values(); "
                        "x.to_sparse_csr().cols() gives CSR columns")

    def to_sparse_coo(self, sparse_dim: int | None = None) -> SparseCooTensor:
        """See :func:`sparse.to_sparse_coo`; None or the current sparse_dim returns itself."""
        if sparse_dim is None or (type(sparse_dim) is int and sparse_dim == self.sparse_dim()):
            return self                 # anything else is checked by the op
        return _op("to_sparse_coo", self, sparse_dim)

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.coo_array`` copy; dense dims are folded into coordinates first.

        scipy has no float16, so float16 values become float32 (exactly).
        """
        import scipy.sparse
        d = fold_dense(self._d)
        m = scipy.sparse.coo_array((_scipy_values(d.values), tuple(to_numpy(d.indices))),
                                   shape=d.shape)
        m.has_canonical_format = bool(d.coalesced)
        return m

    def _coords(self):
        return self._d.indices

    def _unique(self):
        """True if no two entries are known to share a coordinate."""
        return bool(self._d.coalesced)

    def _coo(self):
        return self._d

    def _same_pattern(self, other):
        return _same(self._d.indices, other._d.indices)

    def _buffers(self):
        return [("indices", self._d.indices), ("values", self._d.values)]


class SparseCsrTensor(_SparseTensor):
    """A 2-D or batched 3-D CSR tensor in Paddle's layout: crows, cols, values."""

    layout = "sparse_csr"

    @staticmethod
    def _bundle():
        return CsrData

    @property
    def meta(self) -> MetaTensor:
        """Shape, dtype, layout and place as a MetaTensor."""
        if self._meta is None:
            set_attribute(self, "_meta", MetaTensor(self._d.shape, self.dtype, self.layout,
                                                    self.place))
        return self._meta

    def indices(self) -> dense.Tensor:
        """A CSR tensor has no index matrix: TypeError naming what it has."""
        raise TypeError("indices: a sparse_csr tensor stores crows() and cols(); "
                        "x.to_sparse_coo().indices() gives the COO index matrix")

    def coalesce(self) -> SparseCooTensor:
        """See :func:`sparse.coalesce` (COO only: a CSR tensor raises its TypeError)."""
        return _op("coalesce", self)

    def crows(self) -> dense.Tensor:
        """The compressed row pointers, batch * (rows + 1) of them, sharing memory."""
        return dense.Tensor._own(self._d.crows)

    def cols(self) -> dense.Tensor:
        """The column of each stored value, sharing memory."""
        return dense.Tensor._own(self._d.cols)

    def sparse_dim(self) -> int:
        """Every dim of a CSR tensor is sparse."""
        return self.ndim

    def dense_dim(self) -> int:
        """0: a CSR tensor stores scalars."""
        return 0

    def to_sparse_coo(self, sparse_dim: int | None = None) -> SparseCooTensor:
        """See :func:`sparse.to_sparse_coo`; ``sparse_dim`` must be the rank (the default)."""
        return _op("to_sparse_coo", self, self.ndim if sparse_dim is None else sparse_dim)

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.csr_array`` copy of a 2-D tensor (float16 becomes float32)."""
        import scipy.sparse
        if self.ndim != 2:
            raise ValueError(f"to_scipy: scipy has no batched CSR; this tensor has shape "
                             f"{self.shape}; reshape it to 2-D or use to_sparse_coo()")
        d = self._d
        return scipy.sparse.csr_array(
            (_scipy_values(d.values), to_numpy(d.cols), to_numpy(d.crows)), shape=d.shape)

    def _coords(self):
        return coo_of_csr(self._d).indices

    def _unique(self):
        """CSR keeps no coalesced flag, so entries may share a coordinate."""
        return False

    def _coo(self):
        return coo_of_csr(self._d)

    def _same_pattern(self, other):
        return _same(self._d.crows, other._d.crows) and _same(self._d.cols, other._d.cols)

    def _buffers(self):
        return [("crows", self._d.crows), ("cols", self._d.cols), ("values", self._d.values)]


#: layout -> f(bundle): a tensor that layout's public constructor builds from the bundle's
#: buffers, checked and copied; set by :mod:`sparse.creation`, which imports this module.
CHECKED = {}


def _rebuild(cls, data_cls, fields, place, stop_gradient):
    fields = [to_place(v, place) if isinstance(v, np.ndarray) else v for v in fields]
    return cls._own(data_cls(*fields), stop_gradient)


def _scipy_values(values):
    """A host copy of ``values`` in a dtype scipy.sparse supports (float16 -> float32)."""
    out = to_numpy(values)
    return out.astype(np.float32) if out.dtype == np.float16 else out


def _same(a, b):
    """True if two index buffers are one array or hold equal values."""
    if a is b:
        return True
    return a.shape == b.shape and bool(xp_of(a).all(a == b))


register_layout("sparse_coo", SparseCooTensor)
register_layout("sparse_csr", SparseCsrTensor)

__all__ = ["SparseCooTensor", "SparseCsrTensor"]
