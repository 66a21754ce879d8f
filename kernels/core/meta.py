"""MetaTensor: what infer-meta reasons about (shape, dtype, layout, place), never data."""
import itertools
import operator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .dtypes import ALL, canonical_dtype

LAYOUTS = ("dense", "sparse_coo", "sparse_csr")
PLACES = ("cpu", "gpu")
#: Distinct metadata (the fields as a tuple) -> the int naming it, ``MetaTensor._id``.
_IDS = {}
_NEXT_ID = itertools.count()
#: The table forgets everything at this many entries.  Ids are never reused, so
#: metadata seen again gets a new id: a memo miss, never a wrong hit.
ID_TABLE_SIZE = 1 << 14
#: The supported dtypes, and their classes (a class check is cheaper than isinstance).
_DTYPES = frozenset(ALL)
_DTYPE_CLASSES = frozenset(type(d) for d in ALL)


def _id_of(key):
    """The int naming metadata ``key`` (equal keys get equal ids while remembered)."""
    found = _IDS.get(key)
    if found is None:
        if len(_IDS) >= ID_TABLE_SIZE:
            _IDS.clear()
        found = _IDS.setdefault(key, next(_NEXT_ID))
    return found


def _checked_dims(shape):
    """``shape`` as a tuple of ints >= -1, or TypeError/ValueError naming MetaTensor."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"MetaTensor: shape must be a tuple or list of ints, got {shape!r} "
                        f"({type(shape).__name__})")
    given = tuple(shape)
    dims = tuple(_int_or_none(s) for s in given)
    for s, g in zip(dims, given):
        if s is None:
            raise TypeError(f"MetaTensor: shape {list(given)} holds {g!r} "
                            f"({type(g).__name__}); expected ints")
        if s < -1:
            raise ValueError(f"MetaTensor: shape {list(dims)} has a negative dim {s}; "
                             "expected sizes >= 0, or -1 for an unknown dim")
    return dims


def _int_or_none(value):
    """``value`` as a Python int if it is an integer (not a bool), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _checked_sparse_dim(layout, place, sparse_dim, ndim):
    """``sparse_dim`` as an int or None, or TypeError or ValueError naming MetaTensor
    unless the layout and place are known and ``sparse_dim`` is None or in [1, ndim] for a
    COO layout (None: not known), None for the others."""
    for arg, value, known in (("layout", layout, LAYOUTS), ("place", place, PLACES)):
        if type(value) is not str or value not in known:
            kind = ValueError if isinstance(value, str) else TypeError
            raise kind(f"MetaTensor: {arg} {value!r} is not one of {list(known)}")
    if layout != "sparse_coo":
        if sparse_dim is not None:
            raise ValueError(f"MetaTensor: sparse_dim {sparse_dim!r} is given for a {layout} "
                             "tensor; expected None (only sparse_coo has sparse dims)")
    elif sparse_dim is not None:
        if _int_or_none(sparse_dim) is None:
            raise TypeError(f"MetaTensor: sparse_dim {sparse_dim!r} of a sparse_coo tensor "
                            f"must be None or an int in [1, {ndim}]")
        if not 1 <= sparse_dim <= ndim:
            raise ValueError(f"MetaTensor: sparse_dim {sparse_dim} is out of range for a "
                             f"sparse_coo tensor of rank {ndim}; expected an int in "
                             f"[1, {ndim}]")
        return operator.index(sparse_dim)
    return sparse_dim


