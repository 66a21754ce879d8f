"""Rank script: SBP signatures of the sparse arithmetic ops against one process.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/sparse_arith_checks.py``
(tests/test_global_mpi.py does, for N = 2 and 3).  COO operands are
sharded by nonzeros (partial_sum: every SIZE-th entry on each rank), by rows
(split(0)) or whole (broadcast); every rank computes the single-process
result with local ops and compares the logical result, its sbp and the
leaves' gradients.  Values are small integers, so sums are exact.
"""
import numpy as np

import dense
import sparse
from kernels.core.dist.comm import world

RANK, SIZE = world().rank, world().size
PLACE = dense.placement()
S, B, P = dense.sbp.split, dense.sbp.broadcast, dense.sbp.partial_sum
CHECKS = []


def coo_parts(shape, nnz, seed):
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.integers(0, s, nnz) for s in shape])
    return idx, rng.integers(-9, 10, nnz).astype(np.float64), shape


def kept(parts, sbp):
    """Which entries this rank's shard holds under ``sbp``."""
    idx, val, shape = parts
    if sbp.kind == "P":
        return np.arange(val.shape[0]) % SIZE == RANK
    if sbp.kind == "B":
        return np.ones(val.shape[0], bool)
    bounds = np.cumsum([0] + [len(c) for c in np.array_split(np.arange(shape[0]), SIZE)])
    return (idx[0] >= bounds[RANK]) & (idx[0] < bounds[RANK + 1])


def local(parts, sbp, grad=False):
    """This rank's shard of the COO tensor ``parts`` under ``sbp``, made global."""
    idx, val, shape = parts
    if sbp.kind == "P":
        keep = kept(parts, sbp)
        idx, val = idx[:, keep], val[keep]
    elif sbp.kind == "S":
        bounds = np.cumsum([0] + [len(c) for c in np.array_split(np.arange(shape[0]), SIZE)])
        keep = (idx[0] >= bounds[RANK]) & (idx[0] < bounds[RANK + 1])
        idx, val = idx[:, keep].copy(), val[keep]
        idx[0] -= bounds[RANK]
        shape = (bounds[RANK + 1] - bounds[RANK],) + tuple(shape[1:])
    leaf = sparse.sparse_coo_tensor(idx, val, list(shape), stop_gradient=not grad)
    return leaf, leaf.to_global(placement=PLACE, sbp=sbp)


def whole(parts, grad=False):
    idx, val, shape = parts
    return sparse.sparse_coo_tensor(idx, val, list(shape), stop_gradient=not grad)


def logical(t):
    return (t.to_dense() if t.layout != "dense" else t).numpy()


def check(name, fn, args, want_sbp):
    """fn on global operands equals fn on whole ones: sbp, forward, and the dense form."""
    ref = fn(*[whole(a) if isinstance(a, tuple) else a for a, _ in args])
    out = fn(*[local(a, s)[1] if isinstance(a, tuple) else
               dense.to_tensor(a).to_global(placement=PLACE, sbp=s) for a, s in args])
    assert out.sbp == want_sbp, f"{name}: sbp {out.sbp}, expected {want_sbp}"
    assert np.array_equal(logical(out), logical(ref)), f"{name}: forward differs"
    CHECKS.append(name)


def check_grad(name, fn, parts, sbp):
    """The leaf's gradient through fn under ``sbp`` equals the one-process gradient."""
    ref_leaf = whole(parts, grad=True)
    fn(ref_leaf).backward()
    i = kept(parts, sbp)
    leaf, g = local(parts, sbp, grad=True)
    fn(g).backward()
    assert np.allclose(leaf.grad.values().numpy(), ref_leaf.grad.values().numpy()[i]), \
        f"{name}: gradient differs"
    CHECKS.append(name + " grad")


