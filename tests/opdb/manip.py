"""Op database entries for the shape and slicing ops and where (references: numpy)."""
import numpy as np

import dense
from kernels.funcs.slicing import resolve_slice

from . import OpInfo, Sample, make


def _one(shapes_attrs, low=-5, high=5):
    def samples(dtype, rng):
        return [Sample((make(s, dtype, rng, low, high),), dict(a), name=f"{s} {a}")
                for s, a in shapes_attrs]
    return samples


TRANSPOSES = [((2, 3), {"perm": [1, 0]}), ((2, 3, 4), {"perm": [2, 0, 1]}), ((), {"perm": []}),
              ((0, 3, 1), {"perm": [-1, 0, 1]}), ((4,), {"perm": [0]})]
SQUEEZES = [((1, 3, 1), {"axis": None}), ((1, 3, 1), {"axis": [0]}), ((1, 3, 1), {"axis": [1, -1]}),
            ((), {"axis": None}), ((0, 1), {"axis": None}), ((2, 3), {"axis": [0]})]
UNSQUEEZES = [((3,), {"axis": [0]}), ((3,), {"axis": [0, -1]}), ((), {"axis": [0]}),
              ((2, 0), {"axis": [1]}), ((2, 3), {"axis": [-1, 1]})]
FLATTENS = [((2, 3, 4), (0, -1)), ((2, 3, 4), (1, -1)), ((2, 3, 4), (0, 1)), ((), (0, -1)),
            ((2, 0, 3), (1, 2)), ((5,), (0, 0))]
FLATTENS = [(s, {"start_axis": a, "stop_axis": b}) for s, (a, b) in FLATTENS]
SLICES = [((4, 5), {"axes": [0], "starts": [1], "ends": [3]}),
          ((4, 5), {"axes": [1, 0], "starts": [-3, -99], "ends": [100, 2]}),
          ((4, 5), {"axes": [-1], "starts": [3], "ends": [1]}),
          ((0, 3), {"axes": [1], "starts": [1], "ends": [2]}),
          ((3, 2, 4), {"axes": [2], "starts": [0], "ends": [-1]})]
STRIDED = [((6,), {"axes": [0], "starts": [-1], "ends": [-7], "strides": [-2]}),
           ((4, 5), {"axes": [1], "starts": [0], "ends": [5], "strides": [2]}),
           ((4, 5), {"axes": [0, 1], "starts": [3, 4], "ends": [0, -9], "strides": [-1, -3]}),
           ((0, 3), {"axes": [1], "starts": [0], "ends": [3], "strides": [2]})]
BASICS = [((3, 4), ([0, 1], [1, -1], [2, -5], [1, -2], [0], [1])),
          ((5,), ([0], [2], [3], [1], [0], [])),
          ((2, 3, 4), ([1], [0], [3], [2], [], [0, -1])),
          ((), ([], [], [], [], [], [0])),
          ((0, 3), ([1], [1], [2], [1], [1], [])),
          ((4, 5), ([-1, 0], [-99, 3], [99, 2], [3, -1], [-2], [-1]))]
BASICS = [(s, dict(zip(("axes", "starts", "ends", "strides", "decrease_axis", "none_axis"), a)))
          for s, a in BASICS]
SELECTS = [((3, 4), [2, 0, 2], 0), ((3, 4), [3, 1], 1), ((3, 4), [], 1), ((2, 3, 2), [1], -2),
           ((0, 3), [0, 2], 1)]


def _select_samples(dtype, rng):
    out = []
    for k, (s, idx, axis) in enumerate(SELECTS):
        index = np.array(idx, np.int64 if k % 2 else np.int32)
        out.append(Sample((make(s, dtype, rng), index), {"axis": axis}, name=f"{s}[{idx}]"))
    return out


def _strided_ref(x, axes, starts, ends, strides):
    window = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, strides):
        window[a] = slice(s, e, st)
    return x[tuple(window)]


