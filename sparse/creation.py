"""Building sparse tensors: from buffers (validated) and from scipy."""
from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from kernels.core.autograd import grad_enabled
from kernels.core.annotations import DataType, IntArray
from kernels.core.dtypes import INDEX, big_python_ints, canonical_dtype
from kernels.core.size import check_bytes
from kernels.core.tensor import TensorBase, named
from kernels.core.xp import canonical_place, check_place, place_of, to_place, xp_of
from kernels.infermeta.creation import cast_values
from kernels.sparse.data import CooData, CsrData
from kernels.sparse.validate import check_coo, check_csr

from .tensor import CHECKED, SparseCooTensor, SparseCsrTensor


def sparse_coo_tensor(indices: Any, values: Any, shape: IntArray | None = None,
                      dtype: DataType | None = None, place: str | None = None,
                      stop_gradient: bool = True) -> SparseCooTensor:
    """Build a COO tensor from its indices and values.

    The buffers are copied (dense Tensors, being immutable, are shared), so
    the caller's arrays are never changed.  Duplicate coordinates are
    allowed; :meth:`SparseCooTensor.coalesce` sums them.

    Parameters
    ----------
    indices : array_like or dense.Tensor
        Integer, shape [sparse_dim, nnz].  int32 and int64 are kept; other
        integer dtypes become int64.
    values : array_like or dense.Tensor
        Shape [nnz, *dense_dims].
    shape : list of int, optional
        The sparse dims followed by the dense dims.  None infers each
        sparse dim as its largest index plus one, as Paddle does.
    dtype : str or numpy dtype, optional
        The values' dtype.
    place : {'cpu', 'gpu'}, optional
    stop_gradient : bool
        False makes the tensor a leaf that receives a gradient.

    Returns
    -------
    SparseCooTensor

    Raises
    ------
    TypeError
        Non-integer indices.
    ValueError
        Mismatched lengths, a shape of the wrong rank or dense dims, or no
        entries to infer the shape from.
    IndexError
        A negative index or one beyond its dim.

    Examples
    --------
    >>> import sparse
    >>> x = sparse.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0])
    >>> x.shape, x.nnz(), x.sparse_dim(), x.dense_dim()
    ([2, 3], 3, 2, 0)
    """
    try:
        x = SparseCooTensor._own(_coo_data(indices, values, shape, dtype, place), stop_gradient)
    except TypeError as exc:
        raise named("sparse_coo_tensor", exc) from None
    return _differentiable_in(x, values)


def sparse_csr_tensor(crows: Any, cols: Any, values: Any, shape: IntArray,
                      dtype: DataType | None = None, place: str | None = None,
                      stop_gradient: bool = True) -> SparseCsrTensor:
    """Build a 2-D or batched 3-D CSR tensor in Paddle's layout.

    For shape [batch, rows, cols], ``crows`` holds batch * (rows + 1)
    entries, restarting from 0 in each batch, while ``cols`` and ``values``
    run over all batches in order.  Columns within a row need not be sorted.
    The buffers are copied (dense Tensors are shared), never changed.

    Parameters
    ----------
    crows, cols : array_like or dense.Tensor
        Integer, 1-D.  Both become int64 if either is int64, else int32.
    values : array_like or dense.Tensor
        1-D, one value per col.
    shape : list of int
        [rows, cols] or [batch, rows, cols].
    dtype : str or numpy dtype, optional
    place : {'cpu', 'gpu'}, optional
    stop_gradient : bool

    Returns
    -------
    SparseCsrTensor

    Raises
    ------
    TypeError
        Non-integer crows or cols.
    ValueError
        A shape that is not 2-D or 3-D, lengths that disagree, or crows that
        do not start at 0, decrease, or do not end at each batch's nnz.
    IndexError
        A col that is negative or not below the number of columns.

    Examples
    --------
    >>> import sparse
    >>> x = sparse.sparse_csr_tensor([0, 2, 3], [1, 3, 2], [1.0, 2.0, 3.0], [2, 4])
    >>> x.to_dense().numpy()
    array([[0., 1., 0., 2.],
           [0., 0., 3., 0.]])
    """
    return _csr(crows, cols, values, shape, dtype, place, stop_gradient, "sparse_csr_tensor")


def _csr(crows, cols, values, shape, dtype, place, stop_gradient, op):
    place = _check_place(place, op)
    crows = _index_buffer(crows, op, "crows", place)
    cols = _index_buffer(cols, op, "cols", place)
    if crows.dtype != cols.dtype:
        crows, cols = crows.astype(np.int64), cols.astype(np.int64)
    value_buffer = _value_buffer(values, dtype, place, op)
    shape = _shape(shape, op)
    check_csr(crows, cols, value_buffer, shape, op)
    try:
        x = SparseCsrTensor._own(CsrData(crows, cols, value_buffer, shape), stop_gradient)
    except TypeError as exc:
        raise named(op, exc) from None
    return _differentiable_in(x, values)


