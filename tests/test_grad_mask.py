"""A backward computes only the gradients its inputs need (``optional_grads``).

For every op family whose backward takes a ``grad_mask`` (dense binary
elementwise and where, dense matmul, sparse binary, the sparse matmul family) the
backward kernel is spied on: with an operand at ``stop_gradient=True`` it is
asked for the other gradients only, and the gradients it gives match central
finite differences (``_fd`` and ``Operand`` of test_sparse_matmul: on the
stored values of a sparse operand, on the entries of a dense one).  Counting
the primitives (SpMM, SDDMM, ``sum_to_shape``) shows the unneeded work is
gone.  A backward op called directly, with no mask, still gives every gradient.
"""
import contextlib
import itertools

import numpy as np
import pytest

import dense
import sparse
from kernels.core import dispatch, registry
from test_sparse_matmul import Operand, _fd, as_dense, dense_t, rand


@contextlib.contextmanager
def spy(namespace, op):
    """The ``grad_mask`` of every call of the kernels of backward op ``namespace.op``
    (None: called without one)."""
    calls = []
    names = {sig.func for sig in dispatch.get_op(namespace, op).kernels}
    saved = {k: fn for k, fn in registry._KERNELS.items() if k[0] in names}

    def wrap(fn):
        def spied(*args, **kwargs):
            calls.append(kwargs.get("grad_mask"))
            return fn(*args, **kwargs)
        return spied
    try:
        registry._KERNELS.update({k: wrap(fn) for k, fn in saved.items()})
        registry.GENERATION[0] += 1             # dispatch rebinds to the spies
        yield calls
    finally:
        registry._KERNELS.update(saved)
        registry.GENERATION[0] += 1


def masks(n):
    """Every choice of operands needing a gradient, at least one."""
    return [m for m in itertools.product((True, False), repeat=n) if any(m)]


def check_masked(fn, operands, backward, mask, rng, dtype=np.float64):
    """Backward of ``fn`` with only the operands ``mask`` marks trainable.

    The kernel is asked for exactly those gradients (a full mask is a plain
    call), each matches finite differences, and the others stay None.
    """
    arrays = [o.array for o in operands]
    tensors = [o.tensor(a, grad=m) for o, a, m in zip(operands, arrays, mask)]
    out = fn(*tensors)
    w = rand(as_dense(out).shape, rng, dtype)

    def loss(arrays):
        got = fn(*[o.tensor(a) for o, a in zip(operands, arrays)])
        return np.real(np.sum(np.conj(w) * as_dense(got)))
    with spy(*backward) as calls:
        out.backward(dense_t(w))
    assert calls == [None if all(mask) else mask]
    for k, (o, t, m) in enumerate(zip(operands, tensors, mask)):
        if not m:
            assert t.grad is None
            continue
        assert t.grad.layout == t.layout
        np.testing.assert_allclose(o.grad_of(t), _fd(loss, arrays, k), rtol=1e-6, atol=1e-6)


def positive(o):
    o.array = np.abs(o.array) + 0.5
    return o


# ---------------------------------------------------------------- dense
DENSE_BINARY = ["add", "subtract", "multiply", "divide", "pow", "maximum", "minimum"]


@pytest.mark.parametrize("name", DENSE_BINARY)
@pytest.mark.parametrize("mask", masks(2), ids=str)
def test_dense_binary_backward_asks_only_for_needed_grads(name, mask):
    rng = np.random.default_rng(1)
    ops = [positive(Operand("dense", (3, 4), 0, rng, np.float64)),
           positive(Operand("dense", (4,), 0, rng, np.float64))]   # y broadcast over rows
    check_masked(getattr(dense, name), ops, ("dense", f"{name}_grad"), mask, rng)


@pytest.mark.parametrize("mask", masks(2), ids=str)
@pytest.mark.parametrize("tx,ty", [(False, False), (True, False), (False, True)])
def test_dense_matmul_backward_asks_only_for_needed_grads(mask, tx, ty):
    rng = np.random.default_rng(2)
    ops = [Operand("dense", (2, 4, 3) if tx else (2, 3, 4), 0, rng, np.complex128),
           Operand("dense", (5, 4) if ty else (4, 5), 0, rng, np.complex128)]

    def matmul(x, y):
        return dense.matmul(x, y, transpose_x=tx, transpose_y=ty)
    check_masked(matmul, ops, ("dense", "matmul_grad"), mask, rng, np.complex128)