def _basic_ref(x, axes, starts, ends, strides, decrease_axis, none_axis):
    out = _strided_ref(x, axes, starts, ends, strides)
    out = np.squeeze(out, axis=tuple(decrease_axis)) if decrease_axis else out
    return np.expand_dims(out, tuple(none_axis)) if none_axis else out


class ListOp:
    """A Tensor[] op called with its tensors one by one (as the generic suites pass them)."""

    def __init__(self, op):
        self.op = op

    def __call__(self, *xs, **attrs):
        return self.op(list(xs), **attrs)

    def infer_meta(self, *args):
        xs = [a for a in args if not isinstance(a, int)]
        return self.op.infer_meta(xs, *[a for a in args if isinstance(a, int)])


LISTS = [([(2, 3), (1, 3), (4, 3)], 0), ([(2, 3), (2, 1)], -1), ([(0, 2), (3, 2)], 0),
         ([(2,)], 0), ([(2, 0, 1), (2, 3, 1)], 1)]
STACKS = [([(2, 3), (2, 3)], 0), ([(2, 3)] * 3, -1), ([(), ()], 0), ([(0, 2), (0, 2)], 1)]


def _list_samples(cases):
    def samples(dtype, rng):
        return [Sample(tuple(make(s, dtype, rng) for s in shapes), {"axis": axis},
                       name=f"{shapes} {axis}") for shapes, axis in cases]
    return samples


WHERES = [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()), ((1, 3), (2, 1), (3,)), ((), (), ()),
          ((0, 2), (2,), (1, 2))]


def _where_samples(dtype, rng):
    return [Sample((rng.random(c) < 0.5, make(sx, dtype, rng), make(sy, dtype, rng)),
                   name=f"{c},{sx},{sy}") for c, sx, sy in WHERES]


OPS = [
    OpInfo("transpose", dense.transpose, lambda x, perm: np.transpose(x, perm),
           _one(TRANSPOSES)),
    OpInfo("squeeze", dense.squeeze, lambda x, axis: x.reshape(
        [s for i, s in enumerate(x.shape) if not (s == 1 and (axis is None or i in
                                                             [a % x.ndim for a in axis]))]),
           _one(SQUEEZES)),
    OpInfo("unsqueeze", dense.unsqueeze, lambda x, axis: np.expand_dims(x, axis) if len(axis) < 2
           else np.expand_dims(np.expand_dims(x, axis[0]), axis[1]), _one(UNSQUEEZES)),
    OpInfo("flatten", dense.flatten,
           lambda x, start_axis=0, stop_axis=-1: x.reshape(1) if x.ndim == 0 else x.reshape(
               x.shape[:start_axis % x.ndim] + (-1,) + x.shape[stop_axis % x.ndim + 1:])
           if x.size else x.reshape(x.shape[:start_axis % x.ndim] + (0,)
                                    + x.shape[stop_axis % x.ndim + 1:]),
           _one(FLATTENS)),
    OpInfo("slice", dense.slice,
           lambda x, axes, starts, ends: x[resolve_slice(x.shape, axes, starts, ends)],
           _one(SLICES)),
    OpInfo("strided_slice", dense.strided_slice, _strided_ref, _one(STRIDED)),
    OpInfo("basic_index", dense.basic_index, _basic_ref, _one(BASICS)),
    OpInfo("index_select", dense.index_select, lambda x, index, axis: np.take(x, index.astype(np.int64), axis),
           _select_samples),
    OpInfo("concat", ListOp(dense.concat), lambda *xs, axis: np.concatenate(xs, axis),
           _list_samples(LISTS), grad_args=(0,)),
    OpInfo("stack", ListOp(dense.stack), lambda *xs, axis: np.stack(xs, axis),
           _list_samples(STACKS), grad_args=(0, 1)),
    OpInfo("where", dense.where, lambda c, x, y: np.asarray(np.where(c, x, y)), _where_samples,
           grad_args=(1, 2)),
]
