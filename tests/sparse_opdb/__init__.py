"""The sparse op database: each module here lists SparseOpInfo entries for one op family.

The generic suite (``tests/test_sparse_opdb.py``) checks every entry on every
sample, for every dtype the entry lists:

- the forward against the entry's numpy reference on the dense form;
- infer-meta against the output's metadata, with and without data;
- gradients by central finite differences on the stored values of sparse
  operands and on the entries of dense ones (float64), and that a sparse
  operand's gradient keeps its layout and pattern;
- the sparse op against its dense counterpart (``dense_op``) on the dense form;
- that inputs are never mutated and that a COO output flagged coalesced holds
  unique, C-sorted coordinates.

Add an op by adding a module with an ``OPS`` list.  Samples are built from
:class:`SparseArg` (a sparse operand as numpy buffers) and numpy arrays (dense
operands); :func:`sparse_args` gives the standard set of sparse operands:
COO with and without dense dims, duplicates, int32 and int64 indices, CSR 2-D
and batched 3-D (unsorted columns, duplicates), and nnz 0.
"""
import sys
from dataclasses import dataclass, field, replace

import numpy as np

import dense
import sparse
from kernels.core.dtypes import ALL
from opdb import ops_of


@dataclass(frozen=True)
class SparseArg:
    """A sparse operand as numpy buffers: COO (indices) or CSR (crows, cols).

    ``coords()`` gives each stored entry's sparse coordinates in storage
    order, so a reference can act entry by entry (duplicates included) and
    ``dense()`` sums the entries into the dense form.
    """

    layout: str                 # 'coo' or 'csr'
    shape: tuple
    values: np.ndarray
    indices: np.ndarray = None  # COO [sparse_dim, nnz]
    crows: np.ndarray = None    # CSR
    cols: np.ndarray = None
    tag: str = ""

    @property
    def sparse_dim(self):
        return self.indices.shape[0] if self.layout == "coo" else len(self.shape)

    @property
    def nnz(self):
        return self.values.shape[0]

    def coords(self):
        """[sparse_dim, nnz] coordinates of the stored entries, in storage order."""
        if self.layout == "coo":
            return self.indices.astype(np.int64)
        rows = self.shape[-2]
        batch = self.shape[0] if len(self.shape) == 3 else 1
        counts = np.diff(self.crows.reshape(batch, rows + 1), axis=1).reshape(-1)
        flat_rows = np.repeat(np.arange(batch * rows), counts)
        lead = [flat_rows // rows] if len(self.shape) == 3 else []
        return np.stack(lead + [flat_rows % rows, self.cols.astype(np.int64)])

    def dense(self, values=None):
        """The dense form: ``values`` (default the stored ones) summed at their coordinates."""
        values = self.values if values is None else values
        out = np.zeros(self.shape, dtype=values.dtype)
        np.add.at(out, tuple(self.coords()), values)
        return out

    def with_values(self, values):
        return replace(self, values=values)

    def mask(self):
        """True at every stored coordinate (of the sparse dims)."""
        out = np.zeros(self.shape[:self.sparse_dim], dtype=bool)
        out[tuple(self.coords())] = True
        return out

    def stored(self):
        """True at every element of the full shape that a stored entry covers."""
        m = self.mask().reshape(self.shape[:self.sparse_dim] + (1,) * (len(self.shape)
                                                                       - self.sparse_dim))
        return np.broadcast_to(m, self.shape)

    def build(self, place="cpu", stop_gradient=True):
        if self.layout == "coo":
            return sparse.sparse_coo_tensor(self.indices, self.values, list(self.shape),
                                            place=place, stop_gradient=stop_gradient)
        return sparse.sparse_csr_tensor(self.crows, self.cols, self.values, list(self.shape),
                                        place=place, stop_gradient=stop_gradient)

    def __repr__(self):
        return f"{self.layout}{list(self.shape)}{self.tag}"


def dense_of(arg):
    """The dense numpy form of an operand (SparseArg or array)."""
    return arg.dense() if isinstance(arg, SparseArg) else np.asarray(arg)


@dataclass
class Sample:
    """Inputs of one call: SparseArgs and numpy arrays, then attributes."""

    args: tuple
    attrs: dict = field(default_factory=dict)
    grad: bool = True           # include in the gradient check
    name: str = ""

    def __repr__(self):
        return f"Sample({self.name or list(self.args)} {self.attrs})"


@dataclass
class SparseOpInfo:
    """One sparse op: how to call it, its numpy reference and its samples.

    ``ref(*args, **attrs)`` gets SparseArgs (sparse operands) and arrays
    (dense ones) and returns the output's dense form as a numpy array.
    ``samples(dtype, rng)`` returns Samples.  ``grad_args`` are the positions
    that receive a gradient; ``dense_op``, when given, is the dense op that
    must agree with the sparse one on the dense form.
    """

    name: str
    op: object
    ref: object
    samples: object
    dtypes: tuple = ALL
    grad_args: tuple = (0,)
    dense_op: object = None

    def __repr__(self):
        return self.name


def all_ops():
    """Every SparseOpInfo from every module of this package."""
    return ops_of(sys.modules[__name__])


# ---------------------------------------------------------------- sample makers
def make(shape, dtype, rng, low=-5, high=5):
    """A random array of ``shape`` and ``dtype`` (values in [low, high), no zeros)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.7
    if dtype.kind in "iu":
        out = rng.integers(1, high, size=shape)
        if dtype.kind == "i":
            out = out * rng.choice([-1, 1], size=shape)
        return out.astype(dtype)
    out = rng.uniform(0.5, high, size=shape) * rng.choice([-1, 1], size=shape)
    if dtype.kind == "c":
        out = out + 1j * rng.uniform(low, high, size=shape)
    return out.astype(dtype)


def coo(shape, sparse_dim, nnz, dtype, rng, index_dtype=np.int64, duplicates=0, tag=""):
    """A random COO operand; ``duplicates`` entries repeat earlier coordinates."""
    sparse_shape = shape[:sparse_dim]
    size = int(np.prod(sparse_shape))
    flat = rng.choice(size, size=min(nnz, size), replace=False) if size else np.zeros(0, int)
    if duplicates and flat.size:
        flat = np.concatenate([flat, rng.choice(flat, size=duplicates)])
    indices = np.array(np.unravel_index(flat, sparse_shape), dtype=index_dtype).reshape(
        sparse_dim, -1)
    values = make((indices.shape[1],) + tuple(shape[sparse_dim:]), dtype, rng)
    return SparseArg("coo", tuple(shape), values, indices=indices, tag=tag)


def csr(shape, nnz, dtype, rng, index_dtype=np.int64, duplicates=0, tag=""):
    """A random 2-D or 3-D CSR operand, columns unsorted within rows, with duplicates."""
    c = coo(shape, len(shape), nnz, dtype, rng, index_dtype, duplicates)
    rows = c.indices[0] * shape[1] + c.indices[1] if len(shape) == 3 else c.indices[0]
    order = np.argsort(rows, kind="stable")
    batch = shape[0] if len(shape) == 3 else 1
    counts = np.bincount(rows, minlength=batch * shape[-2]).reshape(batch, shape[-2])
    crows = np.concatenate([np.zeros((batch, 1), int), np.cumsum(counts, axis=1)], axis=1)
    return SparseArg("csr", tuple(shape), c.values[order], crows=crows.reshape(-1).astype(
        index_dtype), cols=c.indices[-1][order].astype(index_dtype), tag=tag)


def sparse_args(dtype, rng, ranks=(2, 3)):
    """The standard sparse operands for ``dtype``: each case the suite must cover.

    COO 2-D (int64 and int32 indices), COO with duplicates, COO 3-D with a
    dense dim, COO 3-D all sparse, CSR 2-D and 3-D (duplicates, unsorted
    columns), and nnz 0 for both layouts.
    """
    out = []
    if 2 in ranks:
        out += [coo((4, 5), 2, 7, dtype, rng),
                coo((4, 5), 2, 6, dtype, rng, np.int32, tag="/int32"),
                coo((3, 4), 2, 5, dtype, rng, duplicates=3, tag="/dup"),
                coo((3, 4), 2, 0, dtype, rng, tag="/nnz0"),
                csr((4, 5), 8, dtype, rng, duplicates=2, tag="/dup"),
                csr((3, 4), 5, dtype, rng, np.int32, tag="/int32"),
                csr((3, 4), 0, dtype, rng, tag="/nnz0")]
    if 3 in ranks:
        out += [coo((3, 4, 2), 2, 5, dtype, rng, tag="/dense1"),
                coo((2, 3, 4), 3, 9, dtype, rng, duplicates=2, tag="/dup"),
                csr((2, 3, 4), 9, dtype, rng, duplicates=1, tag="/dup")]
    return out


def tensor_of(arg, place="cpu", stop_gradient=True):
    """The phisparse tensor for a SparseArg or a numpy array."""
    if isinstance(arg, SparseArg):
        return arg.build(place, stop_gradient)
    return dense.to_tensor(arg, place=place, stop_gradient=stop_gradient)
