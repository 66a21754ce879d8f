"""Rank script: the sbp rules of sparse transpose, slice, index_select, concat and stack
on global COO.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/sparse_struct_checks.py``
(tests/test_global_mpi.py does, for N = 2 and 3).  Every rank
compares the global result with the op on the whole tensor in one process:
the output sbp the rule gives, the logical forward bit for bit, and each
rank's leaf gradient (the upstream value at each of its entries' images).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from global_checks import B, P, RANK, S, SIZE, coo_glob, data  # noqa: E402

import dense  # noqa: E402
import sparse  # noqa: E402

CHECKS = []


def shard_mask(indices, shape, sbp):
    """Which of the logical entries this rank's shard holds (as global_checks.coo_shard cuts)."""
    nnz = indices.shape[1]
    if sbp.kind == "P":
        return np.arange(nnz) % SIZE == RANK
    if sbp.kind == "B":
        return np.ones(nnz, bool)
    parts = np.array_split(np.arange(shape[sbp.axis]), SIZE)
    lo = sum(len(c) for c in parts[:RANK])
    return (indices[sbp.axis] >= lo) & (indices[sbp.axis] < lo + len(parts[RANK]))


def check(name, fn, indices, values, shape, src, want):
    """fn on the global COO equals fn on the whole one: sbp, forward and every rank's gradient."""
    check_list(name, lambda ts: fn(ts[0]), [(indices, values, shape, src)], want)