def from_scipy(m: Any, place: str | None = None,
               stop_gradient: bool = True) -> SparseCooTensor | SparseCsrTensor:
    """A sparse tensor holding a copy of scipy sparse array or matrix ``m``.

    2-D CSR becomes :class:`SparseCsrTensor`; COO of any rank (n-D
    ``coo_array`` included) becomes :class:`SparseCooTensor`, coalesced if
    scipy says it is canonical and its coordinates are indeed unique and
    C-sorted (a caller may have edited them after scipy set the flag).
    Other formats (1-D CSR included) are
    converted to COO first.

    Examples
    --------
    >>> import scipy.sparse, sparse
    >>> m = scipy.sparse.coo_array(([1.0, 2.0], ([0, 2], [1, 0])), shape=(3, 2))
    >>> x = sparse.from_scipy(m)
    >>> x.shape, x.indices().numpy().tolist()
    ([3, 2], [[0, 2], [1, 0]])
    """
    import scipy.sparse
    if not scipy.sparse.issparse(m):
        raise TypeError(f"from_scipy: expected a scipy sparse array or matrix, got "
                        f"{type(m).__name__}")
    _check_place(place, "from_scipy")
    op = "from_scipy"
    if m.format == "csr" and m.ndim == 2:
        return _csr(m.indptr, m.indices, m.data, m.shape, None, place, stop_gradient, op)
    m = m.tocoo()
    data = _coo_data(np.stack(m.coords), m.data, m.shape, None, place, op)
    canonical = bool(m.has_canonical_format) and _strictly_sorted(data.indices)
    return SparseCooTensor._own(data._replace(coalesced=canonical), stop_gradient)


def _strictly_sorted(indices):
    """True if the columns of ``indices`` rise strictly in C (lexicographic) order."""
    xp = xp_of(indices)
    if indices.shape[1] < 2:
        return True
    later = xp.zeros(indices.shape[1] - 1, dtype=bool)
    for row in indices[::-1]:
        later = (row[1:] > row[:-1]) | ((row[1:] == row[:-1]) & later)
    return bool(xp.all(later))


# ---------------------------------------------------------------- inputs
def _differentiable_in(x, values):
    """x as a function of ``values`` when they are a tensor that needs a gradient (Paddle).

    The constructor's ``stop_gradient`` does not matter then: the result is
    ``with_values(x, values)``, whose gradient flows to ``values``, through a
    cast where ``dtype`` changed their dtype (Paddle casts them too).  Values
    moved to another place to build x are a copy and stay cut from the graph.
    """
    if not (isinstance(values, TensorBase) and values.layout == "dense"
            and not values.stop_gradient and grad_enabled() and values.place == x.place):
        return x
    from . import _generated_api
    if values.dtype != x.dtype:
        import dense
        values = dense.cast(values, x.dtype)
    return _generated_api.with_values(type(x)(x._data()), values)


def _coo_data(indices, values, shape, dtype, place, op="sparse_coo_tensor"):
    """Validated COO buffers owned by the new tensor (coalesced not yet known)."""
    place = _check_place(place, op)
    indices = _index_buffer(indices, op, "indices", place)
    values = _value_buffer(values, dtype, place, op)
    if shape is None:
        shape = _inferred_shape(indices, values, op)
    shape = _shape(shape, op)
    check_coo(indices, values, shape, op)
    return CooData(indices, values, shape, False)


def _check_place(place, op):
    place = canonical_place(place, op)
    check_place(place, op)
    return place


def _local_only(data, op, name):
    """TypeError for a global tensor: a sparse tensor is built from this rank's arrays."""
    if getattr(data, "is_global", False):
        raise TypeError(f"{op}: {name} is a global tensor; build the sparse tensor from "
                        f"local parts (g.to_local()) and make it global with to_global")


def _own(data, place, op, name, order="K"):
    """A private native-order array for ``data``: a dense Tensor's buffer is shared
    (it is locked), anything else copied (into ``order``)."""
    _local_only(data, op, name)
    if isinstance(data, TensorBase) and data.layout == "dense":
        array = data._data()
    elif isinstance(data, TensorBase):
        raise TypeError(f"{op}: {name} must be dense, got a {data.layout} tensor")
    elif type(data).__module__.startswith("cupy"):
        array = data.copy()
    else:
        if isinstance(data, np.ndarray):    # a broadcast view is copied whole: check first
            check_bytes(op, f"copying {name} of shape {list(data.shape)} and dtype "
                            f"{data.dtype.name}", data.size * data.itemsize, "of memory")
        try:
            array = np.array(data, copy=True, order=order)
        except ValueError as exc:
            raise ValueError(f"{op}: {name} cannot become an array: {exc}") from None
        except TypeError as exc:
            raise TypeError(f"{op}: {name} cannot become an array: {exc}") from None
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return to_place(array, place or place_of(array))


