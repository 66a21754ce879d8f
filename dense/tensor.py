"""dense.Tensor: an immutable n-D array on 'cpu' (numpy) or 'gpu' (cupy), with autograd."""
from __future__ import annotations

import inspect
import numbers
from typing import Any, Iterator

import numpy as np

from kernels.core import dispatch
from kernels.core.annotations import DataType, IntArray
from kernels.core.dtypes import big_python_ints, canonical_dtype
from kernels.core.meta import MetaTensor
from kernels.core.owned import lock, owned, owned_copy, share, unique_data
from kernels.core.size import check_bytes, check_numpy_span, memory_limit
from kernels.core.tensor import (TensorBase, frozen_delattr, frozen_setattr, register_layout,
                                 named, set_attribute)
from kernels.core.xp import canonical_place, check_place, place_of, to_numpy, to_place, xp_of
from kernels.infermeta.creation import cast_values

from ._indexing import getitem
from ._ops import api_op, op_spec


_new = object.__new__
_UFUNC_OPS = {"add": "add", "subtract": "subtract", "multiply": "multiply",
              "divide": "divide", "power": "pow", "maximum": "maximum", "minimum": "minimum",
              "equal": "equal", "not_equal": "not_equal", "less": "less_than",
              "less_equal": "less_equal", "greater": "greater_than",
              "greater_equal": "greater_equal", "negative": "neg", "absolute": "abs",
              "exp": "exp", "log": "log", "sqrt": "sqrt", "square": "square", "sin": "sin",
              "cos": "cos", "tanh": "tanh", "matmul": "matmul"}


def _is_operand(value):
    return isinstance(value, (Tensor, np.ndarray, numbers.Number, np.bool_)) \
        or type(value).__module__.startswith("cupy") \
        or (getattr(value, "is_global", False) and value.layout == "dense")


#: The Python operator of each binary op, for messages.
_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "pow": "**",
            "matmul": "@", "equal": "==", "not_equal": "!=", "less_than": "<",
            "less_equal": "<=", "greater_than": ">", "greater_equal": ">="}
_COMPARISONS = frozenset({"equal", "not_equal", "less_than", "less_equal", "greater_than",
                          "greater_equal"})


def sequence_operand(op, symbol, value):
    """A list or tuple operand of an operator as numpy makes it an array (``t == [1, 2]``
    compares elementwise); ValueError naming ``op`` if it cannot become one (ragged)."""
    try:
        return np.array(value)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{op}: the {type(value).__name__} operand of {symbol} cannot become "
                         f"an array ({exc}); expected a rectangular list of numbers") from None


def sparse_comparison_error(symbol, x, y):
    """The TypeError for a comparison with a sparse operand (unsupported, as in torch)."""
    return TypeError(f"{symbol}: comparisons with a sparse tensor are not supported (got "
                     f"{type(x).__name__} {symbol} {type(y).__name__}); compare dense "
                     "tensors: convert with to_dense() first")


#: The method Python asks the other operand for when an operator of ours gives up.
_REFLECTIONS = {"add": "__radd__", "subtract": "__rsub__", "multiply": "__rmul__",
                "divide": "__rtruediv__", "pow": "__rpow__", "matmul": "__rmatmul__",
                "less_than": "__gt__", "less_equal": "__ge__", "greater_than": "__lt__",
                "greater_equal": "__le__"}


def _defers(other, name, reflected):
    """True if Python should ask ``other`` to run the operator (NotImplemented): a
    forward operator whose other operand defines the reflected method itself, as a
    user's class may; never a string, which would repeat itself a one-element tensor's
    times."""
    if reflected or isinstance(other, (str, bytes, bytearray)):
        return False
    method = _REFLECTIONS[name]
    return getattr(type(other), method, None) not in (None, getattr(object, method, None))