def positional_box_grad_checks():
    """Boxing a COO tensor moves its stored entries, duplicates included (partial_sum
    -> broadcast concatenates every rank's), and softmax and sin act on each stored
    entry: every leaf entry's gradient equals the one-process gradient of the same
    entry (the whole tensor's entries; softmax and sin do not depend on their order)."""
    idx, val, shape = coo_parts((4, 5), 13, 4)
    idx[:, 1] = idx[:, 2] = idx[:, 0]                   # one coordinate on every rank under P
    idx[:, 5] = idx[:, 4]
    parts = (idx, val / 4.0, shape)
    w = np.arange(1.0, 6.0)                             # weights per column: no zero gradient
    ops = {"softmax": lambda t: sparse.softmax(t, axis=-1), "sin": sparse.sin}
    boxings = [(P, None), (P, B), (P, S(0)), (S(0), B), (B, S(0)), (B, P), (S(0), P),
               (S(0), S(1))]
    for op_name, op in ops.items():
        for src, dst in boxings:
            def fn(t, dst=dst):
                if dst is not None and t.is_global:
                    t = t.to_global(sbp=dst)
                return sparse.sum(sparse.multiply(op(t), w))
            check_grad(f"{op_name} after boxing {src}->{dst or 'the rule'}", fn, parts, src)
    hybrid = (idx[:2], np.stack([val, -val], 1) / 4.0, (4, 5, 2))   # values of shape (2,)
    w2 = np.arange(1.0, 11.0).reshape(5, 2)
    for src, dst in [(P, B), (P, S(0)), (B, S(1))]:
        check_grad(f"sin hybrid after boxing {src}->{dst}",
                   lambda t, dst=dst: sparse.sum(sparse.multiply(
                       sparse.sin(t.to_global(sbp=dst) if t.is_global else t), w2)),
                   hybrid, src)


def addend_checks():
    """partial_sum rules of sparse multiply and divide on addends that break them, each
    against one process: a stored 0 on rank 0 and a 1 on rank 1 at one coordinate
    times inf (the sum 1 times inf is inf, the addend 0 times inf NaN), -2 and 1.5
    there over 0 (-inf, where the addends' quotients -inf and inf sum to NaN), over a
    sparse y (whose implicit zeros divide too), a broadcast inf times addends 1.5 and
    -0.5, and an inf times a y that stores nothing there (the intersection is empty)."""
    dup = (np.zeros((1, 2), np.int64), np.array([0.0, 1.0]), (3,))
    over = (np.zeros((1, 2), np.int64), np.array([-2.0, 1.5]), (3,))
    inf = (np.array([[0, 2]]), np.array([np.inf, 1.0]), (3,))
    spread = dense.to_tensor(np.array([1.5, 1.0, 2.0]) if RANK == 0 else
                             np.array([-0.5, 0.0, 0.0]) * (RANK == 1))
    sparse_y = (np.array([[1]]), np.array([2.0]), (3,))
    other = (np.array([[0, 1]]), np.array([2.0, 3.0]), (3,))
    inf2d = (np.array([[0, 1], [0, 2]]), np.array([np.inf, 1.0]), (2, 3))
    cases = [("multiply P,B with inf", sparse.multiply, (dup, P), (np.array([np.inf, 1, 1]), B)),
             ("multiply P,B by a scalar inf", lambda a, b: sparse.multiply(a, np.inf),
              (dup, P), (np.ones(3), B)),
             ("divide P,B by 0", lambda a, b: sparse.divide(a, 0.0), (over, P), (np.ones(3), B)),
             ("divide P,B by a sparse y", sparse.divide, (over, P), (sparse_y, B)),
             ("multiply B,P with inf", sparse.multiply, (inf, B), (spread, P)),
             ("multiply B,P sparse with inf", sparse.multiply, (inf, B), (other, P)),
             ("mv B,P with inf", sparse.mv, (inf2d, B), (spread, P)),
             ("matmul B,P with inf", lambda a, b: sparse.matmul(a, b.reshape([3, 1])),
              (inf2d, B), (spread, P))]
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, fn, (a, sa), (b, sb) in cases:
            ga = local(a, sa)[1]
            if isinstance(b, tuple):
                gb, wb = local(b, sb)[1], whole(b)
            else:
                gb = b.to_global(placement=PLACE, sbp=sb) if sb == P else \
                    dense.to_tensor(b).to_global(placement=PLACE, sbp=sb)
                wb = dense.to_tensor(gb.numpy())
            want = logical(fn(whole(a), wb))
            np.testing.assert_array_equal(logical(fn(ga, gb)), want, err_msg=name)
            CHECKS.append(name)


