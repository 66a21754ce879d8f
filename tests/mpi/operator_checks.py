"""Rank script: Python operators on global tensors, forward and backward.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/operator_checks.py`` (tests/
test_global_mpi.py does, for N = 2 and 3).  ``x + y``, ``2 * x``, ``x @ y``,
``-x``, ``x < y`` and friends on global tensors run the same ops as the named
functions; each check compares sbp, data (bit for bit) and gradients with
one process (global_checks' helpers).
"""
import numpy as np

import dense
import sparse
from global_checks import B, CHECKS, P, RANK, S, check, data, glob


def dense_operator_checks():
    x, y, col = data((6, 4)), data((6, 4), seed=1), data((6, 1), seed=2)
    w = data((4, 5), seed=3)
    check("x + y S(0),S(0)", lambda a, b: a + b, [(x, S(0)), (y, S(0))], S(0), (0, 1))
    check("x - col S(1),B", lambda a, b: a - b, [(x, S(1)), (col, B)], S(1), (0, 1))
    check("x * y P,B", lambda a, b: a * b, [(x, P), (y, B)], P, (0, 1))
    check("2 * x and x * 3 S(0)", lambda a: 2 * a * 3, [(x, S(0))], S(0))
    check("1 - x S(1)", lambda a: 1 - a, [(x, S(1))], S(1))
    check("x @ w S(0),B", lambda a, b: a @ b, [(x, S(0)), (w, B)], S(0), (0, 1))
    check("-x and abs(x) P", lambda a: abs(-a), [(x, S(0))], S(0))
    check("x ** 2 S(0)", lambda a: a ** 2, [(x, S(0))], S(0))
    pow2 = 2.0 ** (np.abs(col) % 3)     # exact quotients of a float x; an int x is boxed
    check("x / pow2 P,B", lambda a, b: a / b, [(x.astype(np.float64), P), (pow2, B)], P, (0, 1))
    for name, fn, sbp in (("x < y", lambda a, b: a < b, S(0)),
                          ("x == y", lambda a, b: a == b, S(1))):
        got = fn(glob(x, sbp)[1], glob(y, sbp)[1])      # comparisons: no gradient
        assert got.sbp == sbp and np.array_equal(got.numpy(), fn(x, y)), name
        CHECKS.append(name)


def method_checks():
    """Indexing, ``T``, ``astype``, ``float()`` and numpy operands on global tensors,
    as on local ones: numpy arrays are local inputs taken as broadcast."""
    x = data((6, 4))
    check("x[1:, ::-2] S(0)", lambda a: a[1:, ::-2], [(x, S(0))], B)
    check("x[:, 1] S(0)", lambda a: a[:, 1], [(x, S(0))], S(0))
    check("x[None, ..., [0, 2]] S(0)", lambda a: a[None, ..., [0, 2]], [(x, S(0))], S(1))
    check("x.T S(0)", lambda a: a.T, [(x, S(0))], S(1))
    check("x * ndarray S(1)", lambda a: a * np.arange(4.0), [(x, S(1))], S(1))
    check("ndarray * x S(1)", lambda a: np.arange(4.0) * a, [(x, S(1))], S(1))
    check("ndarray - x P", lambda a: np.ones((6, 4)) - a, [(x.astype(np.float64), P)], P)
    check("ndarray - int x P reduce-scatters it", lambda a: np.ones((6, 4)) - a, [(x, P)], S(0))
    g = glob(x, S(0))[1]
    assert g.astype("int32").dtype == np.int32 and g.astype("int32").sbp == S(0), "astype"
    assert (float(g[2, 1]), int(g[2, 1]), bool(g[2, 1])) == (float(x[2, 1]), int(x[2, 1]),
                                                             bool(x[2, 1])), "scalars"
    CHECKS.extend(["astype S(0)", "float/int/bool of g[2, 1]"])


