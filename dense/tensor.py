"""dense.Tensor: an immutable n-D array on 'cpu' (numpy) or 'gpu' (cupy), with autograd."""
import numbers

import numpy as np

from kernels.core import dispatch
from kernels.core.dtypes import canonical_dtype
from kernels.core.meta import MetaTensor, PLACES
from kernels.core.tensor import TensorBase, register_layout
from kernels.core.xp import place_of, to_numpy, to_place, xp_of


def _freeze(array):
    """Mark a numpy array we own read-only: tensors are immutable."""
    if isinstance(array, np.ndarray) and array.flags.writeable:
        array.flags.writeable = False
    return array


_UFUNC_OPS = {"add": "add", "subtract": "subtract", "multiply": "multiply",
              "divide": "divide", "power": "pow", "maximum": "maximum", "minimum": "minimum",
              "equal": "equal", "not_equal": "not_equal", "less": "less_than",
              "less_equal": "less_equal", "greater": "greater_than",
              "greater_equal": "greater_equal", "negative": "neg", "absolute": "abs",
              "exp": "exp", "log": "log", "sqrt": "sqrt", "square": "square", "sin": "sin",
              "cos": "cos", "tanh": "tanh", "matmul": "matmul"}


def _is_operand(value):
    return isinstance(value, (Tensor, np.ndarray, numbers.Number, np.bool_)) \
        or type(value).__module__.startswith("cupy")


def _binary(name, reflected=False):
    """An operator method calling op ``name`` (``reflected``: other op self)."""
    def method(self, other):
        if not _is_operand(other):
            return NotImplemented
        from . import _generated_api as api
        op = getattr(api, name)
        return op(other, self) if reflected else op(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    method.__doc__ = f"See :func:`dense.{name}`."
    return method


class Tensor(TensorBase):
    """A dense tensor.  Build one with :func:`dense.to_tensor`."""

    layout = "dense"

    def __init__(self, array, stop_gradient=True):
        self._array = _freeze(array)
        self._meta = None
        self._init_autograd(stop_gradient)

    # ------------------------------------------------------------ internals
    @classmethod
    def _wrap_array(cls, array):
        """Wrap a caller's array without copying and without touching its flags."""
        return cls(array.view() if isinstance(array, np.ndarray) else array)

    @classmethod
    def _from_kernel(cls, data, meta):
        if type(data) is not np.ndarray:
            data = (xp_of(data) if not isinstance(data, numbers.Number) else np).asarray(data)
        return cls(data)

    def _data(self):
        return self._array

    @property
    def meta(self):
        """Shape, dtype, layout and place as a :class:`kernels.MetaTensor`."""
        if self._meta is None:
            a = self._array
            self._meta = MetaTensor(a.shape, a.dtype, "dense", place_of(a))
        return self._meta

    def _root_grad(self, grad_tensor):
        if grad_tensor is None:
            return Tensor(xp_of(self._array).ones(self._array.shape, self._array.dtype))
        g = grad_tensor
        if getattr(g, "layout", None) in ("sparse_coo", "sparse_csr"):
            g = g.to_dense()
        g = g if isinstance(g, Tensor) else to_tensor(g)
        if g.shape != self.shape:
            raise ValueError(f"backward: grad_tensor has shape {g.shape}, expected "
                             f"{self.shape} (the tensor's shape)")
        return Tensor(to_place(g._array, self.place).astype(self.dtype, copy=False))

    def _add_grad(self, other):
        return Tensor(self._array + other._array)

    # ------------------------------------------------------------ attributes
    @property
    def shape(self):
        """The shape as a list of ints, as in Paddle."""
        return list(self._array.shape)

    @property
    def dtype(self):
        """The numpy dtype."""
        return self._array.dtype

    @property
    def place(self):
        """'cpu' or 'gpu'."""
        return place_of(self._array)

    @property
    def ndim(self):
        return self._array.ndim

    @property
    def size(self):
        """The number of elements."""
        return int(self._array.size)

    def numel(self):
        """The number of elements."""
        return self.size

    def numpy(self):
        """A host numpy copy that the caller may change freely."""
        return to_numpy(self._array)

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        if self.size != 1:
            raise ValueError(f"item: the tensor has {self.size} elements, expected 1")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)`` is a read-only view of a CPU tensor's data; else a copy."""
        if self.place != "cpu" or copy or (dtype is not None and np.dtype(dtype) != self.dtype):
            out = self.numpy()
            return out if dtype is None else out.astype(dtype, copy=False)
        return self._array.view()

    def data_ptr(self):
        """The address of the first element, as in Paddle and torch: equal for shared memory."""
        a = self._array
        return a.data.ptr if self.place == "gpu" else a.__array_interface__["data"][0]

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ", prefix="       ")
        grad = f"stop_gradient={self.stop_gradient}"
        return (f"Tensor(shape={self.shape}, dtype={self.dtype.name}, "
                f"place=Place({self.place}), {grad},\n       {body})")

    # ------------------------------------------------------------ methods
    # Each method runs its op through dispatch by name, so this module needs
    # neither the generated API nor the sparse package (imports point one way).
    def reshape(self, *shape):
        """See :func:`dense.reshape`; sizes may be given one by one or as a list."""
        return dispatch.call("dense", "reshape", self, _sizes(shape))

    def sum(self, axis=None, keepdim=False):
        """See :func:`dense.sum`."""
        return dispatch.call("dense", "sum", self, axis, keepdim)

    def to_sparse_coo(self, sparse_dim):
        """See :func:`sparse.to_sparse_coo`: the nonzero blocks of the leading dims."""
        return dispatch.call("sparse", "to_sparse_coo", self, sparse_dim)

    def to_sparse_csr(self):
        """See :func:`sparse.to_sparse_csr`: the nonzeros of a 2-D or 3-D tensor as CSR."""
        return dispatch.call("sparse", "to_sparse_csr", self)

    def expand(self, *sizes):
        """See :func:`dense.expand`; sizes may be given one by one or as a list."""
        return dispatch.call("dense", "expand", self, _sizes(sizes))

    def repeat(self, *repeats):
        """See :func:`dense.repeat`; counts may be given one by one or as a list."""
        return dispatch.call("dense", "repeat", self, _sizes(repeats))

    # ------------------------------------------------------------ operators, T, indexing
    # (issue 19) Operators call the generated ops; a Python scalar on either
    # side is a weak 0-d operand (NEP 50).  Anything else (a sparse tensor, a
    # list) gets NotImplemented, so Python asks the other operand.
    __hash__ = object.__hash__  # == is elementwise; tensors stay hashable by identity

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """A numpy ufunc phisparse has as an op runs that op (``ndarray + t``,
        ``np.float64(2) * t``, ``np.exp(t)`` give differentiable tensors); any
        other ufunc or method sees the tensors as numpy arrays and returns arrays.
        """
        name = _UFUNC_OPS.get(ufunc.__name__)
        if method == "__call__" and name is not None and not kwargs:
            from . import _generated_api as api
            return getattr(api, name)(*inputs)
        host = [np.asarray(i) if isinstance(i, Tensor) else i for i in inputs]
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

    def __neg__(self):
        from . import _generated_api as api
        return api.neg(self)

    def __abs__(self):
        from . import _generated_api as api
        return api.abs(self)

    @property
    def T(self):
        """The tensor with its dims reversed (the matrix transpose of a 2-D tensor), a view."""
        from . import _generated_api as api
        return api.transpose(self, list(range(self.ndim))[::-1])

    def __getitem__(self, key):
        """numpy's indexing, differentiable: ints, slices (any step), None, ``...``, and one
        integer array or tensor.

        Basic indexing is a ``strided_slice``, ``squeeze`` and ``unsqueeze``, all views
        of this tensor's data (no copy, as numpy); an integer array index is
        then a ``gather`` along its dim, a copy.
        """
        from ._indexing import getitem
        return getitem(self, key)


