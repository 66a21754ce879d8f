"""Hostile calls against the public API, run by tests/test_probes.py in capped subprocesses.

A probe is a name, a function and what it must do: finish (its own asserts
compare the result with numpy, scipy or hand-worked values, and mutate every
numpy input afterwards to catch aliasing) or raise one of the expected types
with the op's name in the message.  Hand-written probes cover each op's
known traps; a generic sweep feeds every public op of the generated APIs
hostile values in each argument, so ops added later are probed too.

``python hostile_probes.py CAP_BYTES`` is the worker: it caps its address
space, reads probe indices from stdin (one per line) and prints one JSON line
per probe (empty ``failure`` when it behaved) as soon as it ends, so a crash
loses only the probe that was running.
"""
import json
import os
import pickle
import resource
import sys
from dataclasses import dataclass

import numpy as np
import scipy.sparse

import dense
import sparse
from kernels import MetaTensor

V, T, I = ValueError, TypeError, IndexError


@dataclass(frozen=True)
class Probe:
    name: str
    fn: object
    op: str | None = None      # None: must finish; else the op its error must name
    errors: tuple = ()         # the exception types allowed (with ``op`` in the message)
    may_pass: bool = False     # a sweep probe may also finish (the op took the value)


PROBES = []


def ok(name):
    """Decorator: a probe that must finish (its asserts check the answer)."""
    def deco(fn):
        PROBES.append(Probe(name, fn))
        return fn
    return deco


def bad(name, op, errors, fn):
    """A probe that must raise one of ``errors`` naming ``op``."""
    PROBES.append(Probe(name, fn, op, errors if isinstance(errors, tuple) else (errors,)))


def _t(a, **kw):
    return dense.to_tensor(np.asarray(a), **kw)


def _same(t, want):
    got = t.to_dense().numpy() if t.layout != "dense" else t.numpy()
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)


def _mutate(*arrays):
    for a in arrays:
        a.flags.writeable = True
        a.fill(7)


def _unaliased(out, *inputs):
    """The output does not change when the caller's numpy inputs do."""
    before = out.to_dense().numpy() if out.layout != "dense" else out.numpy()
    _mutate(*inputs)
    _same(out, before)


A = np.arange(6.0).reshape(2, 3)

# ---------------------------------------------------------------- to_tensor, Tensor
bad("to_tensor ragged", "to_tensor", V, lambda: dense.to_tensor([[1, 2], [3]]))
bad("to_tensor object", "to_tensor", (T, V), lambda: dense.to_tensor([object()]))
bad("to_tensor str", "to_tensor", T, lambda: dense.to_tensor("abc"))
bad("to_tensor uint64", "to_tensor", T, lambda: dense.to_tensor(np.ones(2, np.uint64)))
bad("to_tensor datetime", "to_tensor", T,
    lambda: dense.to_tensor(np.array(["2020-01-01"], "datetime64[D]")))
bad("to_tensor bad dtype", "to_tensor", T, lambda: dense.to_tensor([1.0], dtype="float99"))
bad("to_tensor dtype object", "to_tensor", T, lambda: dense.to_tensor([1.0], dtype=object))
bad("to_tensor place", "to_tensor", V, lambda: dense.to_tensor([1.0], place="tpu"))
bad("to_tensor int grad", "stop_gradient", T, lambda: dense.to_tensor([1], stop_gradient=False))
bad("to_tensor bool grad", "stop_gradient", T,
    lambda: dense.to_tensor([True], stop_gradient=False))
bad("to_tensor str stop_gradient", "stop_gradient", T,
    lambda: dense.to_tensor([1.0], stop_gradient="False"))


@ok("to_tensor big-endian")
def _():
    t = dense.to_tensor(np.array([1.5, 2.5], ">f4"))
    _same(t, np.array([1.5, 2.5], np.float32))


@ok("to_tensor copies")
def _():
    a = A.copy()
    _unaliased(dense.to_tensor(a), a)


@ok("Tensor copies and keeps flags")
def _():
    a = A.copy()
    t = dense.Tensor(a)
    assert a.flags.writeable
    _unaliased(t, a)


@ok("Tensor of a read-only array copies")
def _():
    a = A.copy()
    a.flags.writeable = False
    _unaliased(dense.Tensor(a), a)


def _locked(t, what):
    """np.asarray(t) refuses to become writable."""
    try:
        np.asarray(t).flags.writeable = True
    except ValueError:
        return
    raise AssertionError(f"{what} could be made writable")


ok("asarray cannot be unlocked")(lambda: _locked(dense.to_tensor(A), "np.asarray(t)"))
ok("pooled asarray cannot be unlocked")(lambda: _locked(
    dense.expand(dense.to_tensor(np.ones((1, 1 << 20))), [32, 1 << 20]), "a pooled output"))


@ok("pickle non-leaf")
def _():
    x = _t(A, stop_gradient=False)
    y = pickle.loads(pickle.dumps(dense.reshape(x, [3, 2])))
    assert y.is_leaf
    _same(y, A.reshape(3, 2))
    _locked(y, "an unpickled tensor")


