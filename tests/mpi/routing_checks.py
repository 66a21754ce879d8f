"""Rank script: COO routing (split -> split, partial_sum -> split) against a reference.

Every rank's shard is gathered with mpi4py and the expected result computed
with numpy: rank r gets, sender by sender in rank order and in each sender's
entry order, the nonzeros whose coordinate along the target axis lies in its
``numpy.array_split`` slice, made local to it.  The route's adjoint must give
each input entry the gradient of the output entry it became.  Each case also
runs with tiny grouping chunks (several chunks per shard), with the radix
sort and owner arithmetic that past 8 ranks replace the per-owner passes and
comparisons, and with the index matrix in either memory order (on every rank or on some).

Run as ``mpiexec -n N python -m mpi4py tests/mpi/routing_checks.py``.
"""
import itertools

import numpy as np

import dense
from kernels.core.dist import boxing
from kernels.core.dist.comm import world

W = world()
RANK, SIZE = W.rank, W.size
S, P = dense.sbp.split, dense.sbp.partial_sum


def starts(n):
    return np.concatenate([[0], np.cumsum([len(p) for p in np.array_split(np.arange(n), SIZE)])])


def shard(seed, shape, src, sorted_rows):
    """This rank's (local indices, values) of a random COO with duplicates."""
    rng = np.random.default_rng(seed * 100 + RANK)
    local = list(shape[:2])
    if src.kind == "S":
        local[src.axis] = starts(shape[src.axis])[RANK + 1] - starts(shape[src.axis])[RANK]
    nnz = int(rng.integers(0, 60)) if min(local) > 0 else 0
    idx = np.stack([rng.integers(0, max(s, 1), nnz) for s in local]).astype(np.int64)
    if sorted_rows:
        idx = idx[:, np.argsort(idx[0], kind="stable")]
    vals = rng.standard_normal((nnz,) + tuple(shape[2:])).astype(np.float32)
    return idx, vals


def expected(idx, vals, shape, src, dst):
    """The reference result on this rank, each of our entries' destination
    rank, and how many entries the ranks before us send to each rank."""
    shards = W.mpi.allgather((idx, vals))
    lo = starts(shape[dst.axis])
    owners = [np.searchsorted(lo, i[dst.axis], side="right") - 1 for i, _ in shards]
    out_idx, out_val = [], []
    for q, ((i, v), owner) in enumerate(zip(shards, owners)):
        i = i[:, owner == RANK].copy()
        if src.kind == "S":
            i[src.axis] += starts(shape[src.axis])[q]
        i[dst.axis] -= lo[RANK]
        out_idx.append(i)
        out_val.append(v[owner == RANK])
    before = [sum(int(np.sum(owners[q] == d)) for q in range(RANK)) for d in range(SIZE)]
    return np.concatenate(out_idx, axis=1), np.concatenate(out_val), owners[RANK], before


def positions(landing, before):
    """Each of our entries' position in its destination rank's result."""
    pos = np.empty(landing.shape[0], np.int64)
    for d in range(SIZE):
        mine = landing == d
        pos[mine] = before[d] + np.arange(int(mine.sum()))
    return pos


def check(seed, src, dst, sorted_rows, hybrid, columns):
    shape = (5 * SIZE + 3, 4 * SIZE + 1) + ((3,) if hybrid else ())
    idx, vals = shard(seed, shape, src, sorted_rows)
    if columns == "all" or (columns == "odd" and RANK % 2):
        idx = np.asfortranarray(idx)     # each entry's coordinates adjacent: argwhere(x).T
    got_idx, got_val, steps = boxing.box_coo(idx, vals, shape, src, dst, W)
    want_idx, want_val, landing, before = expected(idx, vals, shape, src, dst)
    assert got_idx.dtype == idx.dtype and got_val.dtype == vals.dtype
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(got_val, want_val)
    grad = np.random.default_rng(seed + 7 * RANK).standard_normal(got_val.shape)
    back = boxing.coo_adjoint(grad.astype(np.float32), steps, W)
    every = W.mpi.allgather(grad.astype(np.float32))
    pos = positions(landing, before)
    want = np.array([every[d][p] for d, p in zip(landing, pos)]).reshape(vals.shape)
    np.testing.assert_array_equal(back, want)


def main():
    default = boxing._CHUNK, boxing._FEW, boxing._COMPARE
    settings = [default, (3, boxing._FEW, boxing._COMPARE), (4, 0, 0)]
    cases = [(S(1), S(0)), (S(0), S(1)), (P, S(0)), (P, S(1))]
    count = 0
    for setting, (src, dst), sorted_rows, hybrid, columns in itertools.product(
            settings, cases, (False, True), (False, True), ("none", "odd", "all")):
        boxing._CHUNK, boxing._FEW, boxing._COMPARE = setting
        try:
            check(count, src, dst, sorted_rows, hybrid, columns)
        finally:
            boxing._CHUNK, boxing._FEW, boxing._COMPARE = default
        count += 1
    print(f"rank {RANK}: {count} passed, 0 failed", flush=True)


main()