def _binary(name, reflected=False):
    """An operator method running op ``name`` (``reflected``: other op self), as
    :func:`dense.<name>` does, straight through dispatch (the attributes' defaults
    are filled there).  A list or tuple operand becomes an array, as in numpy; a
    sparse operand of a comparison raises TypeError; ``==`` and ``!=`` with any other
    object get NotImplemented (``t == None`` is False, as in torch and Paddle), and so
    do operands Python may ask (:func:`_defers`); anything else is a TypeError."""
    symbol = _SYMBOLS[name]

    def method(self, other, *modulo):
        if modulo:
            raise TypeError(f"{name}: takes no modulo (a third argument to pow), got "
                            f"{modulo[0]!r}")
        if type(other) not in _OPERANDS and not _is_operand(other):
            if isinstance(other, (list, tuple)):
                other = sequence_operand(name, symbol, other)
            elif name in _COMPARISONS and isinstance(other, TensorBase) \
                    and other.layout in ("sparse_coo", "sparse_csr"):
                raise sparse_comparison_error(symbol, other if reflected else self,
                                              self if reflected else other)
            elif name in ("equal", "not_equal") or isinstance(other, TensorBase) \
                    or _defers(other, name, reflected):       # == None: False, as torch
                return NotImplemented
            else:
                raise TypeError(f"{name}: the other operand of {symbol} must be a Tensor, a "
                                f"numpy array, a number or a list of numbers, got "
                                f"{type(other).__name__}")
        return dispatch.run(op_spec(name), [other, self] if reflected else [self, other], [])
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    method.__doc__ = f"See :func:`dense.{name}`."
    return method