bad("Tensor of a list", "Tensor", T, lambda: dense.Tensor([1.0, 2.0]))
bad("Tensor of None", "Tensor", T, lambda: dense.Tensor(None))
bad("Tensor of a tensor", "Tensor", T, lambda: dense.Tensor(_t([1.0])))
bad("bool of many", "bool", V, lambda: bool(_t([1.0, 2.0])))
bad("bool of none", "bool", V, lambda: bool(_t(np.zeros(0))))
bad("asarray copy=False", "__array__", V,
    lambda: np.asarray(_t([1.0]), dtype=np.float32, copy=False))
bad("setter int grad", "stop_gradient", T, lambda: setattr(_t([1, 2]), "stop_gradient", False))
bad("setter str", "stop_gradient", T, lambda: setattr(_t([1.0]), "stop_gradient", "no"))

# ---------------------------------------------------------------- reshape
bad("reshape two -1", "reshape", V, lambda: dense.reshape(A, [-1, -1]))
bad("reshape -2", "reshape", V, lambda: dense.reshape(A, [-2, 3]))
bad("reshape size", "reshape", V, lambda: dense.reshape(A, [4, 2]))
bad("reshape 2**64", "reshape", V, lambda: dense.reshape(A, [2 ** 64]))
bad("reshape str", "reshape", T, lambda: dense.reshape(A, "ab"))
bad("reshape bool dim", "reshape", T, lambda: dense.reshape(A, [True, 6]))
bad("reshape float dim", "reshape", T, lambda: dense.reshape(A, [2.0, 3]))
bad("reshape None x", "reshape", T, lambda: dense.reshape(None, [6]))
bad("reshape list x", "reshape", T, lambda: dense.reshape([1.0, 2.0], [2]))
bad("reshape meta x", "reshape", T, lambda: dense.reshape(MetaTensor((2, 3), "float64"), [6]))
bad("reshape 2-D shape array", "reshape", T, lambda: dense.reshape(A, np.ones((2, 3), int)))
bad("reshape ambiguous -1", "reshape", V, lambda: dense.reshape(np.ones((0, 3)), [0, -1]))
bad("reshape sparse x", "reshape", T,
    lambda: dense.reshape(sparse.sparse_coo_tensor([[0]], [1.0], [2]), [2]))


@ok("reshape values and aliasing")
def _():
    a = A.copy()
    _same(dense.reshape(a, [3, 0 + 2]), A.reshape(3, 2))
    out = dense.reshape(a, [0, -1])
    _unaliased(out, a)


@ok("reshape empty")
def _():
    _same(dense.reshape(np.ones((0, 3)), [3, -1]), np.ones((3, 0)))
    _same(dense.reshape(np.ones((1, 1)), []), np.ones(()))


# ---------------------------------------------------------------- sum
bad("sum axis range", "sum", V, lambda: dense.sum(A, axis=[5]))
bad("sum axis repeat", "sum", V, lambda: dense.sum(A, axis=[0, -2]))
bad("sum axis str", "sum", T, lambda: dense.sum(A, axis="a"))
bad("sum keepdim str", "sum", T, lambda: dense.sum(A, keepdim="yes"))
bad("sum axis float", "sum", T, lambda: dense.sum(A, axis=[0.5]))


@ok("sum values")
def _():
    _same(dense.sum(A, axis=[1], keepdim=True), A.sum(1, keepdims=True))
    _same(dense.sum(A, axis=[]), np.asarray(A.sum()))
    _same(dense.sum(np.ones(0)), np.asarray(0.0))


@ok("sum uint8 and bool")
def _():
    u = np.full((3, 200), 255, np.uint8)
    s = dense.sum(u)
    _same(s, np.asarray(255 * 600, np.int64))
    _same(dense.expand(dense.reshape(s, [1]), [2]), np.full(2, 255 * 600, np.int64))
    _same(dense.sum(np.ones(5, bool)), np.asarray(5, np.int64))


@ok("sum int8 no wrap")
def _():
    _same(dense.sum(np.full(300, 100, np.int8)), np.asarray(30000, np.int64))


# ---------------------------------------------------------------- expand
bad("expand 2**62", "expand", V, lambda: dense.expand(np.ones(1), [2 ** 62]))
bad("expand 1e12", "expand", V, lambda: dense.expand(np.ones(1), [10 ** 12]))
bad("expand 2**64", "expand", V, lambda: dense.expand(np.ones(1), [2 ** 64]))
bad("expand non-1", "expand", V, lambda: dense.expand(A, [4, 3]))
bad("expand new -1", "expand", V, lambda: dense.expand(A, [-1, 2, 3]))
bad("expand -2", "expand", V, lambda: dense.expand(np.ones(1), [-2]))
bad("expand fewer", "expand", V, lambda: dense.expand(A, [3]))
bad("expand float", "expand", T, lambda: dense.expand(A, [2.0, 3]))
bad("expand 2-D shape", "expand", T, lambda: dense.expand(A, [[2, 3]]))
bad("expand float big", "expand", T, lambda: dense.expand(np.ones(1), [1e12]))
bad("expand meta big", "expand", V,
    lambda: dense.expand.infer_meta(MetaTensor((1,), "float64"), [10 ** 12]))


@ok("expand values")
def _():
    a = np.arange(3.0).reshape(3, 1)
    out = dense.expand(a, [2, 3, 4])
    _same(out, np.broadcast_to(a, (2, 3, 4)))
    _unaliased(out, a)
    _same(dense.expand(np.ones((1, 2)), [0, 2]), np.ones((0, 2)))


