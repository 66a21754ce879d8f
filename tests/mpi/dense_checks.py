"""Rank script: the SBP rules of the dense ops of issue 19, forward and backward.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/dense_checks.py`` (tests/
test_global_mpi.py does, for N = 2 and 3).  Each check runs the op on global
inputs of the given sbps, compares the output's sbp, data (bit for bit) and
gradients with one process, using global_checks' helpers (operators on
global tensors: operator_checks.py).
"""
import numpy as np

import dense
from global_checks import B, CHECKS, P, PLACE, RANK, SIZE, S, check, data, glob


def elementwise_checks():
    x, y, col = data((6, 4)), data((6, 4), seed=1), data((6, 1), seed=2)
    row = data((4,), seed=3)
    check("add S(0),S(0)", dense.add, [(x, S(0)), (y, S(0))], S(0), (0, 1))
    check("subtract S(1),B broadcast", dense.subtract, [(x, S(1)), (col, B)], S(1), (0, 1))
    check("multiply B,S(0) over a new dim", dense.multiply, [(row, B), (x, S(0))], S(0),
          (0, 1))
    check("multiply S(0),B broadcast", dense.multiply, [(x, S(0)), (row, B)], S(0), (0, 1))
    check("add P,P", dense.add, [(x, P), (y, P)], P, (0, 1))
    check("multiply P,B", dense.multiply, [(x, P), (col, B)], P, (0, 1))
    check("multiply B,P", dense.multiply, [(row, B), (x, P)], P, (0, 1))
    pow2 = 2.0 ** (np.abs(col) % 3)  # exact quotients: the forward compares bit for bit
    check("divide P,B", dense.divide, [(x.astype(np.float64), P), (pow2, B)], P, (0, 1))
    check("divide int P,B reduce-scatters it", dense.divide,
          [(x, P), (pow2.astype(np.int64), B)], S(1), (0, 1))
    check("neg P", dense.neg, [(x, P)], P)
    check("relu S(1)", dense.relu, [(x, S(1))], S(1))
    check("where S(0)", lambda a, b: dense.where(dense.greater_than(a, b), a, b), [(x, S(0)), (y, S(0))], S(0),
          (0, 1))


def addend_checks():
    """partial_sum rules that hold for some dtypes or values only, on addends that
    show it: cast to int truncates each addend (x / SIZE), and with the whole x on
    rank 0 and zeros elsewhere, an addend 0 * inf or 0 / 0 is NaN where one
    process gives inf.  Each result equals one process on the logical tensor."""
    x = np.array([[1.5, -2.5, 0.7], [-0.5, 3.0, -1.7]])
    y = np.array([[0.0, 1.0, np.inf], [2.0, 0.0, -np.inf]])
    spread = dense.to_tensor(x / SIZE).to_global(placement=PLACE, sbp=P)
    first = dense.to_tensor(x if RANK == 0 else 0 * x).to_global(placement=PLACE, sbp=P)
    gy = dense.to_tensor(y).to_global(placement=PLACE, sbp=B)
    cases = [("cast P to int64", lambda a, b: dense.cast(a, "int64"), spread),
             ("cast P to bool", lambda a, b: dense.cast(a, "bool"), spread),
             ("multiply P,B with inf", dense.multiply, first),
             ("multiply B,P with inf", lambda a, b: dense.multiply(b, a), first),
             ("divide P,B with zeros", dense.divide, first),
             ("matmul P,B with inf", lambda a, b: dense.matmul(a, b, transpose_y=True), first)]
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, fn, g in cases:
            want = fn(dense.to_tensor(g.numpy()), dense.to_tensor(y)).numpy()
            np.testing.assert_array_equal(fn(g, gy).numpy(), want, err_msg=name)
            CHECKS.append(name)
    widening_checks()
    negative_zero_checks()
    big = np.array([1e39, 2.0]) * (1 if RANK == 0 else -1) + (RANK == 1) * np.array([0, 4.0])
    huge = dense.to_tensor(big).to_global(placement=PLACE, sbp=P)    # [0, 2] on 2 ranks
    with np.errstate(over="ignore"):            # 3 ranks: the logical -1e39 overflows
        want = huge.numpy().astype(np.float32)
        got = dense.cast(huge, "float32").numpy()
    np.testing.assert_array_equal(got, want,
                                  err_msg="cast P to float32 with addends beyond its range")
    CHECKS.append("cast P to float32 with addends beyond its range")