def mask_grad_check():
    """A global mask that asks for a gradient gets none (masked_matmul's mask is not
    differentiable), as one process: boxing and to_global pass the None on."""
    m = (np.array([[0, 1], [1, 0]]), np.array([1.0, 1.0]), (2, 2))
    x, y = dense.to_tensor(np.ones((2, 3))), dense.to_tensor(np.ones((3, 2)), stop_gradient=False)
    for sbp in (B, P, S(0)):
        leaf, mask = local(m, sbp, grad=True)
        gy = y.to_global(placement=PLACE, sbp=B)
        dense.sum(sparse.masked_matmul(x.to_global(placement=PLACE, sbp=B), gy,
                                       mask).to_dense()).backward()
        assert leaf.grad is None, f"masked_matmul mask {sbp}: {leaf.grad}"
        CHECKS.append(f"masked_matmul no mask gradient {sbp}")


def coalesced_partial_checks():
    """A partial_sum result of sum, subtract or multiply (each rank's shard coalesced)
    boxes to a coalesced tensor, its addends of one coordinate summed: square (a
    value-wise op, no partial_sum rule) then sees each coordinate once, as one process
    does (81 = 9**2 here, where keeping both addends gave 3**2 + 6**2 = 45)."""
    x = (np.array([[0, 1, 1, 3]]), np.array([3.0, 6.0, -2.0, 5.0]), (4,))
    y = (np.array([[1, 2, 3]]), np.array([4.0, 1.0, 5.0]), (4,))
    col = np.array([1.0, 2.0, 3.0, 4.0])
    cases = {"sum": (lambda a, b: sparse.sum(a, axis=[0], keepdim=True), x, y),
             "subtract": (sparse.subtract, x, y),
             "multiply by B": (lambda a, b: sparse.multiply(a, b), x, col)}
    for name, (fn, a, b) in cases.items():
        for dst in (B, S(0)):
            def run(ga, gb, dst=dst, fn=fn):
                out = fn(ga, gb)
                return sparse.square(out.to_global(sbp=dst) if out.is_global else out)
            wb = whole(b) if isinstance(b, tuple) else dense.to_tensor(b)
            gb = local(b, P)[1] if isinstance(b, tuple) else \
                dense.to_tensor(b).to_global(placement=PLACE, sbp=B)
            want = logical(run(whole(a), wb))
            got = run(local(a, P)[1], gb)
            np.testing.assert_array_equal(logical(got), want, err_msg=f"{name} -> {dst}")
            CHECKS.append(f"square after {name} boxed P -> {dst}")


def broadcast_inf_grad_checks():
    """A broadcast COO x boxed to partial_sum (rank 0 keeps its entries) or to split
    (each rank its slice): x's gradient through an op with an infinite derivative (x / 0,
    log1p at -1) is inf, as one process, not 0 * inf = nan from the ranks whose copy of
    an entry got no gradient."""
    cases = [("divide by 0 -> P", lambda t: sparse.divide(t, 0.0), P),
             ("log1p -> S(0)", sparse.log1p, S(0))]
    parts = (np.array([[0, 3]]), np.array([1.0, -1.0]), (4,))
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, fn, dst in cases:
            ref_leaf = whole(parts, grad=True)
            fn(ref_leaf).to_dense().backward(dense.to_tensor(np.ones(4)))
            leaf, g = local(parts, B, grad=True)
            fn(g).to_global(sbp=dst).to_dense().backward(dense.to_tensor(np.ones(4)))
            np.testing.assert_array_equal(leaf.grad.values().numpy(),
                                          ref_leaf.grad.values().numpy(), err_msg=name)
            CHECKS.append(f"inf gradient through B -> {name}")