@ok("expand float32 grad accuracy")
def _():
    x = _t(np.ones((2, 1), np.float32), stop_gradient=False)
    dense.expand(x, [2, 1 << 20]).backward(_t(np.full((2, 1 << 20), 0.1, np.float32)))
    want = (1 << 20) * np.float64(np.float32(0.1))
    err = abs(x.grad.numpy().astype(np.float64)[0, 0] - want) / want
    assert err < 4 * np.finfo(np.float32).eps * 20, err


@ok("expand int8 grad refused")
def _():
    try:
        _t(np.ones(2, np.int8), stop_gradient=False)
    except TypeError as exc:
        assert "stop_gradient" in str(exc)
        return
    raise AssertionError("an int8 leaf took a gradient")


# ---------------------------------------------------------------- repeat
bad("repeat negative", "repeat", V, lambda: dense.repeat(A, [1, -1]))
bad("repeat fewer", "repeat", V, lambda: dense.repeat(A, [2]))
bad("repeat 5e11", "repeat", V, lambda: dense.repeat(np.ones(1), [5 * 10 ** 11]))
bad("repeat float", "repeat", T, lambda: dense.repeat(np.ones(1), [5e11]))
bad("repeat 2**70", "repeat", V, lambda: dense.repeat(np.ones(1), [2 ** 70]))
bad("repeat str", "repeat", T, lambda: dense.repeat(A, "2"))


@ok("repeat values")
def _():
    a = A.copy()
    out = dense.repeat(a, [2, 1, 2])
    _same(out, np.tile(A, (2, 1, 2)))
    _unaliased(out, a)
    _same(dense.repeat(A, [0, 1]), np.tile(A, (0, 1)))


@ok("repeat grad of empty")
def _():
    x = _t(np.ones((0, 3)), stop_gradient=False)
    dense.sum(dense.repeat(x, [2, 1])).backward()
    _same(x.grad, np.ones((0, 3)))


# ---------------------------------------------------------------- gather, batch_gather
bad("gather float index", "gather", T, lambda: dense.gather(A, np.array([0.0])))
bad("gather uint8 index", "gather", T, lambda: dense.gather(A, np.array([0], np.uint8)))
bad("gather bool index", "gather", T, lambda: dense.gather(A, np.array([True])))
bad("gather uint64 index", "gather", T, lambda: dense.gather(A, np.array([2 ** 64 - 1], np.uint64)))
bad("gather out of range", "gather", I, lambda: dense.gather(A, np.array([2])))
bad("gather int64 max", "gather", I, lambda: dense.gather(A, np.array([2 ** 63 - 1])))
bad("gather int64 min", "gather", I, lambda: dense.gather(A, np.array([-2 ** 63])))
bad("gather axis", "gather", V, lambda: dense.gather(A, np.array([0]), 2))
bad("gather batch_dims", "gather", V, lambda: dense.gather(A, np.array([0]), 0, 2))
bad("gather 8 TB", "gather", V,
    lambda: dense.gather(np.ones((1, 10 ** 6)), np.zeros(10 ** 6, np.int64), 0))
bad("gather list index", "gather", T, lambda: dense.gather(A, [0, 1]))
bad("gather str axis", "gather", T, lambda: dense.gather(A, np.array([0]), "0"))
bad("batch_gather 0-d", "batch_gather", V, lambda: dense.batch_gather(A, np.array(0)))
bad("batch_gather rank", "batch_gather", V,
    lambda: dense.batch_gather(np.ones(3), np.zeros((1, 1), np.int64)))
bad("batch_gather dtype", "batch_gather", T, lambda: dense.batch_gather(A, np.zeros((2, 1))))
bad("batch_gather range", "batch_gather", I,
    lambda: dense.batch_gather(A, np.array([[0], [5]])))


@ok("gather values and wrap")
def _():
    i = np.array([[2, -1], [0, 1]])
    out = dense.gather(A, i, 1)
    _same(out, np.take(A, i, axis=1))
    _unaliased(out, i)


@ok("gather backward after index change")
def _():
    x = _t(np.arange(4.0), stop_gradient=False)
    i = np.array([0, 0, 1])
    out = dense.gather(x, i, 0)
    i[:] = 3
    dense.sum(out).backward()
    _same(x.grad, np.array([2.0, 1.0, 0.0, 0.0]))


@ok("batch_gather backward after index change")
def _():
    x = _t(np.arange(6.0).reshape(2, 3), stop_gradient=False)
    i = np.array([[2, 2], [0, 1]])
    out = dense.batch_gather(x, i)
    _same(out, np.take_along_axis(np.arange(6.0).reshape(2, 3), i, 1))
    i[:] = 0
    dense.sum(out).backward()
    _same(x.grad, np.array([[0.0, 0.0, 2.0], [1.0, 1.0, 0.0]]))


@ok("gather big-endian index")
def _():
    _same(dense.gather(A, np.array([1, 0], ">i8"), 0), A[[1, 0]])


# ---------------------------------------------------------------- autograd
def _leaf():
    return _t(A, stop_gradient=False)


bad("backward shape", "backward", V,
    lambda: dense.reshape(_leaf(), [6]).backward(_t(np.ones(5))))