@pytest.mark.parametrize("mask", masks(2), ids=str)
def test_dense_where_backward_asks_only_for_needed_grads(mask):
    rng = np.random.default_rng(11)
    cond = rng.random((3, 4)) < 0.5
    ops = [Operand("dense", (3, 4), 0, rng, np.float64), Operand("dense", (1, 4), 0, rng,
                                                                 np.float64)]

    def where(x, y):
        return dense.where(cond, x, y)
    check_masked(where, ops, ("dense", "where_grad"), mask, rng)


def test_dense_binary_sums_only_the_needed_side(monkeypatch):
    import kernels.dense.elementwise as ew
    shapes = []

    def counting(g, shape):
        shapes.append(tuple(shape))
        return real(g, shape)
    real = ew.sum_to_shape
    monkeypatch.setattr(ew, "sum_to_shape", counting)
    x = dense.to_tensor(np.ones((3, 4)), stop_gradient=False)
    y = dense.to_tensor(np.full(4, 2.0))
    (x * y).backward()
    assert shapes == [(3, 4)]                  # y's [3, 4] -> [4] reduction is skipped
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))


# ---------------------------------------------------------------- sparse binary
SPARSE_BINARY = ["add", "subtract", "multiply", "divide"]
BINARY_KINDS = [("coo", "coo"), ("csr", "csr"), ("coo", "dense"), ("csr", "dense"),
                ("dense", "coo"), ("dense", "csr")]


@pytest.mark.parametrize("name", SPARSE_BINARY)
@pytest.mark.parametrize("kinds", BINARY_KINDS, ids="-".join)
@pytest.mark.parametrize("y_shape", [(3, 4), (1, 4)], ids=["same-shape", "broadcast"])
@pytest.mark.parametrize("mask", masks(2), ids=str)
def test_sparse_binary_backward_asks_only_for_needed_grads(name, kinds, y_shape, mask):
    rng = np.random.default_rng(3)
    ops = [Operand(kinds[0], (3, 4), 6, rng, np.float64),
           Operand(kinds[1], y_shape, 3, rng, np.float64)]
    if name == "divide":        # a divisor away from 0, stored at every coordinate
        if kinds[1] != "dense":
            ops[1].indices = np.indices(y_shape).reshape(2, -1)
            ops[1].array = rng.standard_normal(ops[1].indices.shape[1])
        ops[1] = positive(ops[1])
    check_masked(getattr(sparse, name), ops, ("sparse", f"{name}_grad"), mask, rng)


# ---------------------------------------------------------------- sparse matmul
MATMUL_KINDS = [("coo", "dense"), ("csr", "dense"), ("dense", "coo"), ("dense", "csr"),
                ("coo", "coo"), ("csr", "csr")]


@pytest.mark.parametrize("kinds", MATMUL_KINDS, ids="-".join)
@pytest.mark.parametrize("mask", masks(2), ids=str)
def test_sparse_matmul_backward_asks_only_for_needed_grads(kinds, mask):
    rng = np.random.default_rng(4)
    ops = [Operand(kinds[0], (4, 3), 7, rng, np.complex128),
           Operand(kinds[1], (3, 5), 6, rng, np.complex128)]
    check_masked(sparse.matmul, ops, ("sparse", "matmul_grad"), mask, rng, np.complex128)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("mask", masks(2), ids=str)
def test_sparse_mv_backward_asks_only_for_needed_grads(layout, mask):
    rng = np.random.default_rng(5)
    ops = [Operand(layout, (4, 3), 7, rng, np.float64), Operand("dense", (3,), 0, rng,
                                                                np.float64)]
    check_masked(sparse.mv, ops, ("sparse", "mv_grad"), mask, rng)