def finite_reads_logical_values_check():
    """``B, P -> P if finite(x)`` of multiply: a broadcast COO x whose float32 duplicates
    3e38 and 3e38 are each finite has the logical value inf, so the rule does not apply
    (the partial_sum addend 0 on rank 1 times inf would be NaN); the result is one
    process's inf."""
    x = (np.array([[0, 0], [0, 0]]), np.array([3e38, 3e38], np.float32), (1, 1))
    z = (np.array([[0, 0], [0, 0]]), np.array([1.0, 0.0]), (1, 1))     # rank 0: 1, rank 1: 0
    with np.errstate(over="ignore", invalid="ignore"):
        check("multiply B,P with duplicates summing to inf", sparse.multiply,
              [(x, B), (z, P)], S(0))


def reboxed_conversion_grad_check():
    """s = to_sparse_coo(x) re-boxed to another sbp is still the identity on the
    logical tensor: s.backward(G) gives x.grad == G whole (API2), not G at s's
    entries."""
    a, seed = np.array([0.0, 2.0, 0.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0])
    for dst in (P, S(0)):
        x = dense.to_tensor(a, stop_gradient=False)
        s = x.to_global(placement=PLACE, sbp=B).to_sparse_coo(1)
        s.to_global(sbp=dst).backward(dense.to_tensor(seed))
        np.testing.assert_array_equal(x.grad.numpy(), seed, err_msg=f"B -> {dst}")
        CHECKS.append(f"to_sparse_coo re-boxed B -> {dst} backward")
    for dst in (None, S(0)):               # a local conversion made global, then re-boxed
        x = dense.to_tensor(a, stop_gradient=False)
        s = x.to_sparse_coo(1).to_global(placement=PLACE, sbp=B)
        (s if dst is None else s.to_global(sbp=dst)).backward(dense.to_tensor(seed))
        np.testing.assert_array_equal(x.grad.numpy(), seed, err_msg=f"local -> B -> {dst}")
        CHECKS.append(f"local to_sparse_coo made global, B -> {dst} backward")


def widening_checks():
    """An op whose result dtype is wider than a partial_sum operand's boxes it first:
    one process adds a coordinate's int8 entries 100 and 100 (on ranks 0 and 1) in
    int8, to -56, before multiply, add, mv, matmul or addmm widen them, and float32
    3e38 and 3e38 to inf.  ``sum`` and ``cast`` are checked alongside (sum adds in
    int8 too; cast acts on each stored entry, in one process as well).  Each result
    equals one process on the logical tensor, in value and dtype."""
    n = min(SIZE, 2)
    ints = (np.zeros((2, n), np.int64), np.full(n, 100, np.int8), (2, 3))
    floats = (np.zeros((2, n), np.int64), np.full(n, 3e38, np.float32), (2, 3))
    col = np.array([1, 2, 3], np.int16)
    mat = np.arange(6, dtype=np.int16).reshape(3, 2)
    wide = (np.array([[0, 1], [0, 2]]), np.array([1, 2], np.int16), (2, 3))
    cases = [("multiply int8 P by int16 B", sparse.multiply, ints, (col, B)),
             ("add int8 P to int16 P", sparse.add, ints, (wide, P)),
             ("mv int8 P by int16 B", sparse.mv, ints, (col, B)),
             ("matmul int8 P by int16 B", sparse.matmul, ints, (mat, B)),
             ("addmm of int8 P", lambda a, b: sparse.addmm(b, a, like(a, mat)),
              ints, (np.ones((2, 2), np.int16), B)),
             ("sum int8 P as int64", lambda a, b: sparse.sum(a, dtype="int64"), ints,
              (col, B)),
             ("cast float32 P to float64", lambda a, b: sparse.cast(a, value_dtype="float64"),
              floats, (col, B)),
             ("multiply float32 P by float64 B", sparse.multiply, floats,
              (col.astype(np.float64), B))]
    with np.errstate(over="ignore", invalid="ignore"):
        for name, fn, a, (b, sb) in cases:
            ga = local(a, P)[1]
            gb = local(b, sb)[1] if isinstance(b, tuple) else \
                dense.to_tensor(b).to_global(placement=PLACE, sbp=sb)
            wb = whole(b) if isinstance(b, tuple) else dense.to_tensor(b)
            out, ref = fn(ga, gb), fn(whole(a), wb)
            assert out.dtype == ref.dtype, f"{name}: dtype {out.dtype}, expected {ref.dtype}"
            np.testing.assert_array_equal(logical(out), logical(ref), err_msg=name)
            CHECKS.append(name)