bad("backward complex", "backward", T,
    lambda: dense.reshape(_leaf(), [6]).backward(_t(np.ones(6) * 1j)))
bad("backward no grad", "backward", RuntimeError, lambda: _t(A).backward())


def _twice():
    y = dense.sum(dense.reshape(_leaf(), [6]))
    y.backward()
    y.backward()


bad("backward freed", "backward", RuntimeError, _twice)


@ok("backward frees the graph")
def _():
    import gc
    import weakref
    x = _leaf()
    y = dense.expand(dense.reshape(x, [1, 6]), [4, 6])
    loss, ref = dense.sum(y), weakref.ref(y)
    del y
    loss.backward()
    gc.collect()
    assert ref() is None
    _same(x.grad, np.full((2, 3), 4.0))


@ok("backward on threads")
def _():
    import threading
    x = _t(np.ones(2), stop_gradient=False)

    def work():
        for _ in range(20):
            dense.sum(dense.expand(dense.reshape(x, [1, 2]), [3, 2])).backward()
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    _same(x.grad, np.full(2, 240.0))


# ---------------------------------------------------------------- sparse constructors
IDX, VAL = np.array([[0, 1, 1], [2, 0, 2]]), np.array([1.0, 2.0, 3.0])
DENSE23 = np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 3.0]])
COO = "sparse_coo_tensor"
CSR = "sparse_csr_tensor"

bad("coo float indices", COO, T, lambda: sparse.sparse_coo_tensor(IDX * 1.0, VAL, [2, 3]))
bad("coo negative", COO, I, lambda: sparse.sparse_coo_tensor(-IDX, VAL, [2, 3]))
bad("coo out of range", COO, I, lambda: sparse.sparse_coo_tensor(IDX, VAL, [2, 2]))
bad("coo rank", COO, V, lambda: sparse.sparse_coo_tensor(IDX, VAL, [2, 3, 4]))
bad("coo nnz", COO, V, lambda: sparse.sparse_coo_tensor(IDX, VAL[:2], [2, 3]))
bad("coo 3-D indices", COO, V, lambda: sparse.sparse_coo_tensor(IDX[None], VAL, [2, 3]))
bad("coo no entries", COO, V, lambda: sparse.sparse_coo_tensor(np.zeros((2, 0), int), []))
bad("coo 2**70", COO, V, lambda: sparse.sparse_coo_tensor([[0], [1]], [1.0], [2 ** 70, 4]))
bad("coo negative dim", COO, V, lambda: sparse.sparse_coo_tensor([[0]], [1.0], [-1]))
bad("coo uint16 values", COO, T, lambda: sparse.sparse_coo_tensor([[0]], np.ones(1, np.uint16)))
bad("coo object values", COO, (T, V), lambda: sparse.sparse_coo_tensor([[0]], [object()], [1]))
bad("coo uint64 huge", COO, I,
    lambda: sparse.sparse_coo_tensor(np.array([[2 ** 64 - 1]], np.uint64), [1.0], [4]))
bad("coo ragged indices", COO, V, lambda: sparse.sparse_coo_tensor([[0, 1], [2]], VAL[:2]))
bad("coo ragged values", COO, V, lambda: sparse.sparse_coo_tensor([[0, 1]], [[1.0], [2, 3]]))
bad("coo shape str", COO, T, lambda: sparse.sparse_coo_tensor(IDX, VAL, "23"))
bad("coo shape floats", COO, T, lambda: sparse.sparse_coo_tensor(IDX, VAL, [2.0, 3.0]))
bad("coo int grad", "stop_gradient", T,
    lambda: sparse.sparse_coo_tensor(IDX, [1, 2, 3], [2, 3], stop_gradient=False))
bad("coo place", COO, V, lambda: sparse.sparse_coo_tensor(IDX, VAL, [2, 3], place="npu"))
bad("coo dtype", COO, T, lambda: sparse.sparse_coo_tensor(IDX, VAL, [2, 3], dtype="x"))
bad("coo sparse values", COO, T, lambda: sparse.sparse_coo_tensor(
    [[0]], sparse.sparse_coo_tensor([[0]], [1.0], [1]), [1]))


@ok("coo values, duplicates and aliasing")
def _():
    idx, val = np.array([[0, 1, 1, 0], [2, 0, 2, 2]]), np.array([1.0, 2.0, 3.0, 4.0])
    x = sparse.sparse_coo_tensor(idx, val, [2, 3])
    _unaliased(x, idx, val)
    want = np.array([[0.0, 0.0, 5.0], [2.0, 0.0, 3.0]])
    _same(x, want)
    c = x.coalesce()
    assert c.nnz() == 3 and c.is_coalesced()
    _same(c, want)


@ok("coo big-endian")
def _():
    x = sparse.sparse_coo_tensor(IDX.astype(">i8"), VAL.astype(">f4"), [2, 3])
    _same(x, DENSE23.astype(np.float32))


@ok("coo shape inferred")
def _():
    x = sparse.sparse_coo_tensor(IDX, VAL)
    assert x.shape == [2, 3]
    _same(x, DENSE23)


@ok("coo from a reshaped caller array")
def _():
    flat = IDX.reshape(-1).copy()
    x = sparse.sparse_coo_tensor(dense.reshape(flat, [2, 3]), VAL, [2, 3])
    _unaliased(x, flat)


