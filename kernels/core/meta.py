"""MetaTensor: what infer-meta reasons about (shape, dtype, layout, place), never data."""
import itertools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

LAYOUTS = ("dense", "sparse_coo", "sparse_csr")
PLACES = ("cpu", "gpu")
#: Distinct metadata (the fields as a tuple) -> the int naming it, ``MetaTensor._id``.
_IDS = {}
_NEXT_ID = itertools.count()
#: The table forgets everything at this many entries.  Ids are never reused, so
#: metadata seen again gets a new id: a memo miss, never a wrong hit.
ID_TABLE_SIZE = 1 << 14


def _id_of(key):
    """The int naming metadata ``key`` (equal keys get equal ids while remembered)."""
    found = _IDS.get(key)
    if found is None:
        if len(_IDS) >= ID_TABLE_SIZE:
            _IDS.clear()
        found = _IDS.setdefault(key, next(_NEXT_ID))
    return found


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
        if not isinstance(self.shape, tuple) or not all(type(s) is int for s in self.shape):
            object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if type(self.dtype) is not np.dtype and not isinstance(self.dtype, np.dtype):
            object.__setattr__(self, "dtype", np.dtype(self.dtype))
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
            new.__post_init__()
        else:
            key = (fields["shape"], fields["dtype"], fields["layout"], fields["place"],
                   fields["sparse_dim"])
            fields["_key"] = key
            fields["_id"] = _id_of(key)
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