def negative_zero_checks():
    """A logical -0.0 survives boxing to partial_sum and a gather that zero-fills the
    rows a rank lacks: the other ranks' addends are -0.0, the additive identity (with
    +0.0 the sum would be +0.0, and 1/x +inf where one process gives -inf)."""
    v = np.array([-0.0, 1.0, -0.0, 2.0])
    bx = dense.to_tensor(v).to_global(placement=PLACE, sbp=B)
    sx = dense.to_tensor(np.array_split(v, SIZE)[RANK]).to_global(placement=PLACE, sbp=S(0))
    c = dense.to_tensor(np.array([True, False, True, False]))
    yp = dense.to_tensor(np.full(4, 3.0) if RANK == 0 else np.full(4, -0.0)).to_global(
        placement=PLACE, sbp=P)
    cases = [("B -> P -> B keeps -0.0", bx.to_global(sbp=P).to_global(sbp=B), v),
             ("S(0) -> P -> B keeps -0.0", sx.to_global(sbp=P).to_global(sbp=B), v),
             ("where(c, x B, y P) keeps -0.0", dense.where(c, bx, yp),
              np.where([True, False, True, False], v, 3.0)),
             ("gather of S(0) x keeps -0.0", dense.gather(sx, dense.to_tensor([2, 0, 3]), 0),
              v[[2, 0, 3]])]
    for name, got, want in cases:
        got = got.numpy()
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), \
            f"{name}: {got.tolist()}, expected {want.tolist()}"
        CHECKS.append(name)


def widening_checks():
    """An op whose result dtype is wider than a partial_sum operand's boxes it first:
    int8 addends 100 and 100 (ranks 0 and 1) sum to -56 in one process, and float32
    addends 3e38 and 3e38 to inf, before a cast, a wider operand or a reduction
    widens them.  Each result equals one process on the logical tensor."""
    n = RANK < 2 and SIZE > 1
    ints = dense.to_tensor(np.full((2, 3), 100 * n, np.int8)).to_global(placement=PLACE, sbp=P)
    floats = dense.to_tensor(np.full((2, 3), 3e38 * n, np.float32)).to_global(
        placement=PLACE, sbp=P)
    wide = np.arange(6, dtype=np.int16).reshape(3, 2)
    cases = [("cast int8 P to int16", ints, lambda a, w: dense.cast(a, "int16")),
             ("multiply int8 P by int16 B", ints, lambda a, w: dense.multiply(a, w(wide.T))),
             ("matmul int8 P by int16 B", ints, lambda a, w: dense.matmul(a, w(wide))),
             ("sum int8 P", ints, lambda a, w: dense.sum(a)),
             ("cast float32 P to float64", floats, lambda a, w: dense.cast(a, "float64")),
             ("add float32 P to float64 B", floats,
              lambda a, w: dense.add(a, w(np.ones((2, 3)))))]
    with np.errstate(over="ignore"):
        for name, g, fn in cases:
            out = fn(g, lambda v: dense.to_tensor(v).to_global(placement=PLACE, sbp=B))
            ref = fn(dense.to_tensor(g.numpy()), dense.to_tensor)
            assert out.dtype == ref.dtype, f"{name}: dtype {out.dtype}, expected {ref.dtype}"
            np.testing.assert_array_equal(out.numpy(), ref.numpy(), err_msg=name)
            CHECKS.append(name)