C_ROWS, C_COLS = np.array([0, 1, 3]), np.array([2, 0, 2])
bad("csr wrap int64", CSR, V, lambda: sparse.sparse_csr_tensor(
    np.array([0, 2 ** 63 - 1, -2 ** 63, -1, 3]), [0, 1, 2], VAL, [4, 4]))
bad("csr wrap int32", CSR, V, lambda: sparse.sparse_csr_tensor(
    np.array([0, 2 ** 31 - 1, -2 ** 31, -1, 3], np.int32), [0, 1, 2], VAL, [4, 4]))
bad("csr batch ends wrap", CSR, V, lambda: sparse.sparse_csr_tensor(
    np.array([0, 2 ** 62] * 4), np.zeros(0, int), np.zeros(0), [4, 1, 3]))
bad("csr start", CSR, V, lambda: sparse.sparse_csr_tensor([1, 1, 3], C_COLS, VAL, [2, 3]))
bad("csr decreasing", CSR, V, lambda: sparse.sparse_csr_tensor([0, 3, 2], C_COLS, VAL, [2, 3]))
bad("csr end", CSR, V, lambda: sparse.sparse_csr_tensor([0, 1, 2], C_COLS, VAL, [2, 3]))
bad("csr col range", CSR, I, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS + 1, VAL, [2, 3]))
bad("csr col negative", CSR, I, lambda: sparse.sparse_csr_tensor(C_ROWS, -C_COLS, VAL, [2, 3]))
bad("csr 1-D", CSR, V, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS, VAL, [6]))
bad("csr 4-D", CSR, V, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS, VAL, [1, 1, 2, 3]))
bad("csr crows length", CSR, V, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS, VAL, [3, 3]))
bad("csr float cols", CSR, T, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS * 1.0, VAL, [2, 3]))
bad("csr lengths", CSR, V, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS, VAL[:2], [2, 3]))
bad("csr 2-D cols", CSR, V, lambda: sparse.sparse_csr_tensor(C_ROWS, C_COLS[None], VAL, [2, 3]))


@ok("csr values and aliasing")
def _():
    r, c, v = C_ROWS.copy(), C_COLS.copy(), VAL.copy()
    x = sparse.sparse_csr_tensor(r, c, v, [2, 3])
    _same(x, DENSE23)
    _unaliased(x, r, c, v)


@ok("csr batched")
def _():
    x = sparse.sparse_csr_tensor([0, 1, 1, 0, 0, 2], [2, 0, 1], [1.0, 2.0, 3.0], [2, 2, 3])
    want = np.zeros((2, 2, 3))
    want[0, 0, 2], want[1, 1, 0], want[1, 1, 1] = 1.0, 2.0, 3.0
    _same(x, want)


# ---------------------------------------------------------------- from_scipy
bad("from_scipy dense", "from_scipy", T, lambda: sparse.from_scipy(A))
bad("from_scipy uint16", "from_scipy", T,
    lambda: sparse.from_scipy(scipy.sparse.coo_array(np.ones((2, 2), np.uint16))))
bad("from_scipy csr uint16", "from_scipy", T,
    lambda: sparse.from_scipy(scipy.sparse.csr_array(np.ones((2, 2), np.uint16))))


@ok("from_scipy stale canonical flag")
def _():
    m = scipy.sparse.coo_array(([1.0, 2.0], ([0, 1], [0, 1])), shape=(2, 2))
    m.sum_duplicates()
    m.coords[0][:] = [1, 0]
    x = sparse.from_scipy(m)
    assert not x.is_coalesced()
    _same(x, np.array([[0.0, 2.0], [1.0, 0.0]]))


@ok("from_scipy owns its buffers")
def _():
    m = scipy.sparse.csr_array(DENSE23)
    x = sparse.from_scipy(m)
    _unaliased(x, m.data, m.indices, m.indptr)
    np.testing.assert_array_equal(x.to_scipy().toarray(), DENSE23)


# ---------------------------------------------------------------- sparse ops
def _coo():
    return sparse.sparse_coo_tensor(IDX, VAL, [2, 3])


def _csr():
    return sparse.sparse_csr_tensor(C_ROWS, C_COLS, VAL, [2, 3])


bad("sparse reshape order", "reshape", V, lambda: sparse.reshape(_coo(), [3, 2], order="X"))
bad("sparse reshape two -1", "reshape", V, lambda: sparse.reshape(_coo(), [-1, -1]))
bad("sparse reshape 0-d", "reshape", V,
    lambda: sparse.reshape(sparse.sparse_coo_tensor([[0]], [1.0], [1]), []))
bad("sparse reshape csr 4-D", "reshape", V, lambda: sparse.reshape(_csr(), [1, 1, 2, 3]))
bad("sparse reshape size", "reshape", V, lambda: sparse.reshape(_csr(), [4, 2]))
bad("sparse reshape dense x", "reshape", T, lambda: sparse.reshape(A, [3, 2]))
bad("to_dense 8 TB", "to_dense", V,
    lambda: sparse.sparse_coo_tensor([[0]], [1.0], [10 ** 12]).to_dense())
