"""Rank script: the sbp rules of sparse transpose, slice and index_select on global COO.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/sparse_struct_checks.py``
(tests/test_sparse_struct_mpi.py does, for N = 2 and 3).  Every rank
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
    whole = sparse.sparse_coo_tensor(indices, values.astype(np.float64), shape,
                                     stop_gradient=False)
    ref = fn(whole)
    out = fn(coo_glob(indices, values, shape, src)[1])
    if want is not None:
        assert out.sbp == want, f"{name} {src}: sbp {out.sbp}, expected {want}"
    assert out.shape == ref.shape, f"{name} {src}: shape {out.shape} vs {ref.shape}"
    assert np.array_equal(out.to_dense().numpy(), ref.to_dense().numpy()), \
        f"{name} {src}: forward differs"
    seed = data(ref.shape, np.float64, seed=5)
    ref.to_dense().backward(dense.to_tensor(seed))
    leaf, g = coo_glob(indices, values.astype(np.float64), shape, src, grad=True)
    fn(g).to_dense().backward(dense.to_tensor(seed))
    want_grad = whole.grad.values().numpy()[shard_mask(indices, shape, src)]
    assert np.allclose(leaf.grad.values().numpy(), want_grad), f"{name} {src}: gradient differs"
    CHECKS.append(f"{name} {src}")


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
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