def _sizes(args):
    """Accept f(2, 3) and f([2, 3]) alike."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return args[0]
    return list(args)


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """Build a dense Tensor from a numpy array, a Tensor, a scalar or nested lists.

    Python scalars and lists follow numpy's dtype rules (``to_tensor([1.0])``
    is float64, unlike Paddle's float32 default); numpy arrays keep their dtype.
    The caller's array is copied, never changed.

    Parameters
    ----------
    data : array_like or Tensor
    dtype : str or numpy dtype, optional
    place : {'cpu', 'gpu'}, optional
        Where the data lives; None keeps the data's own place.
    stop_gradient : bool
        False makes the tensor a leaf that receives a gradient.

    Examples
    --------
    >>> import dense
    >>> t = dense.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> t.shape, t.dtype.name
    ([2, 2], 'float64')
    """
    if place is not None and place not in PLACES:
        raise ValueError(f"to_tensor: place {place!r} is not one of {list(PLACES)}")
    array = _host_or_device(data, dtype)
    canonical_dtype(array.dtype)
    array = to_place(array, place or place_of(array))
    return Tensor(array, stop_gradient=stop_gradient)


def _host_or_device(data, dtype):
    dt = None if dtype is None else canonical_dtype(dtype)
    if isinstance(data, TensorBase):
        data = data.numpy() if data.layout == "dense" else data.to_dense().numpy()
    if type(data).__module__.startswith("cupy"):
        return data.astype(dt or data.dtype, copy=True)
    try:
        return np.array(data, dtype=dt, copy=True)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"to_tensor: data cannot become an array: {exc}") from None


register_layout("dense", Tensor)