bad("to_sparse_coo 0", "to_sparse_coo", V, lambda: sparse.to_sparse_coo(_t(A), 0))
bad("to_sparse_coo 5", "to_sparse_coo", V, lambda: _t(A).to_sparse_coo(5))
bad("to_sparse_coo str", "to_sparse_coo", T, lambda: sparse.to_sparse_coo(_t(A), "1"))
bad("to_sparse_csr 1-D", "to_sparse_csr", V, lambda: _t(np.ones(3)).to_sparse_csr())
bad("to_sparse_csr 4-D", "to_sparse_csr", V, lambda: _t(np.ones((1, 1, 1, 1))).to_sparse_csr())
bad("sparse backward shape", "backward", V,
    lambda: sparse.sparse_coo_tensor(IDX, VAL, [2, 3], stop_gradient=False).backward(
        _t(np.ones((3, 2)))))
bad("sparse backward complex", "backward", T,
    lambda: _csr_leaf().backward(_t(np.ones((2, 3)) * 1j)))


def _csr_leaf():
    return sparse.sparse_csr_tensor(C_ROWS, C_COLS, VAL, [2, 3], stop_gradient=False)


@ok("sparse reshape values")
def _():
    for x in (_coo(), _csr()):
        for order in ("C", "F"):
            got = sparse.reshape(x, [3, 2], order=order)
            _same(got, DENSE23.reshape(3, 2, order=order))
            assert got.layout == x.layout


@ok("sparse conversions")
def _():
    _same(_t(DENSE23).to_sparse_coo(1), DENSE23)
    _same(_t(DENSE23).to_sparse_csr(), DENSE23)
    _same(_coo().to_sparse_csr(), DENSE23)
    _same(_csr().to_sparse_coo(), DENSE23)
    np.testing.assert_array_equal(_coo().to_scipy().toarray(), DENSE23)


@ok("sparse grad keeps the pattern")
def _():
    for x in (_coo_leaf(), _csr_leaf()):
        g = _t(np.arange(6.0).reshape(2, 3))
        sparse.reshape(x, [3, 2]).to_dense().backward(dense.reshape(g, [3, 2]))
        assert x.grad.layout == x.layout
        _same(x.grad, np.where(DENSE23 != 0, np.arange(6.0).reshape(2, 3), 0.0))


def _coo_leaf():
    return sparse.sparse_coo_tensor(IDX, VAL, [2, 3], stop_gradient=False)


@ok("sparse grad_tensor with more sparse dims")
def _():
    n = 50_000
    x = sparse.sparse_coo_tensor([[3]], np.zeros((1, n)), [n, n], stop_gradient=False)
    x.backward(sparse.sparse_coo_tensor([[3, 3], [7, 7]], [2.0, 3.0], [n, n]))
    got = x.grad.values().numpy()
    assert got[0, 7] == 5.0 and np.count_nonzero(got) == 1


ok("sparse values read-only")(lambda: _locked(_coo().values(), "a sparse tensor's values"))


# ---------------------------------------------------------------- operators, protocols, setters
bad("== sparse", "==", T, lambda: _t(A) == _coo())
bad("sparse != dense", "!=", T, lambda: _csr() != _t(DENSE23))
bad("sparse < sparse", "<", T, lambda: _coo() < _coo())
bad("ndarray == sparse", "==", T, lambda: A == _coo())
bad("== ragged list", "equal", V, lambda: _t(A) == [[1.0], [2.0, 3.0]])
bad("+ list of str", "add", T, lambda: _t(A) + ["a", "b", "c"])
bad("getitem float slice", "getitem", T, lambda: _t(A)[1.0:2])
bad("getitem float step", "getitem", T, lambda: _t(A)[::np.float32(1)])
bad("dlpack stream on cpu", "__dlpack__", V, lambda: _t(A).__dlpack__(stream=1))
bad("dlpack max_version str", "__dlpack__", T, lambda: _t(A).__dlpack__(max_version="1"))
bad("set_num_threads str", "set_num_threads", T, lambda: dense.set_num_threads("abc"))
bad("set_num_threads 0", "set_num_threads", V, lambda: dense.set_num_threads(0))
bad("set_pool_bytes float", "set_pool_bytes", T, lambda: dense.set_pool_bytes(1e9))
bad("no_grad of a non-function", "no_grad", T, lambda: dense.no_grad("x"))
bad("int of nan", "int()", V, lambda: int(_t(float("nan"))))
bad("bool of a sparse vector", "bool()", V, lambda: bool(_coo()))
bad("setattr _array", "Tensor", AttributeError, lambda: setattr(_t(A), "_array", np.zeros(3)))
bad("setattr new name", "Tensor", AttributeError, lambda: setattr(_t(A) * 2.0, "foo", 1))
bad("sparse setattr _d", "SparseCooTensor", AttributeError, lambda: setattr(_coo(), "_d", None))
bad("sparse delattr", "SparseCsrTensor", AttributeError, lambda: delattr(_csr(), "_meta"))
bad("zeros empty beyond numpy", "zeros", V, lambda: dense.zeros([0, 2 ** 62]))
bad("full empty beyond numpy", "full", V, lambda: dense.full([0, 2 ** 62], 1))
bad("expand empty beyond numpy", "expand", V, lambda: dense.expand(np.ones((0, 1)), [0, 2 ** 62]))
bad("to_dense empty beyond numpy", "to_dense", V, lambda: sparse.sparse_coo_tensor(
    np.zeros((2, 0), int), np.zeros(0), [0, 2 ** 62]).to_dense())