class Tensor(TensorBase):
    """A dense tensor.  Build one with :func:`dense.to_tensor`.

    ``Tensor(array)`` copies a caller's array (never touching its flags)
    unless it is already a locked tensor buffer (:mod:`kernels.core.owned`).
    """

    layout = "dense"
    #: Tensors are immutable: assigning or deleting an attribute raises AttributeError
    #: (only ``stop_gradient`` is settable).
    __setattr__ = frozen_setattr
    __delattr__ = frozen_delattr

    def __init__(self, array: Any, stop_gradient: bool = True) -> None:
        if isinstance(array, np.generic):
            array = np.asarray(array)
        if not (isinstance(array, np.ndarray) or type(array).__module__.startswith("cupy")):
            raise TypeError(f"Tensor: expected a numpy or cupy array, got "
                            f"{type(array).__name__}; dense.to_tensor converts other data")
        canonical_dtype(array.dtype, "Tensor", "array of dtype")
        set_attribute(self, "_array", owned(array))
        self._init_autograd(stop_gradient)

    # ------------------------------------------------------------ internals
    @classmethod
    def _own(cls, array, stop_gradient=True):
        """Wrap an array phisparse made (no copy): it is locked, never shared with a caller."""
        t = _new(cls)
        set_attribute(t, "_array", lock(array))
        if stop_gradient is not True:     # else the class defaults are the leaf state
            t._init_autograd(stop_gradient)
        return t

    @classmethod
    def _wrap_array(cls, array):
        """Wrap a caller's array: shared if it is a locked tensor buffer, else copied."""
        return cls(array)

    @classmethod
    def _from_kernel(cls, data, meta):
        if type(data) is not np.ndarray:    # a numpy scalar (a full reduction), cupy, ...
            data = (np if isinstance(data, (np.generic, numbers.Number)) else
                    xp_of(data)).asarray(data)
            if type(data) is not np.ndarray:
                return cls._own(data)
        t = _new(cls)                       # _own, inline for a numpy array
        if data.base is None:
            data.setflags(False)            # lock's whole work for an array with no base
            set_attribute(t, "_array", data)
        else:
            set_attribute(t, "_array", lock(data))
        return t

    def __reduce__(self):
        """Pickle and deepcopy keep the data and stop_gradient, not the graph (as a leaf);
        a tensor made from a broadcast view keeps its unique data only."""
        unique = unique_data(self._array)
        if unique is not None:
            return _rebuild_broadcast, (to_numpy(unique), self.shape, self.place,
                                        self._stop_gradient)
        return _rebuild, (to_numpy(self._array), self.place, self._stop_gradient)

    def _data(self):
        return self._array

    @property
    def meta(self) -> MetaTensor:
        """Shape, dtype, layout and place as a :class:`kernels.MetaTensor`."""
        if self._meta is None:
            a = self._array
            set_attribute(self, "_meta", MetaTensor(a.shape, a.dtype, "dense", place_of(a)))
        return self._meta

    def _root_grad(self, grad_tensor):
        if grad_tensor is None:
            return Tensor._own(xp_of(self._array).ones(self._array.shape, self._array.dtype))
        g = grad_tensor
        if getattr(g, "layout", None) in ("sparse_coo", "sparse_csr"):
            g = g.to_dense()
        g = g if isinstance(g, Tensor) else to_tensor(g)
        if g.shape != self.shape:
            raise ValueError(f"backward: grad_tensor has shape {g.shape}, expected "
                             f"{self.shape} (the tensor's shape)")
        self._check_grad_dtype(g.dtype)
        return Tensor._own(to_place(g._array, self.place).astype(self.dtype, copy=False))

    def _add_grad(self, other):
        return Tensor._own(self._array + other._array)

    # ------------------------------------------------------------ attributes
    @property
    def shape(self) -> list[int]:
        """The shape as a list of ints, as in Paddle."""
        return list(self._array.shape)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype."""
        return self._array.dtype

    @property
    def place(self) -> str:
        """'cpu' or 'gpu'."""
        return place_of(self._array)

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return self._array.ndim

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(self._array.size)

    def numel(self) -> int:
        """The number of elements."""
        return self.size

    def numpy(self) -> np.ndarray:
        """A host numpy copy that the caller may change freely.

        A tensor made from a broadcast view holds only its unique data; a copy
        of it that would not fit in memory raises ValueError naming ``numpy``.
        """
        a = self._array
        if 0 in a.strides:
            check_bytes("numpy", f"a copy of the tensor of shape {list(a.shape)} and dtype "
                        f"{a.dtype.name}", a.size * a.itemsize, "of values")
        return to_numpy(a)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        if self.size != 1:
            raise ValueError(f"item: the tensor has {self.size} elements, expected 1")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        """The values as nested Python lists (a scalar for a 0-d tensor)."""
        return self.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(t)`` is a read-only view of a CPU tensor's data; else a copy.

        ``copy=False`` raises ValueError, as numpy does, where a copy is needed
        (another dtype, or a tensor on the GPU).
        """
        if copy is not None and not isinstance(copy, (bool, np.bool_)):
            raise TypeError(f"__array__: copy must be True, False or None, got {copy!r} of "
                            f"type {type(copy).__name__}")
        if dtype is not None:
            try:
                dtype = np.dtype(dtype)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"__array__: dtype {dtype!r} is not a numpy dtype ({exc})") \
                    from None
        converts = dtype is not None and dtype != self.dtype
        if copy is False and (converts or self.place != "cpu"):
            raise ValueError(f"__array__: copy=False, but a {self.place} tensor of dtype "
                             f"{self.dtype.name} can become an array of dtype "
                             f"{np.dtype(dtype or self.dtype).name} only by copying")
        if self.place != "cpu" or copy or converts:
            out = self.numpy()
            return out if dtype is None else out.astype(dtype, copy=False)
        return share(self._array)

    def data_ptr(self) -> int:
        """The address of the first element, as in Paddle and torch: equal for shared memory."""
        a = self._array
        return a.data.ptr if self.place == "gpu" else a.__array_interface__["data"][0]

    # ------------------------------------------------------------ Python protocols
    def __len__(self) -> int:
        """The size of the first dim; a 0-d tensor has no len() (TypeError), as in numpy."""
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The tensors along the first dim, each differentiable (``dense.gather`` of one index)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        n = self.shape[0]
        return (dispatch.call("dense", "gather", self, np.array(i), 0) for i in range(n))

    def _scalar(self, what):
        if self.size != 1:
            ambiguous = "; its truth value is ambiguous" if what == "bool" else ""
            raise ValueError(f"{what}(): only a one-element tensor converts to a Python scalar; "
                             f"this one has shape {self.shape} ({self.size} elements)"
                             f"{ambiguous}")
        return self.item()

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        value = self._scalar("int")
        try:
            return int(value)
        except (ValueError, OverflowError):       # NaN, ±inf
            raise ValueError(f"int(): the tensor holds {value!r}, which has no integer "
                             "value; expected a finite number") from None

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __bool__(self) -> bool:
        """The truth of a one-element tensor; ValueError for any other size, as numpy."""
        return bool(self._scalar("bool"))

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.4f}"``; an empty spec too, as
        numpy's 0-d arrays and torch do); another shape formats as ``str`` with an empty
        spec, and any other spec is a TypeError."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if not spec:
            return str(self)
        raise TypeError(f"format: spec {spec!r} needs a 0-d tensor (a number); this one has "
                        f"shape {self.shape}; format t.item() or t.numpy() instead")

    def __index__(self) -> int:
        """A one-element integer tensor as an index (``range(t)``, ``lst[t]``), of any rank
        as Paddle's ``Tensor.__index__`` (Paddle code indexes with shape-[1] tensors);
        numpy converts only 0-d arrays.  A non-integer dtype is a TypeError."""
        if self.dtype.kind not in "iu":
            raise TypeError(f"operator.index(): only an integer tensor is an index, "
                            f"got dtype {self.dtype.name}")
        return int(self._scalar("operator.index"))

    def __array_function__(self, func, types, args, kwargs):
        """numpy's functions (``np.sum(t)``, ``np.concatenate``) see a tensor as its values.

        They get ``np.asarray(t)`` in its place and return numpy arrays, with
        no gradient; phisparse's own ops (``dense.sum``) keep tensors.
        """
        return func(*_as_arrays(args), **_as_arrays(kwargs))

    # ------------------------------------------------------------ DLPack
    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Export the data through DLPack (the array API's protocol), without a copy.

        A consumer that asks for DLPack 1.0 or later (``max_version``: numpy
        2.1 and later, cupy 14) gets the buffer flagged read-only, and numpy
        makes its array read-only.  The older, unversioned protocol (a plain
        ``t.__dlpack__()``) cannot say read-only, so a CPU tensor then exports
        a copy, as ``copy=None`` allows ("copy if needed"); ``copy=False``
        refuses it (BufferError).  A consumer that ignores the flag can write
        into the tensor's memory, which breaks its immutability: copy on that side.
        """
        if stream is not None and self.place == "cpu":
            raise ValueError(f"__dlpack__: stream must be None for a CPU tensor (the array "
                             f"API: a device without streams accepts only None), got {stream!r}")
        if copy is not None and not isinstance(copy, (bool, np.bool_)):
            raise TypeError(f"__dlpack__: copy must be True, False or None, got {copy!r} of "
                            f"type {type(copy).__name__}")
        for name, v in (("max_version", max_version), ("dl_device", dl_device)):
            if v is not None and not (isinstance(v, tuple) and len(v) == 2 and all(
                    isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in v)):
                raise TypeError(f"__dlpack__: {name} must be None or a tuple of two ints, got "
                                f"{v!r}")
        if (max_version is None or tuple(max_version) < (1, 0)) and copy is None \
                and self.place == "cpu":
            copy = True                     # unversioned: no read-only flag to send
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                    ("dl_device", dl_device), ("copy", copy)) if v is not None}
        try:
            return self._array.__dlpack__(**kwargs)
        except BufferError as exc:          # the array API's error, e.g. another dl_device
            raise BufferError(f"__dlpack__: {exc} (dl_device={dl_device!r}, copy={copy!r}; "
                              f"this tensor is on {self.__dlpack_device__()})") from None

    def __dlpack_device__(self) -> tuple[int, int]:
        """(device type, device id): ``(1, 0)`` on the CPU, ``(2, id)`` on a CUDA GPU."""
        kind, index = self._array.__dlpack_device__()
        return int(kind), int(index)

    def __repr__(self) -> str:
        host = self._array if self.place == "cpu" else self.numpy()   # summarised, no copy
        body = np.array2string(host, separator=", ", prefix="       ")
        grad = f"stop_gradient={self.stop_gradient}"
        return (f"Tensor(shape={self.shape}, dtype={self.dtype.name}, "
                f"place=Place({self.place}), {grad},\n       {body})")

    # ------------------------------------------------------------ methods
    # Each method runs its op through dispatch by name, so this module needs
    # neither the generated API nor the sparse package (imports point one way).
    def reshape(self, *shape: IntArray) -> Tensor:
        """See :func:`dense.reshape`; sizes may be given one by one or as a list."""
        return dispatch.call("dense", "reshape", self, _sizes(shape))

    def sum(self, axis: IntArray | None = None, keepdim: bool = False) -> Tensor:
        """See :func:`dense.sum`."""
        return dispatch.call("dense", "sum", self, axis, keepdim)

    def to_sparse_coo(self, sparse_dim: int) -> Any:
        """See :func:`sparse.to_sparse_coo`: the nonzero blocks of the leading dims."""
        return dispatch.call("sparse", "to_sparse_coo", self, sparse_dim)

    def to_sparse_csr(self) -> Any:
        """See :func:`sparse.to_sparse_csr`: the nonzeros of a 2-D or 3-D tensor as CSR."""
        return dispatch.call("sparse", "to_sparse_csr", self)

    def expand(self, *sizes: IntArray) -> Tensor:
        """See :func:`dense.expand`; sizes may be given one by one or as a list."""
        return dispatch.call("dense", "expand", self, _sizes(sizes))

    def repeat(self, *repeats: IntArray) -> Tensor:
        """See :func:`dense.repeat`; counts may be given one by one or as a list."""
        return dispatch.call("dense", "repeat", self, _sizes(repeats))

    # ------------------------------------------------------------ operators, T, indexing
    # (issue 19) Operators call the generated ops; a Python scalar on either
    # side is a weak 0-d operand (NEP 50), and a list or tuple becomes an array
    # as numpy makes it.  A sparse operand of a comparison raises TypeError;
    # anything else (a sparse tensor in arithmetic) gets NotImplemented, so
    # Python asks the other operand.
    __hash__ = object.__hash__  # == is elementwise; tensors stay hashable by identity

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """A numpy ufunc phisparse has as an op runs that op (``ndarray + t``,
        ``np.float64(2) * t``, ``np.exp(t)`` give differentiable tensors); any
        other ufunc or method sees the tensors as numpy arrays and returns arrays.
        Writing into a tensor (``out=t``, ``np.add.at(t, ...)``) raises TypeError:
        tensors are immutable.
        """
        out = kwargs.get("out", ())
        if any(isinstance(o, TensorBase) for o in (out if isinstance(out, tuple) else (out,))) \
                or (method == "at" and isinstance(inputs[0], TensorBase)):
            call = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
            raise TypeError(f"np.{call}: cannot write into a Tensor (tensors are immutable; "
                            "out= and ufunc.at need a numpy array, e.g. t.numpy())")
        name = _UFUNC_OPS.get(ufunc.__name__)
        if method == "__call__" and name is not None and not kwargs:
            from . import _generated_api as api
            return getattr(api, name)(*inputs)
        host = [np.asarray(i) if isinstance(i, TensorBase) else i for i in inputs]
        return getattr(ufunc, method)(*host, **kwargs)

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("divide"), _binary("divide", True)
    __pow__, __rpow__ = _binary("pow"), _binary("pow", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __lt__, __le__ = _binary("less_than"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater_than"), _binary("greater_equal")

    def __neg__(self) -> Tensor:
        from . import _generated_api as api
        return api.neg(self)

    def __abs__(self) -> Tensor:
        from . import _generated_api as api
        return api.abs(self)

    @property
    def T(self) -> Tensor:
        """The tensor with its dims reversed (the matrix transpose of a 2-D tensor), a view."""
        return api_op("transpose")(self, tuple(range(self.ndim - 1, -1, -1)))

    def __getitem__(self, key: Any) -> Tensor:
        """numpy's indexing, differentiable: ints, slices (any step), None, ``...``, and one
        integer array or tensor (any integer dtype; ``[]`` is empty; no boolean masks).

        Basic indexing is one ``basic_index`` call, a view of this tensor's data
        (no copy, as numpy); an integer array index is then a ``gather`` along its
        dim, a copy.
        """
        return getitem(self, key)

    def astype(self, dtype: DataType) -> Tensor:
        """See :func:`dense.cast`: the values as ``dtype`` (a numpy dtype or its name)."""
        return dispatch.call("dense", "cast", self, dtype)


def _as_arrays(obj):
    """``obj`` with every dense tensor in it (lists, tuples, dicts) as its numpy array (a
    global one's logical array: a collective)."""
    if isinstance(obj, Tensor):
        return np.asarray(obj)
    if isinstance(obj, TensorBase) and obj.layout == "dense":      # global: a gathered copy,
        array = np.asarray(obj)                                      # read-only as a local
        array.setflags(write=False)                                  # tensor's (no out=)
        return array
    if isinstance(obj, (list, tuple)):
        return type(obj)(_as_arrays(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _as_arrays(v) for k, v in obj.items()}
    return obj


def _sizes(args):
    """Accept f(2, 3) and f([2, 3]) alike."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return args[0]
    return list(args)


#: Operand types the operators take without further checks (see :func:`_is_operand`).
_OPERANDS = frozenset({Tensor, float, int, np.ndarray})


def to_tensor(data: Any, dtype: DataType | None = None, place: str | None = None,
              stop_gradient: bool = True) -> Tensor:
    """Build a dense Tensor from a numpy array, a Tensor, a scalar or nested lists.

    Python scalars and lists follow numpy's dtype rules (``to_tensor([1.0])``
    is float64, unlike Paddle's float32 default); numpy arrays keep their dtype.
    The caller's array is copied, never changed.

    Parameters
    ----------
    data : array_like or Tensor
    dtype : str or numpy dtype, optional
    place : {'cpu', 'gpu'}, optional
        Where the data lives; None keeps the data's own place.  ``'cuda'`` is
        an alias of ``'gpu'``, and ``'gpu:0'``/``'cuda:0'`` name the device.
    stop_gradient : bool
        False makes the tensor a leaf that receives a gradient.

    Examples
    --------
    >>> import dense
    >>> t = dense.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> t.shape, t.dtype.name
    ([2, 2], 'float64')
    """
    place = canonical_place(place, "to_tensor")
    array = _host_or_device(data, dtype)
    if dtype is None and big_python_ints(data, array):
        raise ValueError(f"to_tensor: data holds a Python int out of the range of int64 "
                         f"[{np.iinfo(np.int64).min}, {np.iinfo(np.int64).max}] (numpy "
                         f"makes it {array.dtype.name}); expected ints in that range, or a "
                         "dtype that holds them (dtype='float64')")
    if array.dtype == object:
        raise TypeError(f"to_tensor: data of type {type(data).__name__} is not numbers "
                        f"(numpy makes it an object array){_hint(data)}; expected a number, "
                        "nested lists of numbers, a numpy or cupy array or a Tensor")
    native = canonical_dtype(array.dtype)
    array = array if array.dtype == native else array.astype(native)
    array = to_place(array, place or place_of(array))
    try:
        return Tensor._own(array, stop_gradient=stop_gradient)
    except TypeError as exc:
        raise named("to_tensor", exc) from None


def _rebuild(array, place, stop_gradient):
    return Tensor._own(to_place(array, place), stop_gradient)


def _rebuild_broadcast(unique, shape, place, stop_gradient):
    return Tensor._own(xp_of(to_place(unique, place)).broadcast_to(to_place(unique, place),
                                                                     tuple(shape)),
                       stop_gradient)


def _host_or_device(data, dtype):
    """``data`` as a new array (of ``dtype`` if given; a value it cannot hold raises
    ValueError naming to_tensor, see :func:`kernels.infermeta.creation.cast_values`)."""
    dt = None if dtype is None else canonical_dtype(dtype)
    if isinstance(data, TensorBase):       # a local GPU tensor stays there, as cupy arrays do
        data = data if data.layout == "dense" else data.to_dense()
        data = data._array if not data.is_global and data.place == "gpu" else data.numpy()
    if type(data).__module__.startswith("cupy"):        # a cast is checked as on the host
        return cast_values(data, dt or data.dtype, "to_tensor", "data")
    if isinstance(data, np.ndarray):
        if dt is not None:
            check_numpy_span("to_tensor", "data", data.shape, dt)
        unique = unique_data(data)
        if unique is not None:              # a broadcast view: copy its unique data only
            if dt is not None:
                cast_values(unique, dt, "to_tensor", "data")
            return owned_copy(data.view(np.ndarray), dt or canonical_dtype(data.dtype))
        if dt is not None and data.dtype != dt:
            return cast_values(data, dt, "to_tensor", "data")
    try:
        array = np.array(data, copy=True)
        if dt is not None and array.dtype != dt and array.dtype.kind in "OSUV":
            with np.errstate(over="raise", invalid="raise"):  # numpy's own conversion
                array = np.array(data, dtype=dt, copy=True)
    except (OverflowError, FloatingPointError) as exc:  # numpy's errors for 2**70 as int64
        held = f" (it holds [{np.iinfo(dt).min}, {np.iinfo(dt).max}])" \
            if dt is not None and dt.kind in "iu" else ""
        raise ValueError(f"to_tensor: data holds a value out of the range of dtype "
                         f"{dt.name if dt is not None else None}{held}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise ValueError(f"to_tensor: data cannot become an array: {exc}") from None
    except MemoryError:                     # numpy's names no op: range(2**62)
        raise MemoryError(f"to_tensor: data ({type(data).__name__}{_length(data)}) does not "
                          f"fit in memory as an array; expected data that fits in the "
                          f"{memory_limit()} bytes this process may use") from None
    return array if dt is None or array.dtype == dt else cast_values(array, dt, "to_tensor",
                                                                     "data")


def _hint(data):
    """What to call instead, for data of a known kind that to_tensor does not take."""
    if type(data).__module__.startswith("scipy.sparse"):
        return " (sparse.from_scipy(m) takes a scipy sparse array, m.toarray() densifies it)"
    if isinstance(data, (set, frozenset, dict)) or hasattr(data, "__next__"):
        return " (an unordered collection or an iterator: make it a list first)"
    return ""


def _length(data):
    """`` of length n`` for data with a len(), else ''."""
    try:
        return f" of length {len(data)}"
    except (TypeError, ValueError, OverflowError):
        return ""


def from_dlpack(obj: Any, stop_gradient: bool = True) -> Tensor:
    """A Tensor holding a copy of any array that speaks DLPack (numpy, torch, cupy, jax).

    The data is copied because tensors own their data and the producer may
    change its buffer later.  CPU arrays become 'cpu' tensors; CUDA arrays
    become 'gpu' tensors (through cupy).

    Examples
    --------
    >>> import numpy as np, dense
    >>> dense.from_dlpack(np.arange(3.0)).numpy()
    array([0., 1., 2.])
    >>> np.from_dlpack(dense.to_tensor([1, 2])).flags.writeable
    False
    """
    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: expected an array with __dlpack__ and "
                        f"__dlpack_device__ (numpy, torch, cupy), got {type(obj).__name__}")
    kind = _device_type(obj)
    if kind not in (_DL_CPU, _DL_CUDA):
        raise ValueError(f"from_dlpack: DLPack device type {kind} is not supported; expected "
                         f"{_DL_CPU} (CPU) or {_DL_CUDA} (CUDA)")
    if kind == _DL_CUDA:
        check_place("gpu", "from_dlpack")
        import cupy as xp
    else:
        xp = np
    try:
        array = xp.from_dlpack(obj).copy()
    except (RuntimeError, BufferError, ValueError) as exc:
        # bfloat16: "Unsupported dtype"; a __dlpack__ giving no capsule: "PyCapsule_GetPointer"
        raise TypeError(f"from_dlpack: {xp.__name__} cannot import this "
                        f"{type(obj).__name__}: {exc}") from None
    canonical_dtype(array.dtype, op="from_dlpack")
    return Tensor(array, stop_gradient=stop_gradient)


def _device_type(obj):
    """The device type of ``obj.__dlpack_device__()``; TypeError naming from_dlpack if it
    gives no (device type, device id) pair."""
    device = obj.__dlpack_device__()
    try:
        return int(device[0])
    except (TypeError, ValueError, IndexError, KeyError):
        raise TypeError(f"from_dlpack: {type(obj).__name__}.__dlpack_device__() gave "
                        f"{device!r}; expected a (device type, device id) pair of ints") from None


_DL_CPU, _DL_CUDA = 1, 2   # DLDeviceType codes of the DLPack standard

#: Ops that are also Tensor methods, ``x.mean(axis=1)`` being ``dense.mean(x, axis=1)``, as
#: Paddle patches its functional API onto ``paddle.Tensor`` (``tensor_method_func``);
#: :func:`add_op_methods` makes them once the generated API exists.
METHOD_OPS = ("mean", "max", "min", "prod", "argmax", "argmin", "abs", "neg", "exp", "log",
              "sqrt", "square", "sin", "cos", "tanh", "sigmoid", "relu", "clip", "add",
              "subtract", "multiply", "divide", "pow", "maximum", "minimum", "matmul",
              "transpose", "squeeze", "unsqueeze", "flatten", "index_select", "gather",
              "cast")


def add_op_methods(api: Any) -> None:
    """Make each op of :data:`METHOD_OPS` a Tensor method: ``api``'s function with the
    tensor as its first argument, keeping the function's signature, annotations and
    docstring (``help(x.mean)``).  The package runs it after loading its generated API."""
    for name in METHOD_OPS:
        setattr(Tensor, name, _op_method(getattr(api, name)))


def _op_method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    sig = inspect.signature(fn)
    first, *rest = sig.parameters.values()
    method.__signature__ = sig.replace(parameters=[first.replace(
        name="self", annotation=inspect.Parameter.empty)] + rest)
    method.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != first.name}
    method.__name__, method.__qualname__ = fn.__name__, f"Tensor.{fn.__name__}"
    method.__doc__ = fn.__doc__
    return method


register_layout("dense", Tensor)