def matmul_checks():
    x, y, z = data((6, 4)), data((4, 5), seed=1), data((5, 4), seed=2)
    check("matmul S(0),B", dense.matmul, [(x, S(0)), (y, B)], S(0), (0, 1))
    check("matmul B,S(1)", dense.matmul, [(x, B), (y, S(1))], S(1), (0, 1))
    check("matmul S(1),S(0)", dense.matmul, [(x, S(1)), (y, S(0))], P, (0, 1))
    check("matmul P,B", dense.matmul, [(x, P), (y, B)], P, (0, 1))
    check("matmul transpose_y S(0),S(1)", lambda a, b: dense.matmul(a, b, transpose_y=True),
          [(x, S(1)), (z, S(1))], P, (0, 1))
    batched = data((3, 2, 4), seed=4), data((3, 4, 2), seed=5)
    check("matmul batch S(0),S(0)", dense.matmul, [(batched[0], S(0)), (batched[1], S(0))],
          S(0), (0, 1))


def masked_grad_checks():
    """Only one input trainable: each shard's backward gets a grad_mask."""
    x, y, row = data((6, 4)), data((4, 5), seed=1), data((4,), seed=3)
    for k in (0, 1):
        check(f"multiply S(0),B grad of input {k} only", dense.multiply,
              [(x, S(0)), (row, B)], S(0), (k,))
        check(f"matmul S(1),S(0) grad of input {k} only", dense.matmul,
              [(x, S(1)), (y, S(0))], P, (k,))


def shape_checks():
    x = data((5, 3, 4))
    check("transpose S(0)", lambda t: dense.transpose(t, [2, 0, 1]), [(x, S(0))], S(1))
    check("transpose S(2)", lambda t: dense.transpose(t, [2, 0, 1]), [(x, S(2))], S(0))
    check("transpose reversed S(1)", lambda t: dense.transpose(t, [2, 1, 0]), [(x, S(1))], S(1))
    check("transpose P", lambda t: dense.transpose(t, [1, 0, 2]), [(x, P)], P)
    check("unsqueeze S(1)", lambda t: dense.unsqueeze(t, [0, 2]), [(x, S(1))], S(3))
    check("flatten S(0)", lambda t: dense.flatten(t, 1), [(x, S(0))], S(0))
    check("slice S(0)", lambda t: dense.slice(t, [1, 2], [1, 0], [3, 3]), [(x, S(0))], S(0))
    check("cast S(2)", lambda t: dense.cast(t, "float64"), [(x, S(2))], S(2))
    basic_checks(x)
    shard_extent_checks()


def shard_extent_checks():
    """Shards of extent 1 or 0 along the split axis, and zero-size tensors: the
    ops decide from the logical shape, so every rank's shard agrees."""
    ones = data((SIZE, 1, 3))                       # extent 1 on every rank
    check("squeeze S(0) of extent-1 shards", dense.squeeze, [(ones, S(0))], S(0))
    check("squeeze S(0) dropping nothing", dense.squeeze, [(ones[:, 0], S(0))], B)
    empty = data((0, 3, 3))
    check("unsqueeze S(2) of a zero-size tensor", lambda t: dense.unsqueeze(t, [0]),
          [(empty, S(2))], S(3))
    check("flatten S(1) merged into a zero-size dim", lambda t: dense.flatten(t, 0, 1),
          [(empty, S(1))], B)
    check("flatten S(2) after a zero-size merged dim", lambda t: dense.flatten(t, 0, 1),
          [(empty, S(2))], S(1))
    check("flatten S(1) with extent-1 dims merged", lambda t: dense.flatten(t, 0, 2),
          [(data((1, 5, 1)), S(1))], S(0))
    check("reshape B, -1 resolving to 0", lambda t: dense.reshape(t, [-1, 5]),
          [(data((2, 0)), B)], B)
    check("reshape S(0), -1 resolving to 0", lambda t: dense.reshape(t, [2, -1, 5]),
          [(data((2, 3, 0)), S(0))], B)


def basic_checks(x):
    """basic_index: a split of a dim it keeps whole moves past dropped and new dims."""
    def pick(t):                                   # t[:, 1, None]
        return dense.basic_index(t, [1], [1], [2], [1], [1], [1])

    def flip(t):                                   # t[None, :, :, ::-2]
        return dense.basic_index(t, [2], [-1], [-5], [-2], [], [0])
    check("basic_index S(0)", pick, [(x, S(0))], S(0), numpy_fn=lambda a: a[:, 1, None])
    check("basic_index S(2)", pick, [(x, S(2))], S(2), numpy_fn=lambda a: a[:, 1, None])
    check("basic_index P", pick, [(x, P)], P)
    check("basic_index S(1) after a new dim", flip, [(x, S(1))], S(2),
          numpy_fn=lambda a: a[None, :, :, ::-2])