bad("numpy of a huge broadcast", "numpy", V,
    lambda: dense.to_tensor(np.broadcast_to(np.ones(3), (10 ** 6, 10 ** 6, 3))).numpy())
bad("gather of a huge broadcast", "gather", (MemoryError, V), lambda: dense.gather(
    dense.to_tensor(np.broadcast_to(np.ones(3), (10 ** 6, 10 ** 6, 3))), np.array([0]), 0))
bad("coo of a huge broadcast", COO, V,
    lambda: sparse.sparse_coo_tensor([[0]], np.broadcast_to(np.ones(3), (1, 10 ** 6, 10 ** 6, 3))))


# ---------------------------------------------------------------- second hostile round
bad("float of a sparse vector", "float()", V, lambda: float(_coo()))
bad("iter of a sparse tensor", "iteration", T, lambda: iter(_csr()))
bad("getitem of a sparse tensor", "getitem", T, lambda: _coo()[0])
bad("sparse as an index", "operator.index()", T, lambda: [1, 2][_coo()])
bad("full complex into float", "full", V, lambda: dense.full([2], 1j, dtype="float64"))
bad("full_like complex into float", "full_like", V, lambda: dense.full_like(_t(A), 1j))
bad("to_tensor complex array into float", "to_tensor", V,
    lambda: dense.to_tensor(np.array([1j]), dtype="float64"))
bad("to_tensor NaN array into int", "to_tensor", V,
    lambda: dense.to_tensor(np.array([np.nan]), dtype="int32"))
bad("to_tensor wrapping int array", "to_tensor", V,
    lambda: dense.to_tensor(np.array([300]), dtype="uint8"))
bad("arange step beyond int8", "arange", V, lambda: dense.arange(0, 1e18, 1e17, dtype="int8"))
bad("coo complex values into float", COO, V,
    lambda: sparse.sparse_coo_tensor([[0]], np.array([1j]), [1], dtype="float64"))
bad("add.infer_meta of a nonzero scalar", "add", T, lambda: sparse.add.infer_meta(_coo(), 2))
bad("subtract.infer_meta of a nonzero scalar", "subtract", T,
    lambda: sparse.subtract.infer_meta(2, _csr()))
bad("reshape to a sparse shape", "reshape", T, lambda: dense.reshape(_t(A), _coo()))
bad("coo of a sparse shape", COO, T, lambda: sparse.sparse_coo_tensor(IDX, VAL, _coo()))
bad("to_tensor array place", "to_tensor", T, lambda: dense.to_tensor(A, place=np.zeros(2)))
bad("to_sparse_coo array sparse_dim", "to_sparse_coo", T, lambda: _coo().to_sparse_coo(A))
bad("sparse * MetaTensor", "multiply", T, lambda: _coo() * MetaTensor((2, 3), "float64"))
bad("getitem np.bool_ stop", "getitem", T, lambda: _t(A)[0:np.True_])
bad("__array__ bad dtype", "__array__", T, lambda: _t(A).__array__(dtype="abc"))


@ok("sparse scalar conversions and len")
def _():
    x = sparse.sparse_coo_tensor([[0, 0]], [1.5, 2.0], [1])
    assert float(x) == 3.5 and int(x) == 3 and complex(x) == 3.5
    assert len(_coo()) == 2 and len(_csr()) == 2


@ok("arange of numpy bools")
def _():
    _same(dense.arange(np.True_, 3), np.arange(np.True_, 3))
    _same(dense.arange(np.False_, np.True_), np.array([0]))


@ok("operators take lists as numpy")
def _():
    t = _t(A)
    _same(t == [0.0, 1.0, 9.0], A == [0.0, 1.0, 9.0])
    _same(t < (1.0, 1.0, 1.0), A < (1.0, 1.0, 1.0))
    _same([1, 2, 3] - t, [1, 2, 3] - A)
    _same(_coo() * [1.0, 2.0, 3.0], DENSE23 * [1.0, 2.0, 3.0])
    assert (_coo() == None) is False                      # noqa: E711


@ok("empty outputs numpy can make")
def _():
    _same(dense.zeros([0, 2 ** 59]), np.zeros((0, 2 ** 59)))
    _same(dense.full([2 ** 59, 0], 1, dtype="int8"), np.full((2 ** 59, 0), 1, np.int8))
    _same(dense.to_tensor(np.empty((0, 2 ** 59), np.float32)), np.zeros((0, 2 ** 59), np.float32))


@ok("broadcast input owns its unique data")
def _():
    base = np.arange(3.0)
    t = dense.to_tensor(np.broadcast_to(base, (10 ** 6, 10 ** 6, 3)))   # 24 TB materialised
    base[:] = 9.0
    _same(t[7, 8], np.arange(3.0))
    _locked(t, "a broadcast tensor")
    small = np.broadcast_to(np.array([1.0, 2.0]), (3, 2))
    x = dense.Tensor(small)
    _same(x * x + 1.0, small * small + 1.0)


@ok("no_grad object re-entered")
def _():
    x = _t(np.ones(2), stop_gradient=False)
    ng = dense.no_grad()
    with ng:
        with ng:
            assert (x * 2.0).stop_gradient
    with ng:
        assert (x * 2.0).stop_gradient
    assert not (x * 2.0).stop_gradient


