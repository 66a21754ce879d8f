"""Rank script: every SBP signature, forward and backward, against one process.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/global_checks.py`` (tests/
test_global_mpi.py does, for N = 1, 2, 4, 8).  Every rank computes the
single-process reference itself with local ops and compares: integer
forwards bit for bit, float gradients within tolerance.  A failed check
raises, which aborts the job with a non-zero exit.
"""
import numpy as np

import dense
from kernels.core.dist.comm import world

RANK, SIZE = world().rank, world().size
PLACE = dense.placement()
S, B, P = dense.sbp.split, dense.sbp.broadcast, dense.sbp.partial_sum
CHECKS = []


def shard(a, sbp, rank=RANK):
    """This rank's physical shard of logical ``a``: an addend split by rank under P."""
    if sbp.is_split:
        return np.array_split(a, SIZE, axis=sbp.axis)[rank]
    if sbp.kind == "P":
        return _addends(a)[rank]
    return a


def _addends(a):
    """SIZE arrays summing to ``a`` exactly (integers; floats with integer values)."""
    parts = [np.zeros_like(a) for _ in range(SIZE)]
    for r in range(SIZE):
        parts[r] = (a // SIZE) if r else a - (a // SIZE) * (SIZE - 1)
    return parts


def glob(a, sbp, grad=False):
    t = dense.to_tensor(shard(a, sbp), stop_gradient=not grad)
    return t, t.to_global(placement=PLACE, sbp=sbp)


def data(shape, dtype=np.int64, seed=0):
    return np.random.default_rng(seed).integers(-9, 10, shape).astype(dtype)


def check(name, fn, inputs, want_sbp, grad_args=(0,), numpy_fn=None):
    """``fn`` on global inputs equals ``fn`` on the logical arrays; gradients too.

    ``inputs`` are (array, sbp) pairs; arrays are integers (the forward is
    compared bit for bit), then converted to float64 for the backward.
    ``numpy_fn``, if given, is numpy's function of the arrays that the
    gathered forward must equal too.
    """
    ref = fn(*[dense.to_tensor(a) for a, _ in inputs])
    out = fn(*[glob(a, s)[1] for a, s in inputs])
    assert out.sbp == want_sbp, f"{name}: sbp {out.sbp}, expected {want_sbp}"
    assert out.shape == ref.shape, f"{name}: shape {out.shape} vs {ref.shape}"
    gathered = out.numpy()
    assert np.array_equal(gathered, ref.numpy()), f"{name}: forward differs"
    if numpy_fn is not None:
        assert np.array_equal(gathered, numpy_fn(*[a for a, _ in inputs])), \
            f"{name}: forward differs from numpy"
    _check_grad(name, fn, inputs, grad_args)
    CHECKS.append(name)


def _check_grad(name, fn, inputs, grad_args):
    f_in = [(a.astype(np.float64) if k in grad_args else a, s) for k, (a, s) in enumerate(inputs)]
    ref_in = [dense.to_tensor(a, stop_gradient=k not in grad_args) for k, (a, _) in enumerate(f_in)]
    ref = fn(*ref_in)
    seed = data(ref.shape, np.float64, seed=7)
    ref.backward(dense.to_tensor(seed))
    pairs = [glob(a, s, grad=k in grad_args) for k, (a, s) in enumerate(f_in)]
    fn(*[g for _, g in pairs]).backward(dense.to_tensor(seed))
    for k in grad_args:
        leaf, sbp = pairs[k][0], f_in[k][1]
        want = ref_in[k].grad.numpy()
        want = np.array_split(want, SIZE, axis=sbp.axis)[RANK] if sbp.is_split else want
        assert np.allclose(leaf.grad.numpy(), want), f"{name}: gradient of input {k} differs"


# ---------------------------------------------------------------- boxing
def boxing_checks():
    x = data((5, 3, 7))
    sbps = [S(0), S(1), S(2), B, P]
    for src in sbps:
        for dst in sbps:
            g = glob(x, src)[1].to_global(sbp=dst)
            assert g.sbp == dst and np.array_equal(g.numpy(), x), f"box {src}->{dst}"
            if dst.kind != "P":
                assert np.array_equal(g.to_local().numpy(), shard(x, dst)), f"{src}->{dst}"
            CHECKS.append(f"box {src}->{dst}")
    f = x.astype(np.float64)
    for src in sbps:
        for dst in sbps:
            leaf, g = glob(f, src, grad=True)
            dense.sum(g.to_global(sbp=dst)).backward()
            want = shard(np.ones_like(f), src) if src.kind != "P" else np.ones_like(f)
            assert np.allclose(leaf.grad.numpy(), want), f"box grad {src}->{dst}"


def subplacement_checks():
    """A placement over some ranks: its own sub-communicator; the others hold nothing."""
    ranks = [r for r in range(SIZE) if r % 2 == 1] or [0]
    sub = dense.placement(ranks)
    x = data((5, 3))
    if not sub.is_member:
        try:
            dense.to_tensor(x).to_global(placement=sub, sbp=B)
        except ValueError:
            return
        raise AssertionError("a non-member rank built a global tensor")
    part = np.array_split(x, sub.size)[sub.rank]
    g = dense.to_tensor(part).to_global(placement=sub, sbp=S(0))
    assert g.placement == sub and np.array_equal(dense.sum(g, axis=[0]).numpy(), x.sum(0))
    assert np.array_equal(g.to_global(sbp=S(1)).numpy(), x)
    CHECKS.append(f"sub-placement {ranks}")


def error_checks():
    if SIZE > 1:
        bad = np.zeros((1 + 2 * (RANK == 0), 2))  # rank 0 holds 3 rows, the others 1
        try:
            dense.to_tensor(bad).to_global(placement=PLACE, sbp=S(0))
        except ValueError as exc:
            assert "array_split" in str(exc)
        else:
            raise AssertionError("to_global accepted uneven shards off the array_split rule")
        off = np.zeros((2, 2 + (RANK == 0)))          # shards differ off the split axis
        try:
            dense.to_tensor(off).to_global(placement=PLACE, sbp=S(0))
        except ValueError as exc:
            assert "same dims off axis 0" in str(exc), str(exc)
        else:
            raise AssertionError("to_global accepted shards that differ off the split axis")
        g = dense.to_tensor(np.zeros((4, 3))).to_global(placement=PLACE, sbp=B)
        mine = dense.to_tensor(np.zeros(2 + (RANK == 0), np.int64))   # not the same everywhere
        try:
            dense.gather(g, mine)
        except ValueError as exc:
            assert "gather: the local argument 'index' is taken as broadcast" in str(exc), str(exc)
        else:
            raise AssertionError("a local input of different shapes per rank was accepted")
    try:
        dense.to_tensor(np.zeros(2, bool)).to_global(placement=PLACE, sbp=P)
    except TypeError:
        pass
    else:
        raise AssertionError("a bool partial_sum was accepted")
    try:
        dense.to_tensor(np.zeros(2)).to_global(placement="cpu", sbp=B)
    except TypeError as exc:
        assert "to_global: placement must be a dense.placement" in str(exc) and \
            "'cpu'" in str(exc), str(exc)
    else:
        raise AssertionError("to_global accepted placement='cpu'")
    CHECKS.append("errors")


def to_local_grad_checks():
    """A loss from to_local() of a broadcast tensor, the same on every rank, gives
    the one-process gradient (it counts once, not once a rank); of a split
    tensor, each rank's slice of it."""
    x = data((4, 3), np.float64)
    ref = dense.to_tensor(x, stop_gradient=False)
    (ref * ref).sum().backward()
    for sbp in (B, S(0)):
        leaf, g = glob(x, sbp, grad=True)
        local = g.to_local()
        (local * local).sum().backward()
        want = shard(ref.grad.numpy(), sbp)
        assert np.array_equal(leaf.grad.numpy(), want), f"to_local {sbp} gradient"
        CHECKS.append(f"to_local {sbp} gradient")


# ---------------------------------------------------------------- ops
def reshape_checks():
    x = data((5, 3, 4))
    for sbp, shape, want in [(S(0), [5, 12], S(0)), (S(1), [5, 12], B),
                             (S(1), [5, 3, 2, 2], S(1)), (S(2), [0, 3, 2, 2], B),
                             (P, [60], P), (B, [3, 20], B)]:
        check(f"reshape {sbp} {shape}", lambda t, s=shape: dense.reshape(t, s), [(x, sbp)], want)


def sum_checks():
    x = data((5, 3, 7))
    for sbp, axis, keep, want in [(S(1), [1], False, P), (S(2), [0], False, S(1)),
                                  (S(2), [0], True, S(2)), (S(0), None, False, P),
                                  (S(2), [0, -2], False, S(0)), (P, [1], False, P),
                                  (B, [0], False, B)]:
        check(f"sum {sbp} {axis} {keep}", lambda t, a=axis, k=keep: dense.sum(t, a, k),
              [(x, sbp)], want)


def expand_checks():
    seed = data((4, 3, 1, 2))
    check("expand article S(3)", lambda t: dense.expand(t, [2, 4, 3, 4, 2]), [(seed, S(3))], S(4))
    check("expand -1 S(0)", lambda t: dense.expand(t, [2, -1, 3, 4, 2]), [(seed, S(0))], S(1))
    check("expand size-1 axis", lambda t: dense.expand(t, [4, 3, 5, 2]), [(seed, S(2))], B)
    check("expand P", lambda t: dense.expand(t, [3, 4, 3, 2, 2]), [(seed, P)], P)
    check("expand B", lambda t: dense.expand(t, [4, 3, 2, 2]), [(seed, B)], B)


def repeat_checks():
    x = data((5, 3, 4))
    check("repeat S(1)", lambda t: dense.repeat(t, [2, 1, 1, 3]), [(x, S(1))], S(2))
    check("repeat S(0) repeated", lambda t: dense.repeat(t, [2, 1, 1]), [(x, S(0))], B)
    check("repeat P", lambda t: dense.repeat(t, [2, 2, 1]), [(x, P)], P)


def gather_checks():
    x = data((5, 4, 6))
    idx = np.array([[3, 0, 2], [1, 3, 3]])          # k = 2
    g = lambda a, i, **kw: dense.gather(a, i, **kw)
    for (xs, iss), kw, want in [
            ((B, S(0)), {"axis": 1}, S(1)),         # index split(i >= bd): split(axis + i - bd)
            ((B, S(1)), {"axis": 0}, S(1)),
            ((S(0), B), {"axis": 0}, P),            # x split on the gather axis: partial_sum
            ((S(1), B), {"axis": 1}, P),
            ((S(0), B), {"axis": 1}, S(0)),         # bd <= d < axis
            ((S(2), B), {"axis": 1}, S(3)),         # d > axis: d + k - bd - 1
            ((P, B), {"axis": 2}, P)]:
        check(f"gather {xs} {iss} {kw}", lambda a, i, kw=kw: g(a, i, **kw),
              [(x, xs), (idx, iss)], want)
    xb = data((3, 4, 6))
    ib = np.array([[0, 3], [2, 2], [1, 0]])         # batch_dims = 1, k = 2
    for (xs, iss), kw, want in [
            ((S(0), S(0)), {"axis": 1, "batch_dims": 1}, S(0)),   # split batch dims
            ((B, S(1)), {"axis": 2, "batch_dims": 1}, S(2)),
            ((S(1), B), {"axis": 1, "batch_dims": 1}, P),
            ((S(1), B), {"axis": 2, "batch_dims": 1}, S(1)),
            ((S(2), B), {"axis": 1, "batch_dims": 1}, S(2))]:
        check(f"gather batch {xs} {iss} {kw}", lambda a, i, kw=kw: g(a, i, **kw),
              [(xb, xs), (ib, iss)], want)
    article_rows_0_2_and_2_5()


def article_rows_0_2_and_2_5():
    """The layout of OneFlow's gather-primitive article: rank 0 holds gather rows [0, 2), rank 1 rows [2, 5).

    It is not an array_split of 5, so the shards are made by hand with the
    offset/zero-fill kernel mode and summed as a partial_sum tensor.
    """
    if SIZE != 2:
        return
    from kernels.dense.gather import gather as gather_local
    x, idx = data((5, 3)), np.array([4, 0, 2, 1, 3, 2])
    lo, hi = [(0, 2), (2, 5)][RANK]
    part = gather_local(x[lo:hi], idx, 0, 0, offset=lo, bound=5)
    out = dense.to_tensor(part).to_global(placement=PLACE, sbp=P)
    assert np.array_equal(out.numpy(), np.take(x, idx, axis=0)), "article gather rows"
    CHECKS.append("gather article rows [0,2) [2,5)")


def batch_gather_checks():
    x = data((4, 3, 5, 2))
    idx = np.array([[[0, 4, 4], [1, 0, 3], [2, 2, 2]]] * 4)   # [4, 3, 3]: k = 3
    for xs, iss, want in [(S(0), S(0), S(0)), (S(1), S(1), S(1)),   # split batch dims
                          (B, S(2), S(2)),                          # not partial_sum
                          (S(2), B, P), (S(3), B, S(3)), (P, B, P)]:
        check(f"batch_gather {xs} {iss}", dense.batch_gather, [(x, xs), (idx, iss)], want)


# ---------------------------------------------------------------- sparse COO
def coo_shard(indices, values, shape, sbp):
    """This rank's COO shard: its rows under split, every SIZE-th nonzero under P."""
    if sbp.kind == "P":
        keep = np.arange(values.shape[0]) % SIZE == RANK
        return indices[:, keep], values[keep], shape
    if sbp.kind == "B":
        return indices, values, shape
    ax, n = sbp.axis, shape[sbp.axis]
    lo = sum(len(c) for c in np.array_split(np.arange(n), SIZE)[:RANK])
    hi = lo + len(np.array_split(np.arange(n), SIZE)[RANK])
    keep = (indices[ax] >= lo) & (indices[ax] < hi)
    idx = indices[:, keep].copy()
    idx[ax] -= lo
    local = list(shape)
    local[ax] = hi - lo
    return idx, values[keep], tuple(local)


def coo_glob(indices, values, shape, sbp, grad=False):
    import sparse
    i, v, sh = coo_shard(indices, values, shape, sbp)
    t = sparse.sparse_coo_tensor(i, v, sh, stop_gradient=not grad)
    return t, t.to_global(placement=PLACE, sbp=sbp)


def sparse_checks():
    import sparse
    rng = np.random.default_rng(3)
    shape = (6, 5, 2)
    nnz = 11
    indices = np.stack([rng.integers(0, 6, nnz), rng.integers(0, 5, nnz)])
    indices[:, 1] = indices[:, 0]                       # one duplicate coordinate
    values = rng.integers(-9, 10, (nnz, 2))
    dense_x = np.zeros(shape, np.int64)
    np.add.at(dense_x, tuple(indices), values)
    sbps = [S(0), S(1), B, P]
    for src in sbps:
        for dst in sbps:
            g = coo_glob(indices, values, shape, src)[1].to_global(sbp=dst)
            assert g.sbp == dst and np.array_equal(g.to_dense().numpy(), dense_x), \
                f"coo box {src}->{dst}"
            assert g.nnz() == (nnz if dst.kind != "B" else g.to_local().nnz()), \
                f"coo nnz {src}->{dst}"
            CHECKS.append(f"coo box {src}->{dst}")
    for src, want in [(P, P), (B, B), (S(0), P), (S(1), P)]:
        y = sparse.reshape(coo_glob(indices, values, shape, src)[1], [3, 10, 2])
        assert y.sbp == want, f"sparse reshape {src}: {y.sbp}"
        assert np.array_equal(y.to_dense().numpy(), dense_x.reshape(3, 10, 2)), \
            f"sparse reshape {src}: forward differs"
        CHECKS.append(f"sparse reshape {src}")
    fvalues = values.astype(np.float64)
    seed = data((3, 10, 2), np.float64, seed=5)
    for src in (P, B):
        leaf, g = coo_glob(indices, fvalues, shape, src, grad=True)
        y = sparse.reshape(g, [3, 10, 2]).to_dense()
        y.backward(dense.to_tensor(seed))
        i, _, _ = coo_shard(indices, fvalues, shape, src)
        want = seed.reshape(shape)[tuple(i)]
        assert np.allclose(leaf.grad.values().numpy(), want), f"sparse reshape grad {src}"
        CHECKS.append(f"sparse reshape grad {src}")
    coo_boxing_grad_checks(indices, fvalues, shape)


def coo_boxing_grad_checks(indices, values, shape):
    """A COO leaf re-boxed to every sbp gets d(sum(seed * x))/d(entry) = seed at the
    entry's logical coordinate, duplicates included."""
    seed = data(shape, np.float64, seed=9)
    sbps = [S(0), S(1), B, P]
    for src in sbps:
        i, _, _ = coo_shard(indices, values, shape, src)
        if src.is_split:      # the leaf's local coordinates, shifted to logical ones
            n = shape[src.axis]
            i = i.copy()
            i[src.axis] += sum(len(c) for c in np.array_split(np.arange(n), SIZE)[:RANK])
        for dst in sbps:
            leaf, g = coo_glob(indices, values, shape, src, grad=True)
            g.to_global(sbp=dst).to_dense().backward(dense.to_tensor(seed))
            got = leaf.grad.values().numpy()
            assert np.allclose(got, seed[tuple(i)]), f"coo box grad {src}->{dst}"
            CHECKS.append(f"coo box grad {src}->{dst}")


def transfer_path_checks():
    """Every boxing again with strided blocks all sent as MPI derived datatypes
    (RUN_BYTES = 0) and all packed by numpy (no run long enough), gathers along
    a later axis through Alltoallw (SMALL_GATHER_BYTES = 0) and through one
    packed Allgatherv, bit for bit, for items of 1, 4, 8 and 16 bytes and empty
    tensors, dense and COO."""
    from kernels.core.dist import comm
    sbps = [S(0), S(1), S(2), B, P]
    saved = comm.RUN_BYTES, comm.SMALL_GATHER_BYTES
    try:
        for run_bytes, small in ((0, 0), (1 << 62, 0), (0, 1 << 62)):
            comm.RUN_BYTES, comm.SMALL_GATHER_BYTES = run_bytes, small
            for dtype, shape in [(np.int8, (5, 3, 7)), (np.float32, (5, 3, 7)),
                                 (np.int64, (5, 3, 7)), (np.complex128, (5, 3, 7)),
                                 (np.int64, (0, 2, 5)), (np.int64, (2, 3, 0))]:
                x = data(shape, dtype, seed=11)
                kinds = sbps if dtype != np.complex128 else sbps[:4]   # no complex //
                for src in kinds:
                    for dst in kinds:
                        g = glob(x, src)[1].to_global(sbp=dst)
                        assert np.array_equal(g.numpy(), x), f"{run_bytes} {dtype} {src}->{dst}"
                        if dst.kind != "P":
                            assert np.array_equal(g.to_local().numpy(), shard(x, dst))
            rng = np.random.default_rng(4)
            indices = np.stack([rng.integers(0, 6, 40), rng.integers(0, 5, 40)])
            # nonzeros travel as packed records of coordinates and value bytes:
            # widths that leave the records unaligned (int8, float32) included
            for dtype, dense_shape in [(np.int64, (2,)), (np.int8, ()), (np.float32, (3,))]:
                values = rng.integers(-9, 10, (40,) + dense_shape).astype(dtype)
                want = np.zeros((6, 5) + dense_shape, dtype)
                np.add.at(want, tuple(indices), values)
                for src in sbps[:2] + sbps[3:]:
                    for dst in sbps[:2] + sbps[3:]:
                        g = coo_glob(indices, values, (6, 5) + dense_shape, src)[1]
                        g = g.to_global(sbp=dst)
                        assert np.array_equal(g.to_dense().numpy(), want), \
                            f"coo {dtype.__name__} {src}->{dst}"
            CHECKS.append(f"transfer paths RUN_BYTES={run_bytes} SMALL={small}")
    finally:
        comm.RUN_BYTES, comm.SMALL_GATHER_BYTES = saved


def main():
    boxing_checks()
    error_checks()
    to_local_grad_checks()
    subplacement_checks()
    reshape_checks()
    sum_checks()
    expand_checks()
    repeat_checks()
    sparse_checks()
    transfer_path_checks()
    if hasattr(dense, "gather"):
        gather_checks()
        batch_gather_checks()
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
