"""Op database entries for gather and batch_gather (references: np.take, np.take_along_axis)."""
import numpy as np

import dense

from . import OpInfo, Sample, make

# (x shape, index values or shape, axis, batch_dims); an index given as a shape
# draws values in [-n, n).  The examples of OneFlow's gather-primitive article come first.
GATHERS = [((6,), [2, 3], None, 0),
           ((4, 3), [2, 1], 0, 0),
           ((4, 3), [2, 1], 1, 0),
           ((4, 3), [[2, 0], [0, 1]], 0, 0),
           ((4, 3), [[2, 0], [0, 1]], 1, 0),
           ((4, 3), [[2, 1], [0, 2], [1, 1], [1, 0]], 1, 1),
           ((4, 2, 3, 2), (4, 2, 5), 3, 2),
           ((2, 5, 2), (2, 3), 1, 0),
           ((2, 3, 4), (3, 2), -1, 0),
           ((2, 3, 4), (2, 5), 2, -1),
           ((2, 3, 4), (2,), 1, 1),
           ((2, 3, 4), (2, 3, 2), None, 2),
           ((4, 3), np.array(-1), 0, 0),
           ((3, 4, 2), [1, 1, 1, 3, -1, 0, 1, -3], 1, 0),
           ((0, 3), (2,), 1, 0),
           ((3, 0), (0,), 1, 0),
           ((2, 3), (0, 4), 0, 0),
           ((2, 3, 0), (2, 2), 1, 1)]


def _index(spec, n, rng, dtype=np.int64):
    if isinstance(spec, tuple):
        return rng.integers(-n, n, size=spec).astype(dtype) if n else np.zeros(spec, dtype)
    return np.asarray(spec, dtype=dtype)


def _axis(shape, index_ndim, axis, batch_dims):
    bd = batch_dims + index_ndim if batch_dims < 0 else batch_dims
    return bd if axis is None else axis % len(shape)


def _gather_samples(dtype, rng):
    out = []
    for k, (shape, spec, axis, bd) in enumerate(GATHERS):
        ndim = len(spec) if isinstance(spec, tuple) else np.ndim(spec)
        n = shape[_axis(shape, ndim, axis, bd)]
        index = _index(spec, n, rng, np.int32 if k % 3 == 2 else np.int64)
        out.append(Sample((make(shape, dtype, rng), index),
                          {"axis": axis, "batch_dims": bd},
                          name=f"{shape}[{index.shape}]"))
    return out


def gather_ref(x, index, axis=None, batch_dims=0):
    """tf.gather by recursion over the batch dims, np.take on each batch."""
    index = np.asarray(index).astype(np.int64)
    bd = batch_dims + index.ndim if batch_dims < 0 else batch_dims
    ax = bd if axis is None else axis % x.ndim
    if bd == 0:
        return np.asarray(np.take(x, index, axis=ax))
    out = np.empty(x.shape[:ax] + index.shape[bd:] + x.shape[ax + 1:], x.dtype)
    for i in range(x.shape[0]):
        out[i] = gather_ref(x[i], index[i], ax - 1, bd - 1)
    return out


# (x shape, index shape): batch_gather gathers axis index.ndim - 1.
BATCH_GATHERS = [((2, 3), (2,)), ((2, 2, 3), (2, 2)), ((4, 2, 3, 2), (4, 2, 5)),
                 ((3, 5), (3, 7)), ((5,), (4,)), ((2, 3, 4), (2, 3, 4)),
                 ((0, 3), (0, 2)), ((3, 4, 0), (3, 2)), ((3, 4), (3, 0))]


def _batch_gather_samples(dtype, rng):
    out = []
    for k, (shape, ishape) in enumerate(BATCH_GATHERS):
        index = _index(ishape, shape[len(ishape) - 1], rng, np.int32 if k % 2 else np.int64)
        out.append(Sample((make(shape, dtype, rng), index), name=f"{shape}[{ishape}]"))
    return out


def batch_gather_ref(x, index):
    """np.take_along_axis with index broadcast over the trailing dims of x."""
    index = np.asarray(index).astype(np.int64)
    k = index.ndim
    idx = index.reshape(index.shape + (1,) * (x.ndim - k))
    idx = np.broadcast_to(idx, index.shape + x.shape[k:])
    return np.take_along_axis(x, idx, axis=k - 1)


OPS = [
    OpInfo("gather", dense.gather, gather_ref, _gather_samples),
    OpInfo("batch_gather", dense.batch_gather, batch_gather_ref, _batch_gather_samples),
]