@ok("0-d arrays and numpy ints as int arguments")
def _():
    _same(dense.gather(A, np.array([1]), np.array(1)), np.take(A, [1], axis=1))
    _same(dense.sum(A, axis=np.int32(0)), A.sum(axis=0))
    _same(sparse.softmax(_coo(), np.array(-1)).to_dense(),
          sparse.softmax(_coo(), -1).to_dense().numpy())


@ok("sparse sum of uint8 is numpy's value on to_dense() as int64")
def _():
    x = sparse.sparse_coo_tensor([[0, 1, 1]], np.array([250, 250, 250], np.uint8), [2])
    want = x.to_dense().numpy().sum(dtype=np.int64)     # 250 + (250 + 250) % 256 = 494
    assert want == 494
    _same(sparse.sum(x), np.asarray(want).reshape(sparse.sum(x).shape))
    _same(sparse.sum(x.coalesce()), np.asarray(want).reshape(sparse.sum(x).shape))


# ---------------------------------------------------------------- generic sweep
HOSTILE = [("None", lambda: None), ("str", lambda: "abc"), ("object", lambda: object()),
           ("ragged", lambda: [[1, 2], [3]]), ("nan", lambda: float("nan")),
           ("2**70", lambda: 2 ** 70),
           ("bool", lambda: True), ("meta", lambda: MetaTensor((2, 3), "float64")),
           ("object array", lambda: np.array([None, 1], dtype=object)),
           ("uint64 array", lambda: np.array([2 ** 64 - 1], np.uint64)),
           ("huge list", lambda: [2 ** 62, 2 ** 62])]
PLAIN = {"IntArray": lambda: [2, 3], "int": lambda: 0, "float": lambda: 1.0,
         "bool": lambda: False, "str": lambda: "C", "Scalar": lambda: 1.0,
         "DataType": lambda: "float64"}


def _plain_tensor(namespace):
    if namespace == "sparse":
        return sparse.sparse_coo_tensor(IDX, VAL, [2, 3])
    return A.copy()


def _plain(spec, arg):
    if arg.type == "Tensor[]":
        return [_plain_tensor(spec.namespace), _plain_tensor(spec.namespace)]
    if arg.is_tensor:
        return _plain_tensor(spec.namespace)
    return PLAIN.get(arg.type, lambda: None)()


def _arrays(values):
    out = []
    for v in values:
        if isinstance(v, np.ndarray) and v.dtype != object:
            out.append(v)
        elif isinstance(v, list):
            out += _arrays(v)
    return out


def _sweep_probe(spec, k, value):
    def run():
        args = [_plain(spec, a) for a in spec.args]
        args[k] = value()
        fn = getattr(dense if spec.namespace == "dense" else sparse, spec.name)
        out = fn(*args)
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            if hasattr(o, "layout"):
                _unaliased(o, *_arrays(args))
    return run


def _public_specs():
    from kernels.core import dispatch
    specs = []
    for ns, module in (("dense", dense), ("sparse", sparse)):
        from importlib import import_module
        api = import_module(f"{ns}._generated_api")
        specs += [dispatch.get_op(ns, name) for name in api.__all__ if hasattr(module, name)]
    return specs


for _spec in _public_specs():
    for _k, _arg in enumerate(_spec.args):
        for _label, _value in HOSTILE:
            PROBES.append(Probe(f"sweep {_spec.qualname}({_arg.name}={_label})",
                                _sweep_probe(_spec, _k, _value), _spec.name, (T, V, I),
                                may_pass=True))


# ---------------------------------------------------------------- the harness's own check
def _crash():
    import ctypes
    ctypes.string_at(0)


def _hang():
    import time
    time.sleep(3600)


if os.environ.get("HOSTILE_PROBES_SELF_TEST"):      # tests/test_probes.py checks the harness
    PROBES[:] = [Probe("crash", _crash), Probe("hang", _hang), Probe("fine", lambda: None),
                 Probe("wrong", lambda: _same(_t([1.0]), np.array([2.0]))),
                 Probe("unnamed", lambda: dense.to_tensor([1.0]).no_such, "x", (T, V, I))]


# ---------------------------------------------------------------- worker
def judge(probe):
    """'' if ``probe`` behaved, else what went wrong (a silent wrong answer, an
    unexpected success or error, an error of the wrong type or naming no op)."""
    try:
        probe.fn()
    except AssertionError as exc:
        return f"wrong answer or aliasing: {exc}"[:500]
    except Exception as exc:        # judged below; a crash or hang is the parent's to see
        said = f"{type(exc).__name__}: {exc}"[:500]
        if probe.op is None:
            return f"raised {said}"
        if not isinstance(exc, probe.errors):
            return f"expected {'/'.join(e.__name__ for e in probe.errors)}, got {said}"
        if probe.op not in str(exc):
            return f"the message does not name '{probe.op}': {said}"
        return ""
    return "" if probe.op is None or probe.may_pass else f"no error (expected one naming " \
        f"'{probe.op}')"


def main():
    cap = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        k = int(line)
        print(json.dumps({"k": k, "failure": judge(PROBES[k])}), flush=True)


if __name__ == "__main__":
    main()