def to_numpy(indices, values, shape):
    """The dense array of COO parts, duplicates summed."""
    out = np.zeros(shape, values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


def check_list(name, fn, inputs, want, numpy_fn=None):
    """fn of a list of global COO tensors, each ``(indices, values, shape, sbp)``, equals
    fn of the whole ones: the output sbp, the forward (and ``numpy_fn`` of the dense
    arrays, if given), and every leaf's gradient on this rank (the upstream value at
    each of its entries' images)."""
    wholes = [sparse.sparse_coo_tensor(i, v.astype(np.float64), sh, stop_gradient=False)
              for i, v, sh, _ in inputs]
    ref = fn(wholes)
    out = fn([coo_glob(i, v, sh, s)[1] for i, v, sh, s in inputs])
    srcs = [s for *_, s in inputs]
    if want is not None:
        assert out.sbp == want, f"{name} {srcs}: sbp {out.sbp}, expected {want}"
    assert out.shape == ref.shape, f"{name} {srcs}: shape {out.shape} vs {ref.shape}"
    gathered = out.to_dense().numpy()
    assert np.array_equal(gathered, ref.to_dense().numpy()), f"{name} {srcs}: forward differs"
    if numpy_fn is not None:
        assert np.array_equal(gathered, numpy_fn([to_numpy(*t[:3]) for t in inputs])), \
            f"{name} {srcs}: forward differs from numpy"
    seed = data(ref.shape, np.float64, seed=5)
    ref.to_dense().backward(dense.to_tensor(seed))
    pairs = [coo_glob(i, v.astype(np.float64), sh, s, grad=True) for i, v, sh, s in inputs]
    fn([g for _, g in pairs]).to_dense().backward(dense.to_tensor(seed))
    for k, ((leaf, _), whole, (i, _, sh, s)) in enumerate(zip(pairs, wholes, inputs)):
        want_grad = whole.grad.values().numpy()[shard_mask(i, sh, s)]
        assert np.allclose(leaf.grad.values().numpy(), want_grad), \
            f"{name} {srcs}: gradient of input {k} differs"
    CHECKS.append(f"{name} {srcs}")


def list_checks(rng):
    """concat and stack of global COO lists: one sbp for the list, a split of a
    sparse dim other than the concat axis stays split; a split on the concat
    axis has no rule, and COO boxes it to partial_sum (free: a shift of
    coordinates); mixed sbps are boxed to the cheapest common one."""
    def coo(shape, nnz, dense_dims=()):
        idx = np.stack([rng.integers(0, n, nnz) for n in shape])
        idx[:, 1] = idx[:, 0]                                # a duplicate coordinate
        return idx, rng.integers(-9, 10, (nnz,) + dense_dims), shape + dense_dims

    def concat(name, axis, inputs, want):
        check_list(name, lambda ts: sparse.concat(ts, axis), inputs, want,
                   lambda xs: np.concatenate(xs, axis))

    def stack(name, axis, inputs, want):
        check_list(name, lambda ts: sparse.stack(ts, axis), inputs, want,
                   lambda xs: np.stack(xs, axis))

    a, b, c = coo((2, 5, 7), 6), coo((5, 5, 7), 9), coo((2, 5, 7), 5)
    for sbp, want in [(S(1), S(1)), (S(2), S(2)), (P, P), (B, B), (S(0), P)]:
        concat(f"concat axis 0 {sbp}", 0, [(*a, sbp), (*b, sbp), (*c, sbp)], want)
    concat("concat axis 0 equal sizes S(0)", 0, [(*a, S(0)), (*c, S(0))], P)
    concat("concat axis 0 mixed", 0, [(*a, S(1)), (*b, B), (*c, S(1))], S(1))
    concat("concat axis -1 mixed", -1, [(*a, S(0)), (*a, P)], P)
    h, g = coo((4, 5), 7, (3,)), coo((4, 5), 4, (2,))       # hybrid: concat a dense dim
    for sbp, want in [(S(0), S(0)), (S(1), S(1)), (P, P)]:
        concat(f"concat hybrid axis 2 {sbp}", 2, [(*h, sbp), (*g, sbp)], want)
    for axis, sbp, want in [(0, S(0), S(1)), (1, S(0), S(0)), (1, S(1), S(2)),
                            (-1, S(2), S(2)), (2, P, P)]:
        stack(f"stack axis {axis} {sbp}", axis, [(*a, sbp), (*c, sbp)], want)
    h2 = coo((4, 5), 3, (3,))
    stack("stack hybrid axis 0 S(1)", 0, [(*h, S(1)), (*h2, S(1))], S(2))
    stack("stack hybrid axis 3 (folds the dense dim) S(1)", 3, [(*h, S(1)), (*h2, S(1))],
          S(1))


def main():
    rng = np.random.default_rng(2)
    shape = (6, 5, 4)
    nnz = 15
    indices = np.stack([rng.integers(0, n, nnz) for n in shape])
    indices[:, 1] = indices[:, 0]                        # a duplicate coordinate
    values = rng.integers(-9, 10, nnz)
    perm = [2, 0, 1]                                    # output j holds input perm[j]
    for src, want in [(S(0), S(1)), (S(1), S(2)), (S(2), S(0)), (P, P), (B, B)]:
        check("transpose", lambda t: sparse.transpose(t, perm), indices, values, shape, src, want)
    cut = ([1, -1], [1, 0], [4, 3])                      # axes 1 and 2 cut, axis 0 whole
    for src, want in [(S(0), S(0)), (P, P), (B, B), (S(1), None), (S(2), None)]:
        check("slice", lambda t: sparse.slice(t, *cut), indices, values, shape, src, want)
    whole_window = ([0, 2], [0, -100], [100, 4])         # named but not cut: still split
    check("slice uncut", lambda t: sparse.slice(t, *whole_window), indices, values, shape,
          S(2), S(2))
    index = np.array([3, 0, 3, 4])
    for src, want in [(S(0), S(0)), (S(2), S(2)), (P, P), (B, B), (S(1), None)]:
        check("index_select", lambda t: sparse.index_select(t, index, 1), indices, values,
              shape, src, want)
    hybrid = (6, 5, 2)
    h_indices, h_values = indices[:2], rng.integers(-9, 10, (nnz, 2))
    for src, want in [(S(0), S(1)), (S(1), S(0)), (P, P)]:
        check("transpose hybrid", lambda t: sparse.transpose(t, [1, 0, 2]), h_indices,
              h_values, hybrid, src, want)
    # a COO tensor is never split along a dense dim: softmax along axis 0 of a hybrid
    # partial_sum (no P rule) boxes to broadcast, not to split(1); rows 0 and 1 twice,
    # on two ranks under P: softmax maps each stored entry, so each copy gets its own
    # gradient (the boxing's backward is positional)
    check("softmax hybrid", lambda t: sparse.softmax(t, 0), np.array([[0, 1, 3, 5, 0, 1]]),
          h_values[:6] / 4.0, (6, 2), P, B)
    # the shape [6, -1] of a (4, 2, 0) tensor resolves to [6, 0]; each rank's reshape
    # resolves the caller's [6, -1] again (the resolved 0 would copy x's dim 1, 2)
    empty = (np.array([[0, 3], [1, 0]]), np.zeros((2, 0)), (4, 2, 0))
    for src, want in [(B, B), (P, P), (S(0), P)]:
        check("reshape -1 resolving to 0", lambda t: sparse.reshape(t, [6, -1]), *empty,
              src, want)
    list_checks(rng)
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