def _index_buffer(data, op, name, place):
    # Row-major, whatever the caller's order (a transposed (nnz, ndim) array is not):
    # kernels read one coordinate row at a time.
    array = _own(data, place, op, name, order="C")
    error = ValueError if name == "crows" else IndexError      # bad crows; an index past a dim
    if array.dtype.kind not in "iu" and big_python_ints(data, array):
        raise error(f"{op}: {name} holds a Python int out of the range of int64 (numpy "
                    f"makes it {array.dtype.name}); an index must fit in int64")
    if array.dtype.kind not in "iu" and not (array.size == 0 and array.dtype.kind in "fiu"):
        raise TypeError(f"{op}: {name} must hold integers, got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.size and int(array.max()) > np.iinfo(np.int64).max:
        raise error(f"{op}: {name} holds {int(array.max())}, more than any dim can "
                    f"have (an index must fit in int64)")
    return array if array.dtype in INDEX else array.astype(np.int64)


def _value_buffer(data, dtype, place, op):
    _local_only(data, op, "values")
    dt = None if dtype is None else canonical_dtype(dtype, op, "dtype")
    same = dt is None or dt == data.dtype if isinstance(data, TensorBase) else False
    if same and data.layout == "dense":    # (np.dtype('float64') == None is True: no `in`)
        return to_place(data._data(), place or data.place)
    if dt is not None and isinstance(data, (list, tuple, numbers.Number)):
        data = _python_values(data, dt, op)      # as to_tensor: 300 is no uint8
    array = _own(data, place, op, "values")
    native = canonical_dtype(array.dtype, op, "values' dtype")
    if dt is not None and array.dtype != dt and isinstance(array, np.ndarray):
        return cast_values(array, dt, op, "values")     # NaN is no int, 1j no float
    return array.astype(dt or native, copy=False)


def _python_values(data, dt, op):
    """Python values made ``dt`` the way numpy builds an array of them in ``dt`` (and
    to_tensor): a value the dtype cannot hold (300 as uint8, NaN as int64, a complex
    as float64) raises, naming ``op``, where a cast would change it silently; a float
    too large for a float dtype becomes inf, as in numpy."""
    try:
        with warnings.catch_warnings(), np.errstate(over="ignore", invalid="raise"):
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            return np.array(data, dtype=dt)
    except (OverflowError, ValueError, TypeError, FloatingPointError,
            np.exceptions.ComplexWarning) as exc:
        raise ValueError(f"{op}: values cannot become dtype {dt.name}: {exc}") from None


def _shape(shape, op):
    if isinstance(shape, TensorBase):
        if shape.layout != "dense":
            raise TypeError(f"{op}: shape must be a list of ints, got a {shape.layout} tensor")
        shape = shape.numpy().tolist()
    shape = np.asarray(shape).tolist() if isinstance(shape, np.ndarray) else shape
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"{op}: shape must be a list of ints, got {shape!r}")
    if any(s < 0 or s >= 2 ** 63 for s in shape):
        raise ValueError(f"{op}: shape {list(shape)} has a dim outside [0, 2**63); every dim "
                         "must be non-negative and fit in int64")
    return tuple(int(s) for s in shape)


def _inferred_shape(indices, values, op):
    if indices.ndim != 2 or indices.shape[1] == 0:
        raise ValueError(f"{op}: shape=None is inferred from the largest indices, but "
                         f"indices of shape {list(indices.shape)} hold no entries; pass shape")
    highs = to_place(indices.max(axis=1), "cpu").tolist()
    return [max(int(h) + 1, 0) for h in highs] + list(values.shape[1:])


def _from_bundle(data):
    """A tensor built from a CooData or CsrData bundle's buffers by the constructors, so
    checked and copied as theirs are (what ``SparseCooTensor(bundle)`` calls)."""
    place = "gpu" if type(data.values).__module__.startswith("cupy") else None
    shape = list(data.shape) if isinstance(data.shape, (tuple, list)) else data.shape
    if isinstance(data, CsrData):
        return sparse_csr_tensor(data.crows, data.cols, data.values, shape, place=place)
    return sparse_coo_tensor(data.indices, data.values, shape, place=place)


CHECKED.update(sparse_coo=_from_bundle, sparse_csr=_from_bundle)
