"""Rank script: the sbp signatures of sparse matmul, mv and addmm against one process.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/matmul_checks.py``
(tests/test_sparse_matmul_mpi.py does, for N = 1, 2, 3).  Sparse operands are
COO, split by rows or columns or held as partial_sum by nonzeros.  Every
rank computes the single-process reference itself: integer forwards are
compared bit for bit, float64 gradients within tolerance (a sparse leaf's
gradient at each of its local entries is the one-process gradient at the
entry's logical coordinate).
"""
import numpy as np

import dense
import sparse
from global_checks import B, CHECKS, PLACE, RANK, SIZE, S, P, coo_shard, data, shard

RNG = np.random.default_rng(5)


class Coo:
    """A logical COO operand: indices (a duplicate included) and values."""

    def __init__(self, shape, nnz):
        self.shape = shape
        self.indices = np.stack([RNG.integers(0, s, nnz) for s in shape])
        self.indices[:, 1] = self.indices[:, 0]
        self.values = RNG.integers(-9, 10, nnz)

    def full(self, values, grad=False):
        return sparse.sparse_coo_tensor(self.indices, values, list(self.shape),
                                        stop_gradient=not grad)

    def glob(self, values, sbp, grad=False):
        i, v, sh = coo_shard(self.indices, values, self.shape, sbp)
        leaf = sparse.sparse_coo_tensor(i, v, list(sh), stop_gradient=not grad)
        return leaf, leaf.to_global(placement=PLACE, sbp=sbp)

    def logical_local_coords(self, sbp):
        i, _, _ = coo_shard(self.indices, self.values, self.shape, sbp)
        if sbp.is_split:
            n = self.shape[sbp.axis]
            i = i.copy()
            i[sbp.axis] += sum(len(c) for c in np.array_split(np.arange(n), SIZE)[:RANK])
        return i


class Dense:
    def __init__(self, shape):
        self.shape = shape
        self.values = data(shape, seed=int(RNG.integers(100)))

    def full(self, values, grad=False):
        return dense.to_tensor(values, stop_gradient=not grad)

    def glob(self, values, sbp, grad=False):
        leaf = dense.to_tensor(shard(values, sbp), stop_gradient=not grad)
        return leaf, leaf.to_global(placement=PLACE, sbp=sbp)


def as_dense(t):
    return t if t.layout == "dense" else t.to_dense()


def check(name, fn, operands, sbps, want, train=None):
    """Forward and sbp against one process, and the gradients of the operands ``train``
    marks (all by default; the others get none, as the backward's grad_mask says)."""
    train = train or (True,) * len(operands)
    ref = as_dense(fn(*[o.full(o.values) for o in operands]))
    out = fn(*[o.glob(o.values, s)[1] for o, s in zip(operands, sbps)])
    assert out.sbp == want, f"{name}: sbp {out.sbp}, expected {want}"
    assert np.array_equal(as_dense(out).numpy(), ref.numpy()), f"{name}: forward differs"
    floats = [o.values.astype(np.float64) for o in operands]
    refs = [o.full(v, grad=t) for o, v, t in zip(operands, floats, train)]
    seed = data(ref.shape, np.float64, seed=7)
    as_dense(fn(*refs)).backward(dense.to_tensor(seed))
    pairs = [o.glob(v, s, grad=t) for o, v, s, t in zip(operands, floats, sbps, train)]
    as_dense(fn(*[g for _, g in pairs])).backward(dense.to_tensor(seed))
    for k, (o, s, r, (leaf, _)) in enumerate(zip(operands, sbps, refs, pairs)):
        if not train[k]:
            assert leaf.grad is None, f"{name}: operand {k} got a gradient"
            continue
        if isinstance(o, Dense):
            want_grad = shard(r.grad.numpy(), s) if s.is_split else r.grad.numpy()
            got = leaf.grad.numpy()
        else:
            field = np.zeros(o.shape)
            field[tuple(o.indices)] = r.grad.values().numpy()
            want_grad = field[tuple(o.logical_local_coords(s))]
            got = leaf.grad.values().numpy()
        assert np.allclose(got, want_grad), f"{name}: gradient of operand {k} differs"
    CHECKS.append(name)


def matmul_checks():
    x, y = Coo((7, 5), 12), Dense((5, 4))
    for sx, sy, want in [(S(0), B, S(0)), (B, S(1), S(1)), (S(1), S(0), P), (P, B, P),
                         (B, P, P)]:
        check(f"sparse @ dense {sx} {sy}", sparse.matmul, [x, y], [sx, sy], want)
    left, z = Dense((3, 7)), Coo((7, 6), 10)
    for sx, sy, want in [(S(0), B, S(0)), (B, S(1), S(1)), (S(1), S(0), P), (P, B, P),
                         (B, P, P)]:
        check(f"dense @ sparse {sx} {sy}", sparse.matmul, [left, z], [sx, sy], want)
    for sx, sy, want in [(S(0), B, S(0)), (B, S(1), S(1)), (S(1), S(0), P), (P, B, P)]:
        check(f"sparse @ sparse {sx} {sy}", sparse.matmul, [x, z.__class__((5, 6), 9)],
              [sx, sy], want)
    xb, yb = Coo((3, 4, 5), 14), Dense((3, 5, 2))
    for sx, sy, want in [(S(0), S(0), S(0)), (S(1), B, S(1)), (S(2), S(1), P)]:
        check(f"batched sparse @ dense {sx} {sy}", sparse.matmul, [xb, yb], [sx, sy], want)
    inp = Dense((7, 4))

    def addmm(i, a, b):
        return sparse.addmm(i, a, b, beta=2.0, alpha=3.0)
    for si, sx, sy, want in [(S(0), S(0), B, S(0)), (S(1), B, S(1), S(1)), (P, P, B, P),
                             (P, B, P, P)]:
        check(f"addmm {si} {sx} {sy}", addmm, [inp, x, y], [si, sx, sy], want)
    vec = Dense((5,))
    for sx, sv, want in [(S(0), B, S(0)), (S(1), S(0), P), (P, B, P), (B, P, P)]:
        check(f"mv {sx} {sv}", sparse.mv, [x, vec], [sx, sv], want)
    masked_checks(x, y, z, addmm)


def masked_checks(x, y, z, addmm):
    """One operand trainable: each shard's backward gets a grad_mask."""
    for train in [(True, False), (False, True)]:
        check(f"sparse @ dense S(1) S(0) train {train}", sparse.matmul, [x, y], [S(1), S(0)],
              P, train)
        check(f"dense @ sparse S(0) B train {train}", sparse.matmul, [Dense((3, 7)), z],
              [S(0), B], S(0), train)
        check(f"sparse @ sparse P B train {train}", sparse.matmul, [x, Coo((5, 6), 9)],
              [P, B], P, train)
    for train in [(True, False, False), (False, True, False), (False, False, True)]:
        check(f"addmm S(0) S(0) B train {train}", addmm, [Dense((7, 4)), x, y],
              [S(0), S(0), B], S(0), train)


def main():
    matmul_checks()
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