def sparse_operator_checks():
    """Sparse COO globals: ``s * 2 + s``, ``s * d`` and ``-s`` as sparse.multiply/add/neg."""
    idx = np.array([[0, 1, 3, 5], [0, 2, 1, 3]])
    vals = np.array([1.0, -2.0, 3.0, 4.0])
    s = sparse.sparse_coo_tensor(idx, vals, [6, 4])
    d = data((6, 4), np.float64, seed=5)
    gs = s.to_global(placement=dense.placement(), sbp=B)
    gd = dense.to_tensor(d).to_global(placement=dense.placement(), sbp=B)
    for name, fn in (("s * 2 + s", lambda a, b: a * 2 + a), ("s * d", lambda a, b: a * b),
                     ("-s", lambda a, b: -a), ("abs(s) ** 2", lambda a, b: abs(a) ** 2),
                     ("d * s", lambda a, b: b * a), ("d / s * s", lambda a, b: a / b * a),
                     ("np.float64(2) * s", lambda a, b: np.float64(2) * a),
                     ("ndarray * s", lambda a, b: np.arange(4.0) * a)):
        got = fn(gs, gd)
        want = fn(s, dense.to_tensor(d))
        assert got.sbp == B, f"{name}: sbp {got.sbp}"
        assert np.array_equal(got.to_dense().numpy(), want.to_dense().numpy()), name
        CHECKS.append(name)
    for name, fn in (("d + s", lambda a, b: b + a), ("d - s", lambda a, b: b - a)):
        got, want = fn(gs, gd), fn(s, dense.to_tensor(d))     # dense results
        assert got.sbp == B and np.array_equal(got.numpy(), want.numpy()), name
        CHECKS.append(name)
    for name, fn in (("values", sparse.values), ("to_scipy", lambda g: g.to_scipy())):
        try:
            fn(gs)
        except TypeError as exc:
            assert "to_local" in str(exc), exc
        else:
            raise AssertionError(f"{name} of a global COO tensor did not raise")
        CHECKS.append(f"{name}(global) raises TypeError")
    split_operand_checks(s, gs)


def split_operand_checks(s, gs):
    """A split COO tensor times or over a scalar or a tensor broadcast along the split
    axis stays split (it was gathered to broadcast on every rank)."""
    gss = gs.to_global(sbp=S(0))
    row = np.array([1.0, 3.0, -2.0, 0.5])
    for name, fn in (("split s * 2", lambda a: a * 2.0), ("split s / 2", lambda a: a / 2.0),
                     ("split s * row", lambda a: a * dense.to_tensor(row)),
                     ("row * split s", lambda a: dense.to_tensor(row) * a),
                     ("split s / row", lambda a: a / dense.to_tensor(row))):
        got, want = fn(gss), fn(s)
        assert got.sbp == S(0), f"{name}: sbp {got.sbp}"
        assert np.array_equal(got.to_dense().numpy(), want.to_dense().numpy()), name
        CHECKS.append(name)


def infinite_derivative_checks():
    """Under broadcast, ranks other than 0 hold zero gradient addends; where a derivative
    is infinite (sqrt and log at 0, 1/x at 0) they must add nothing, not 0 * inf = nan:
    the gradient is one process's, inf included."""
    place = dense.placement()
    for name, fn in (("sqrt", dense.sqrt), ("log", dense.log),
                     ("1 / x", lambda t: dense.divide(1.0, t))):
        grads = []
        for make_global in (False, True):
            x = dense.to_tensor(np.array([0.0, 4.0]), stop_gradient=False)
            t = x.to_global(placement=place, sbp=B) if make_global else x
            with np.errstate(all="ignore"):
                dense.sum(fn(t)).backward()
            grads.append(x.grad.numpy())
        assert np.array_equal(grads[0], grads[1]), f"{name}: {grads}"
        CHECKS.append(f"{name} at 0 under broadcast: no nan")
    grads = []
    for make_global in (False, True):
        x = sparse.sparse_coo_tensor(np.array([[0]]), np.array([2.0]), [1], stop_gradient=False)
        y = sparse.sparse_coo_tensor(np.zeros((1, 0), np.int64), np.zeros(0), [1])
        a, b = (t.to_global(placement=place, sbp=B) for t in (x, y)) if make_global else (x, y)
        with np.errstate(all="ignore"):
            sparse.to_dense(sparse.divide(a, b)).backward(dense.to_tensor(np.array([1.0])))
        grads.append(x.grad.to_dense().numpy())
    assert np.array_equal(grads[0], grads[1]), f"sparse divide by 0: {grads}"
    CHECKS.append("sparse x / 0 under broadcast: no nan")
    sliced_broadcast_checks(place)
    x = dense.to_tensor(np.arange(1.0, 5.0), stop_gradient=False)
    y = (x.to_global(placement=place, sbp=B) * 2.0).sum()
    y.backward()
    try:                     # every rank, zero addends or not, finds the graph freed
        y.backward()
    except RuntimeError as exc:
        assert "freed" in str(exc), exc
    else:
        raise AssertionError("a second backward through a freed graph returned")
    CHECKS.append("freed graph raises on every rank")