@dataclass(frozen=True)
class MetaTensor:
    """Shape, dtype, layout and place of a tensor, without its data.

    ``sparse_dim`` is set for COO tensors (the number of indexed dims).
    A MetaTensor may stand in for a tensor whose buffer is not kept
    (``no_need_buffer`` in the backward YAML); kernels then read only its shape.
    """

    shape: tuple
    dtype: np.dtype
    layout: str = "dense"
    place: str = "cpu"
    sparse_dim: int | None = None

    def __post_init__(self):
        """Check the fields (TypeError or ValueError naming ``MetaTensor``), then normalise:
        a shape of ints >= -1 (-1: unknown, as a values tensor's nnz), a supported dtype,
        a known layout and place, and ``sparse_dim`` None or in [1, ndim] for COO only."""
        shape = self.shape
        if not isinstance(shape, tuple) or not all(type(s) is int and s >= -1 for s in shape):
            shape = _checked_dims(shape)
            object.__setattr__(self, "shape", shape)
        if type(self.dtype) not in _DTYPE_CLASSES or self.dtype not in _DTYPES:
            object.__setattr__(self, "dtype", canonical_dtype(self.dtype, "MetaTensor"))
        if self.layout != "dense" or self.sparse_dim is not None \
                or type(self.place) is not str or self.place not in PLACES:
            object.__setattr__(self, "sparse_dim", _checked_sparse_dim(
                self.layout, self.place, self.sparse_dim, len(shape)))
        self._keyed()

    def _normalise(self):
        """The fields as ``with_`` takes them from dispatch and the rules: unchecked."""
        if not isinstance(self.shape, tuple) or not all(type(s) is int for s in self.shape):
            self.__dict__["shape"] = tuple(int(s) for s in self.shape)
        if not isinstance(self.dtype, np.dtype):
            self.__dict__["dtype"] = np.dtype(self.dtype)

    def _keyed(self):
        """Give the meta ``_key`` and ``_id`` (below)."""
        key = (self.shape, self.dtype, self.layout, self.place, self.sparse_dim)
        self.__dict__["_key"] = key
        self.__dict__["_id"] = _id_of(key)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    #: Metadata is never global; dispatch asks every input.
    is_global = False

    #: ``_key``: the fields as a plain tuple, made with the meta; ``_id``: the int that
    #: names that tuple (:func:`_id_of`).  Dispatch keys its per-call memos on ``_id``:
    #: an int hashes and compares at once, where the tuple hashes its shape and dtype
    #: on every call and this class's ``__hash__`` and ``__eq__`` are Python calls.

    def __hash__(self):
        return hash(self._key)

    def __reduce__(self):
        """Pickle the fields only: ``_id`` names metadata in this process's table, so an
        unpickled copy (another process, or after the table forgot) takes its own."""
        return MetaTensor, (self.shape, self.dtype, self.layout, self.place, self.sparse_dim)

    def with_(self, **changes):
        """A copy with some fields changed; a shape that is not a tuple is normalised."""
        new = object.__new__(MetaTensor)
        fields = new.__dict__
        fields.update(self.__dict__)
        fields.update(changes)
        if not isinstance(fields["shape"], tuple) or not isinstance(fields["dtype"], np.dtype):
            new._normalise()
        new._keyed()
        return new

    @property
    def meta(self):
        return self


class Shape(tuple):
    """The shape ``op.infer_meta`` reports: a tuple of ints (hashable, immutable) that
    also equals the list a tensor's ``.shape`` is, so that
    ``op.infer_meta(x).shape == op(x).shape`` holds.

    Examples
    --------
    >>> s = Shape((3, 2))
    >>> s == [3, 2], s == (3, 2), s != [3], hash(s) == hash((3, 2))
    (True, True, True, True)
    """

    __slots__ = ()

    def __eq__(self, other):
        return list(self) == other if isinstance(other, list) else tuple.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__


def reported(meta):
    """``meta`` (or a list of them) as ``op.infer_meta`` returns it: its shape a :class:`Shape`."""
    if isinstance(meta, list):
        return [reported(m) for m in meta]
    return meta.with_(shape=Shape(meta.shape))


class Canonical(NamedTuple):
    """What an infer-meta returns when it also resolves the op's attributes.

    ``out`` is the output :class:`MetaTensor` (a tuple of them for several
    outputs); ``attrs`` maps attribute names to their canonical values (a
    shape with 0 and -1 resolved, normalised axes...).  Dispatch hands those
    to the kernel in place of the caller's, so the kernel trusts them and
    checks nothing again (PyTorch's structured kernels: meta, then impl).
    An infer-meta may equally return only ``out``.

    Examples
    --------
    >>> x = MetaTensor((2, 3), "float32")
    >>> c = Canonical(x.with_(shape=(6,)), {"shape": (6,)})
    >>> meta_of(c).shape, meta_of(x).shape
    ((6,), (2, 3))
    """

    out: object
    attrs: dict


def meta_of(result):
    """The output metadata of an infer-meta's result, with or without canonical attributes."""
    return result.out if type(result) is Canonical else result