def list_checks():
    """concat and stack over a Tensor[] of global tensors: one sbp for the list.

    Dims of 5 and 7 split unevenly on 2 and 3 ranks.  A split on the concat
    axis has no rule; the cheapest boxing is to broadcast (a tie with a
    split of another axis, and broadcast is the first candidate).  A list of
    mixed sbps is boxed to the cheapest signature (costs summed over the
    elements).  The gathered forward is compared with numpy's too."""
    a, b, c = data((2, 5, 7)), data((3, 5, 7), seed=1), data((1, 5, 7), seed=2)

    def concat(name, axis, inputs, want):
        check(name, lambda *xs: dense.concat(list(xs), axis), inputs, want,
              tuple(range(len(inputs))), lambda *xs: np.concatenate(xs, axis))

    def stack(name, axis, inputs, want):
        check(name, lambda *xs: dense.stack(list(xs), axis), inputs, want,
              tuple(range(len(inputs))), lambda *xs: np.stack(xs, axis))

    for sbp, want in [(S(1), S(1)), (S(2), S(2)), (P, P), (B, B), (S(0), B)]:
        concat(f"concat {sbp} axis 0", 0, [(a, sbp), (b, sbp), (c, sbp)], want)
    concat("concat S(0) axis -2", -2, [(a, S(0)), (a, S(0))], S(0))
    concat("concat S(0) axis 0, equal sizes", 0, [(a, S(0)), (a + 1, S(0))], B)
    concat("concat S(1), B boxes B", 0, [(a, S(1)), (b, B)], S(1))
    concat("concat P, S(2) boxes P", 0, [(a, P), (b, S(2))], S(2))
    for axis, sbp, want in [(0, S(0), S(1)), (1, S(0), S(0)), (1, S(1), S(2)),
                            (-1, S(2), S(2)), (3, S(2), S(2)), (2, P, P), (0, B, B)]:
        stack(f"stack {sbp} axis {axis}", axis, [(a, sbp), (a + 1, sbp)], want)
    placements_check(a)


def placements_check(a):
    """A list over two placements raises ValueError naming the op, before any
    communication (so the ranks outside the second placement just go on)."""
    first = dense.placement([0])
    world_wide = glob(a, S(1))[1]
    if first.is_member:
        alone = dense.to_tensor(a).to_global(placement=first, sbp=B)
        try:
            dense.concat([world_wide, alone])
        except ValueError as exc:
            assert "concat: global inputs are on different placements" in str(exc), str(exc)
        else:
            raise AssertionError("concat accepted a list over two placements")
    CHECKS.append("concat over two placements")


def reduce_checks():
    x = data((5, 3, 4))
    check("mean S(0) axis 1", lambda t: dense.mean(t, [1]),
          [(x, S(0))], S(0))
    # int64 addends: their float64 means need not sum to the mean of their (wrapping)
    # int64 sum, so they are summed first (here into a split of the kept axis);
    # float64 ones stay partial (exact /16)
    check("mean P int", lambda t: dense.mean(t, [0, 2]), [(data((4, 3, 4)), P)], S(0))
    check("mean P", lambda t: dense.mean(t, [0, 2]), [(data((4, 3, 4), np.float64), P)], P)
    check("max S(2) axis 0", lambda t: dense.max(t, [0]), [(x, S(2))], S(1))
    check("prod S(1) keepdim", lambda t: dense.prod(t, [2], True), [(x, S(1))], S(1))
    out = dense.argmax(glob(x, S(2))[1], axis=0)
    assert out.sbp == S(1) and np.array_equal(out.numpy(), np.argmax(x, 0)), "argmax S(2)"
    CHECKS.append("argmax S(2)")


def main():
    elementwise_checks()
    addend_checks()
    matmul_checks()
    masked_grad_checks()
    shape_checks()
    list_checks()
    reduce_checks()
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