def sliced_broadcast_checks(place):
    """A broadcast tensor met by a split one is sliced, and its gradient gathered whole
    (rank 0's addend beside marked zeros); a split or partial_sum seed of a broadcast
    tensor is made whole first.  Before, addends zero off each rank's slice, or of mixed
    sign, met sqrt's infinite derivative at 0 as nan where one process gives inf."""
    x0, w, seed = np.array([0.0, 4.0]), np.array([1.0, 2.0]), np.array([1.0, -2.0])
    cases = {
        "broadcast * split": (lambda t: dense.sum(dense.sqrt(t) * dense.to_tensor(w)),
                              lambda t: dense.sum(dense.sqrt(t) * glob(w, S(0))[1]), None),
        "split seed": (dense.sqrt, dense.sqrt, (seed, S(0))),
        "partial_sum seed": (dense.sqrt, dense.sqrt, (seed, P)),
    }
    for name, (local_fn, global_fn, given) in cases.items():
        grads = []
        for make_global in (False, True):
            x = dense.to_tensor(x0, stop_gradient=False)
            t = x.to_global(placement=place, sbp=B) if make_global else x
            g = None if given is None else (glob(*given)[1] if make_global
                                            else dense.to_tensor(given[0]))
            with np.errstate(all="ignore"):
                (global_fn if make_global else local_fn)(t).backward(g)
            grads.append(x.grad.numpy())
        assert np.array_equal(grads[0], grads[1]), f"{name}: {grads}"
        CHECKS.append(f"{name} through sqrt at 0: inf, no nan")


def squeeze_checks():
    """squeeze whose axes name no size-1 dim drops nothing, as in one process (the shards'
    kernel was told axis=(), which drops every size-1 dim)."""
    for shape, axis, sbp in [((3, 1), [0], B), ((1, 2), [1], P), ((0, 4, 3, 1), [0, 1], B),
                             ((4, 1), [0], S(0)), ((2, 1, 3), None, B)]:
        check(f"squeeze {shape} axis={axis} under {sbp}",
              lambda t, axis=axis: dense.squeeze(t, axis), [(data(shape), sbp)],
              B if sbp == S(0) else sbp)


def where_checks():
    """where of split tensors with a scalar, or a tensor broadcast along the split axis,
    stays split (it was gathered to broadcast); the broadcast branch's gradient sums."""
    check("where(t > 1, t, 0.0) split", lambda t: dense.where(t > 1, t, 0.0),
          [(data((4, 3)), S(0))], S(0))
    check("where(t > 1, t, y) split beside broadcast y", lambda t, y: dense.where(t > 1, t, y),
          [(data((4, 3)), S(0)), (data((3,), seed=2), B)], S(0), grad_args=(0, 1))


def main():
    where_checks()
    squeeze_checks()
    infinite_derivative_checks()
    dense_operator_checks()
    method_checks()
    sparse_operator_checks()
    if RANK == 0:
        print(f"{len(CHECKS)} passed, 0 failed")


if __name__ == "__main__":
    main()