@pytest.mark.parametrize("kinds", [("dense", "coo", "dense"), ("dense", "csr", "dense"),
                                   ("coo", "coo", "coo"), ("csr", "csr", "csr")],
                         ids="-".join)
@pytest.mark.parametrize("mask", masks(3), ids=str)
def test_sparse_addmm_backward_asks_only_for_needed_grads(kinds, mask):
    rng = np.random.default_rng(6)
    ops = [Operand(kinds[0], (4, 5), 6, rng, np.float64),
           Operand(kinds[1], (4, 3), 7, rng, np.float64),
           Operand(kinds[2], (3, 5), 6, rng, np.float64)]

    def addmm(i, x, y):
        return sparse.addmm(i, x, y, beta=0.5, alpha=-1.5)
    check_masked(addmm, ops, ("sparse", "addmm_grad"), mask, rng)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("mask", masks(2), ids=str)
def test_sparse_masked_matmul_backward_asks_only_for_needed_grads(layout, mask):
    rng = np.random.default_rng(7)
    pattern = Operand(layout, (2, 4, 5), 9, rng, np.float64)
    ops = [Operand("dense", (2, 4, 3), 0, rng, np.float64),
           Operand("dense", (2, 3, 5), 0, rng, np.float64)]

    def masked(x, y):
        return sparse.masked_matmul(x, y, pattern.tensor(pattern.array))
    check_masked(masked, ops, ("sparse", "masked_matmul_grad"), mask, rng)


def test_masked_matmul_runs_no_backward_kernel_when_only_the_mask_is_tracked():
    rng = np.random.default_rng(8)
    pattern = Operand("coo", (4, 5), 6, rng, np.float64)
    mask = pattern.tensor(pattern.array, grad=True)
    out = sparse.masked_matmul(rand((4, 3), rng), rand((3, 5), rng), mask)
    with spy("sparse", "masked_matmul_grad") as calls:
        out.backward()
    assert calls == [] and mask.grad is None


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("train,want", [("W", {"sddmm": 1, "spmm": 0}),
                                        ("x", {"sddmm": 0, "spmm": 1}),
                                        ("both", {"sddmm": 1, "spmm": 1})])
def test_sparse_linear_layer_backward_runs_only_the_needed_product(layout, train, want,
                                                                    monkeypatch):
    """``W @ x``: training only W runs its SDDMM and not x's SpMM (and the reverse)."""
    from kernels.sparse import blas
    rng = np.random.default_rng(9)
    w_op, x_op = Operand(layout, (6, 5), 12, rng, np.float64), Operand("dense", (5, 3), 0,
                                                                       rng, np.float64)
    W = w_op.tensor(w_op.array, grad=train in ("W", "both"))
    x = x_op.tensor(x_op.array, grad=train in ("x", "both"))
    out = sparse.matmul(W, x)
    counts = {"sddmm": 0, "spmm": 0}
    for name in counts:
        def counting(*args, _name=name, _real=getattr(blas, name), **kwargs):
            counts[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(blas, name, counting)
    out.backward()
    assert counts == want


# ---------------------------------------------------------------- direct calls
def test_backward_ops_called_directly_give_every_gradient():
    rng = np.random.default_rng(10)
    a, b, g = rand((3, 4), rng), rand((4,), rng), rand((3, 4), rng)
    gx, gy = dispatch.call("dense", "multiply_grad", a, b, a * b, g)
    np.testing.assert_allclose(gx.numpy(), g * b)
    np.testing.assert_allclose(gy.numpy(), (g * a).sum(axis=0))
    w_op = Operand("coo", (4, 3), 7, rng, np.float64)
    W, x, h = w_op.tensor(w_op.array), rand((3, 2), rng), rand((4, 2), rng)
    gw, gx = dispatch.call("sparse", "matmul_grad", W, dense_t(x), dense_t(h))
    rows, cols = w_op.indices            # one gradient per stored entry, in storage order
    np.testing.assert_allclose(gw.values().numpy(), (h @ x.T)[rows, cols])
    np.testing.assert_allclose(gx.numpy(), as_dense(W).T @ h)