def addmm_factor_checks():
    """addmm keeps P, P, B -> P only for finite beta and alpha: input and x are the
    logical [[1]] as addends 3 and -2 (ranks 0 and 1), and an infinite factor times
    each addend sums to inf - inf = NaN, where one process gives inf."""
    part = ([3.0, -2.0] + [0.0] * SIZE)[RANK]
    inp = dense.to_tensor(np.array([[part]])).to_global(placement=PLACE, sbp=P)
    x = sparse.sparse_coo_tensor([[0], [0]], [part], [1, 1]).to_global(placement=PLACE, sbp=P)
    y = dense.to_tensor(np.ones((1, 1)))
    whole_x = sparse.sparse_coo_tensor([[0], [0]], [1.0 if SIZE > 1 else part], [1, 1])
    whole_in = dense.to_tensor(np.array([[1.0 if SIZE > 1 else part]]))
    for beta, alpha in [(np.inf, 1.0), (1.0, -np.inf), (2.0, 0.5)]:
        with np.errstate(invalid="ignore"):
            want = sparse.addmm(whole_in, whole_x, y, beta=beta, alpha=alpha).numpy()
            got = sparse.addmm(inp, x, like(x, y.numpy()), beta=beta, alpha=alpha).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"addmm beta={beta} alpha={alpha}")
        CHECKS.append(f"addmm P, P, B with beta={beta} alpha={alpha}")


def like(t, array):
    """``array`` as a dense tensor, broadcast where ``t`` is global."""
    out = dense.to_tensor(array)
    return out.to_global(placement=PLACE, sbp=B) if t.is_global else out


def main():
    widening_checks()
    addmm_factor_checks()
    addend_checks()
    coalesced_partial_checks()
    broadcast_inf_grad_checks()
    finite_reads_logical_values_check()
    reboxed_conversion_grad_check()
    mask_grad_check()
    x, y = coo_parts((6, 5), 12, 1), coo_parts((6, 5), 9, 2)
    col = np.arange(1.0, 6.0)
    for sx, sy, want in [(P, P, P), (S(0), S(0), S(0)), (B, B, B)]:
        check(f"add {sx},{sy}", sparse.add, [(x, sx), (y, sy)], want)
        check(f"subtract {sx},{sy}", sparse.subtract, [(x, sx), (y, sy)], want)
    check("multiply S(0),S(0)", sparse.multiply, [(x, S(0)), (y, S(0))], S(0))
    check("multiply P,B", sparse.multiply, [(x, P), (col, B)], P)
    check("divide P,B", sparse.divide, [(x, P), (col, B)], P)
    check("sum S(0) axis 0", lambda t: sparse.sum(t, axis=0), [(x, S(0))], P)
    check("sum P", sparse.sum, [(x, P)], P)
    check("sum S(0) axis 1", lambda t: sparse.sum(t, axis=1), [(x, S(0))], S(0))
    h = (x[0], np.stack([x[1], -x[1]], 1), x[2] + (2,))      # every sparse dim summed
    for sbp in (P, S(0)):
        check(f"sum hybrid {sbp} sparse axes", lambda t: sparse.sum(t, axis=[0, 1]),
              [(h, sbp)], P)
    check_grad("sum hybrid sparse axes", lambda t: sparse.sum(t, axis=[0, 1]), h, P)
    check("softmax S(0)", sparse.softmax, [(coo_parts((6, 5), 12, 3), S(0))], S(0))
    for sbp in (P, B, S(0)):
        check_grad(f"multiply-sum {sbp}", lambda t: sparse.sum(sparse.multiply(t, col)),
                   x, sbp)
    positional_box_grad_checks()
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
