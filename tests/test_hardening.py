"""Regression tests of the hardening issue (runtime items 1-8 and 15-19).

Each test names its item.  The code generator's items (9-14) are in
tests/test_codegen_hardening.py, the global-tensor ones (20-22) in
tests/test_hardening_mpi.py, and the hostile-input probes in tests/test_probes.py.
"""
import copy
import gc
import os
import pickle
import re
import subprocess
import sys
import threading
import weakref
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse

import dense
import sparse
from kernels import MetaTensor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    """Run ``code`` in a fresh interpreter with extra environment variables."""
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, cwd=ROOT, timeout=120)


# ---------------------------------------------------------------- 1. crows that wrap
@pytest.mark.parametrize("dtype,big", [(np.int64, 2 ** 63 - 1), (np.int32, 2 ** 31 - 1)])
def test_item1_crows_whose_difference_wraps_are_rejected(dtype, big):
    crows = np.array([0, big, -big - 1, -1, 3], dtype)
    with pytest.raises(ValueError, match="sparse_csr_tensor: crows decreases"):
        sparse.sparse_csr_tensor(crows, [0, 1, 2], [1.0, 2.0, 3.0], [4, 4])


def test_item1_batch_ends_beyond_nnz_cannot_sum_to_nnz_by_wrapping():
    crows = np.array([0, 2 ** 62, 0, 2 ** 62, 0, 2 ** 62], np.int64)  # 4 * 2**62 wraps to 0
    with pytest.raises(ValueError, match="more than the 0 entries"):
        sparse.sparse_csr_tensor(crows, np.zeros(0, np.int64), np.zeros(0), [3, 1, 4])
    with pytest.raises(ValueError, match="start at 0"):
        sparse.sparse_csr_tensor([1, 1, 3], [0, 1, 2], [1.0, 2.0, 3.0], [2, 4])


# ---------------------------------------------------------------- 2. aliasing
def _mutate(*arrays):
    for a in arrays:
        a.flags.writeable = True
        a[...] = 100 if a.dtype.kind != "b" else True


DENSE_CALLS = [
    ("reshape", lambda a, i: dense.reshape(a, [3, 2])),
    ("sum", lambda a, i: dense.sum(a, axis=[0])),
    ("expand", lambda a, i: dense.expand(a[:1], [4, 3])),
    ("repeat", lambda a, i: dense.repeat(a, [2, 1])),
    ("gather", lambda a, i: dense.gather(a, i, 1)),
    ("batch_gather", lambda a, i: dense.batch_gather(a, np.stack([i, i]))),
    ("Tensor", lambda a, i: dense.Tensor(a)),
    ("to_tensor", lambda a, i: dense.to_tensor(a)),
    ("to_sparse_coo", lambda a, i: dense.Tensor(a).to_sparse_coo(2)),
]


@pytest.mark.parametrize("name,call", DENSE_CALLS, ids=[c[0] for c in DENSE_CALLS])
def test_item2_no_output_changes_when_the_inputs_change(name, call):
    a = np.arange(6.0).reshape(2, 3)
    i = np.array([2, 0])
    out = call(a, i)
    before = out.numpy() if out.layout == "dense" else out.to_dense().numpy()
    _mutate(a, i)
    after = out.numpy() if out.layout == "dense" else out.to_dense().numpy()
    np.testing.assert_array_equal(after, before)


def test_item2_sparse_constructors_and_from_scipy_own_their_buffers():
    idx, val = np.array([[0, 1], [1, 0]]), np.array([1.0, 2.0])
    coo = sparse.sparse_coo_tensor(idx, val, [2, 2])
    crows, cols = np.array([0, 1, 2]), np.array([1, 0])
    csr = sparse.sparse_csr_tensor(crows, cols, val, [2, 2])
    m = scipy.sparse.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    from_m = sparse.from_scipy(m)
    # a tensor made from a reshaped caller array, then made sparse
    via = sparse.sparse_csr_tensor(dense.reshape(crows, [3]), cols, val, [2, 2])
    _mutate(idx, val, crows, cols, m.data, m.indices, m.indptr)
    want = np.array([[0.0, 1.0], [2.0, 0.0]])
    for t in (coo, csr, from_m, via):
        np.testing.assert_array_equal(t.to_dense().numpy(), want)


def test_item2_locked_tensor_buffers_are_shared_not_copied():
    t = dense.to_tensor(np.arange(4.0))
    view = np.asarray(t)
    u = dense.Tensor(view)
    assert np.shares_memory(np.asarray(u), view)
    with pytest.raises(ValueError):
        view.flags.writeable = True


# ---------------------------------------------------------------- 3. backward state
@pytest.mark.parametrize("op", ["gather", "batch_gather"])
def test_item3_backward_reads_what_the_forward_saw(op):
    x = dense.to_tensor(np.arange(4.0), stop_gradient=False)
    idx = np.array([0, 0, 1])
    out = dense.gather(x, idx, 0) if op == "gather" else dense.batch_gather(x, idx)
    idx[:] = 3
    dense.sum(out).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 1.0, 0.0, 0.0])


# ---------------------------------------------------------------- 4. threads
def test_item4_concurrent_backward_passes_lose_no_gradient():
    x = dense.to_tensor(np.ones(3), stop_gradient=False)
    private = [dense.to_tensor(np.ones(3), stop_gradient=False) for _ in range(4)]
    barrier = threading.Barrier(4)

    def work(k):
        barrier.wait()
        for _ in range(25):
            dense.sum(dense.expand(dense.reshape(x, [1, 3]), [2, 3])).backward()
            dense.sum(private[k]).backward()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 200.0))
    for p in private:
        np.testing.assert_array_equal(p.grad.numpy(), np.full(3, 25.0))


# ---------------------------------------------------------------- 5. freed graphs
def test_item5_a_held_loss_keeps_no_tensor_after_backward():
    x = dense.to_tensor(np.ones((2, 1)), stop_gradient=False)
    y = dense.expand(x, [2, 1000])
    loss = dense.sum(y)
    ref = weakref.ref(y)
    del y
    assert ref() is not None          # the graph holds it until backward
    loss.backward()
    gc.collect()
    assert ref() is None
    assert loss._grad_fn.inputs == () and loss._grad_fn.saved is None
    with pytest.raises(RuntimeError, match="freed"):
        loss.backward()


# ---------------------------------------------------------------- 6. float32 accuracy
@pytest.mark.parametrize("shape,target", [((2, 1), (2, 2 ** 22)), ((1, 2), (2 ** 21, 2)),
                                          ((1, 1, 3), (2 ** 10, 2 ** 10, 3))])
def test_item6_float32_expand_grad_is_accurate(shape, target):
    x = dense.to_tensor(np.ones(shape, np.float32), stop_gradient=False)
    g = np.full(target, 0.1, np.float32)
    dense.expand(x, list(target)).backward(dense.to_tensor(g))
    n = g.size // x.size
    want = n * np.float64(np.float32(0.1))
    err = np.abs(x.grad.numpy().astype(np.float64) - want).max() / want
    assert x.grad.dtype == np.float32
    assert err <= 4 * np.finfo(np.float32).eps * np.log2(n), err


# ---------------------------------------------------------------- 7. int and bool
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.bool_])
def test_item7_only_float_and_complex_tensors_take_gradients(dtype):
    a = np.ones(3, dtype)
    with pytest.raises(TypeError, match=f"stop_gradient.*{np.dtype(dtype).name}"):
        dense.to_tensor(a, stop_gradient=False)
    t = dense.to_tensor(a)
    with pytest.raises(TypeError, match="stop_gradient"):
        t.stop_gradient = False
    assert t.stop_gradient
    with pytest.raises(TypeError, match="stop_gradient"):
        sparse.sparse_coo_tensor([[0, 1]], a[:2], [3], stop_gradient=False)
    for ok in (np.float16, np.complex64):
        assert not dense.to_tensor(np.ones(2, ok), stop_gradient=False).stop_gradient


def test_item7_uint8_sums_to_a_dtype_every_op_accepts():
    x = dense.to_tensor(np.full((4, 300), 255, np.uint8))
    s = dense.sum(dense.gather(x, np.array([0, 1]), 0), axis=[1])
    assert s.dtype == np.int64 and s.numpy().tolist() == [255 * 300] * 2
    np.testing.assert_array_equal(dense.expand(dense.reshape(s, [2, 1]), [2, 3]).numpy(),
                                  np.full((2, 3), 255 * 300))


# ---------------------------------------------------------------- 8. sparse grad_tensor
def test_item8_a_sparse_grad_tensor_with_more_sparse_dims_is_looked_up_not_densified():
    n = 100_000
    vals = np.zeros((1, n))
    x = sparse.sparse_coo_tensor([[3]], vals, [n, n], stop_gradient=False)   # hybrid: [n] x [n]
    g = sparse.sparse_coo_tensor([[3, 3, 5], [7, 7, 1]], [2.0, 3.0, 9.0], [n, n])
    x.backward(g)                      # densifying g would need 80 GB
    got = x.grad.values().numpy()
    assert got.shape == (1, n) and got[0, 7] == 5.0 and np.count_nonzero(got) == 1


# ---------------------------------------------------------------- 15. sizes
SIZE_CASES = [
    ("expand", lambda: dense.expand(dense.to_tensor(np.ones(1)), [2 ** 62])),
    ("expand", lambda: dense.expand(dense.to_tensor(np.ones(1)), [10 ** 12])),
    ("repeat", lambda: dense.repeat(dense.to_tensor(np.ones(1)), [5 * 10 ** 11])),
    ("gather", lambda: dense.gather(dense.to_tensor(np.ones((1, 10 ** 6))),
                                    np.zeros(10 ** 6, np.int64), 0)),
    ("to_dense", lambda: sparse.sparse_coo_tensor([[0]], [1.0], [10 ** 12]).to_dense()),
    ("expand", lambda: dense.expand.infer_meta(MetaTensor((1,), "float64"), [10 ** 12])),
    # every op's outputs, checked by dispatch, not by each shape rule
    ("add", lambda: dense.to_tensor(np.ones((2 ** 20, 1))) + np.ones((1, 2 ** 20))),
    ("less_than", lambda: dense.to_tensor(np.ones((2 ** 20, 1))) < np.ones((1, 2 ** 20))),
    ("where", lambda: dense.where(dense.to_tensor(np.ones((2 ** 20, 1), bool)),
                                  np.ones((2 ** 20, 1)), np.ones((1, 2 ** 20)))),
    ("matmul", lambda: dense.matmul(dense.to_tensor(np.ones((2 ** 20, 1))),
                                    dense.to_tensor(np.ones((1, 2 ** 20))))),
    ("index_select", lambda: dense.index_select(dense.to_tensor(np.ones((2, 2 * 10 ** 5))),
                                                np.zeros(2 * 10 ** 5, np.int64))),
    ("add", lambda: sparse.sparse_coo_tensor([[0], [0]], [1.0], [2 ** 20, 1])
     + dense.to_tensor(np.ones((1, 2 ** 20)))),
    ("to_sparse_csr", lambda: sparse.sparse_coo_tensor([[0], [1]], [1.0],
                                                       [2 ** 62, 4]).to_sparse_csr()),
]


@pytest.mark.parametrize("op,call", SIZE_CASES, ids=[f"{c[0]}{k}" for k, c in enumerate(SIZE_CASES)])
def test_item15_huge_outputs_raise_before_allocating(op, call):
    with pytest.raises(ValueError, match=rf"^{op}: the output of shape \[.*bytes"):
        call()


def test_item15_dims_beyond_int64_are_rejected():
    with pytest.raises(ValueError, match="sparse_coo_tensor: shape .* int64"):
        sparse.sparse_coo_tensor([[0], [1]], [1.0], [2 ** 70, 4])
    with pytest.raises(ValueError, match="reshape"):
        dense.reshape(dense.to_tensor(np.ones(1)), [2 ** 64])
    huge = sparse.sparse_coo_tensor([[0, 5], [1, 3]], [1.0, 2.0], [2 ** 62, 4])
    for n in (2, 3):                         # 2**63 and more rows: refused, not wrapped
        with pytest.raises(ValueError, match=r"concat: the output shape \[\d+, 4\] has a dim "
                                             r"of 2\*\*63 or more"):
            sparse.concat([huge] * n)


def test_sparse_ops_on_dims_near_int64_touch_only_the_entries():
    """A [2**62, 4] COO with two entries: arithmetic and index_select work on the
    entries alone (no table or broadcast object of the dims' size), as scipy would."""
    s = sparse.sparse_coo_tensor([[0, 5], [1, 3]], [1.0, 2.0], [2 ** 62, 4])
    for got, want in [(s + s, [2.0, 4.0]), (s * s, [1.0, 4.0])]:
        assert got.shape == [2 ** 62, 4]
        assert got.indices().numpy().tolist() == [[0, 5], [1, 3]]
        assert got.values().numpy().tolist() == want
    for got, want in [(s * 2.0, [2.0, 4.0]), (s / 2.0, [0.5, 1.0]),
                      (s * dense.to_tensor(np.array([[1.0, 2.0, 3.0, 4.0]])), [2.0, 8.0])]:
        assert got.shape == [2 ** 62, 4] and got.values().numpy().tolist() == want
    sel = sparse.index_select(s, dense.to_tensor(np.array([5, 0, 5])), 0)
    assert sel.shape == [3, 4] and sel.indices().numpy().tolist() == [[1, 0, 2], [1, 3, 3]]
    tall = sparse.sparse_coo_tensor([[0, 5], [1, 2]], [1.0, 2.0], [2 ** 40, 4])
    # 2**40 rows or inner indices: renumbered to the two that hold entries, not walked
    gram = sparse.matmul(sparse.transpose(tall, [1, 0]), tall)
    assert gram.shape == [4, 4]
    assert sorted(zip(*gram.indices().numpy().tolist(), gram.values().numpy().tolist())) == \
        [(1, 1, 1.0), (2, 2, 4.0)]
    outer = sparse.matmul(tall, sparse.transpose(tall, [1, 0]))
    assert outer.shape == [2 ** 40, 2 ** 40]
    assert sorted(zip(*outer.indices().numpy().tolist(), outer.values().numpy().tolist())) == \
        [(0, 0, 1.0), (5, 5, 4.0)]
    c = sparse.sparse_coo_tensor([[0, 1], [5, 3]], [1.0, 2.0], [2, 2 ** 62]).to_sparse_csr()
    got = sparse.index_select(c, dense.to_tensor(np.array([5, 3, 5])), 1).to_dense().numpy()
    np.testing.assert_array_equal(got, [[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]])


def test_outputs_beyond_numpys_64_dims_are_refused_by_name():
    one = dense.to_tensor(np.ones(1))
    calls = {"reshape": lambda: dense.reshape(one, [1] * 65),
             "expand": lambda: dense.expand(one, [1] * 70),
             "unsqueeze": lambda: dense.unsqueeze(dense.reshape(one, [1] * 64), 0),
             "zeros": lambda: dense.zeros([1] * 100)}
    for op, call in calls.items():
        with pytest.raises(ValueError, match=rf"^{op}: the output would have \d+ dims; a "
                                             "tensor has at most 64"):
            call()
    assert dense.reshape(one, [1] * 64).shape == [1] * 64
    with pytest.raises(ValueError, match="reshape: the output would have 65 dims"):
        dense.reshape.infer_meta(one, [1] * 65)


def test_item15_csr_reshape_memory_is_the_new_crows_and_one_count_per_row():
    import tracemalloc
    n = 1 << 22
    x = sparse.sparse_csr_tensor(np.array([0, 3]), np.array([0, 5, n - 1]), np.ones(3), [1, n])
    tracemalloc.start()
    try:
        y = sparse.reshape(x, [n, 1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    crows = y.crows().numpy()
    assert crows[[0, 1, 5, 6, n - 1, n]].tolist() == [0, 1, 1, 2, 2, 3]
    assert peak <= 2.5 * crows.nbytes, peak / crows.nbytes     # was 4x: arange, bounds, grid


# ---------------------------------------------------------------- 16. byte order
def test_item16_big_endian_inputs_are_converted():
    vals = np.array([1.0, 2.0], ">f4")
    idx = np.array([[0, 2]], ">i8")
    s = sparse.sparse_coo_tensor(idx, vals, [3])
    assert s.dtype == np.float32 and s.indices().dtype == np.int64
    np.testing.assert_array_equal(s.to_dense().numpy(), [1.0, 0.0, 2.0])
    t = dense.to_tensor(vals)
    assert t.dtype == np.float32 and t.dtype.isnative
    got = dense.gather(np.array([1.0, 2.0, 0.0], ">f8"), np.array([2, 1], ">i8"))
    assert got.dtype == np.float64 and got.numpy().tolist() == [0.0, 2.0]
    np.testing.assert_array_equal(dense.reshape(np.arange(4.0).astype(">f8"), [2, 2]).numpy(),
                                  np.arange(4.0).reshape(2, 2))


# ---------------------------------------------------------------- 17. messages
def test_item17_constructor_errors_name_their_op():
    with pytest.raises(TypeError, match="^sparse_coo_tensor: .*uint16"):
        sparse.sparse_coo_tensor([[0]], np.ones(1, np.uint16), [2])
    with pytest.raises(TypeError, match="^sparse_csr_tensor: "):
        sparse.sparse_csr_tensor([0, 1], [0], [1.0], [1, 1], dtype="nope")
    with pytest.raises(TypeError, match="^from_scipy: .*uint16"):
        sparse.from_scipy(scipy.sparse.coo_array(np.ones((2, 2), np.uint16)))
    with pytest.raises(IndexError, match="18446744073709551615"):
        sparse.sparse_coo_tensor(np.array([[2 ** 64 - 1]], np.uint64), [1.0], [4])
    with pytest.raises(ValueError, match="^sparse_coo_tensor: indices"):
        sparse.sparse_coo_tensor([[0, 1], [2]], [1.0, 2.0], [3, 3])
    with pytest.raises(ValueError, match="^sparse_coo_tensor: values"):
        sparse.sparse_coo_tensor([[0, 1]], [[1.0], [2.0, 3.0]], [3])


def test_item17_a_metatensor_is_not_data():
    with pytest.raises(TypeError, match="^reshape: argument 'x' is a MetaTensor"):
        dense.reshape(MetaTensor((2, 3), "float64"), [3, 2])


def test_item17_a_non_leaf_pickles_as_a_leaf_copy():
    x = dense.to_tensor(np.arange(3.0), stop_gradient=False)
    y = dense.expand(dense.reshape(x, [1, 3]), [2, 3])
    z = pickle.loads(pickle.dumps(y))
    assert z.is_leaf and not z.stop_gradient
    np.testing.assert_array_equal(z.numpy(), y.numpy())


@pytest.mark.parametrize("var,value,ok", [
    ("PHISPARSE_POOL_BYTES", "4G", True), ("PHISPARSE_POOL_BYTES", "64MiB", True),
    ("PHISPARSE_NUM_THREADS", "auto", True), ("PHISPARSE_NUM_THREADS", "3", True),
    ("PHISPARSE_POOL_BYTES", "lots", False), ("PHISPARSE_NUM_THREADS", "0", False),
    ("PHISPARSE_NUM_THREADS", "-2", False)])
def test_item17_environment_knobs_are_checked_with_a_clear_message(var, value, ok):
    res = _python("import numpy as np, dense\n"
                  "x = dense.to_tensor(np.ones((1, 1 << 22)))\n"
                  "print(float(dense.sum(dense.expand(x, [8, 1 << 22])).numpy()))", **{var: value})
    if ok:
        assert res.returncode == 0 and res.stdout.strip() == str(8.0 * (1 << 22)), res.stderr
    else:
        assert res.returncode != 0
        assert f"{var}={value!r} is not valid" in res.stderr and "int()" not in res.stderr


# ---------------------------------------------------------------- 18. semantics
def test_item18_sum_over_an_empty_axis_list_sums_everything():
    a = np.arange(6.0).reshape(2, 3)
    assert dense.sum(dense.to_tensor(a), axis=[]).numpy() == a.sum()


def test_item18_truth_of_a_tensor_is_numpys():
    assert bool(dense.to_tensor([3.0])) and not bool(dense.to_tensor(0))
    for data in ([1.0, 2.0], np.zeros((0,))):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(dense.to_tensor(data))


@pytest.mark.parametrize("value", ["False", 0, None, 1.0])
def test_item18_stop_gradient_takes_only_bools(value):
    t = dense.to_tensor([1.0])
    with pytest.raises(TypeError, match="stop_gradient must be a bool"):
        t.stop_gradient = value
    with pytest.raises(TypeError, match="stop_gradient must be a bool"):
        dense.to_tensor([1.0], stop_gradient=value)


def test_item18_a_complex_grad_tensor_on_a_real_output_raises():
    x = dense.to_tensor(np.ones(2), stop_gradient=False)
    with pytest.raises(TypeError, match="complex128"):
        dense.reshape(x, [2]).backward(dense.to_tensor(np.ones(2) * 1j))
    s = sparse.sparse_coo_tensor([[0]], [1.0], [2], stop_gradient=False)
    with pytest.raises(TypeError, match="imaginary"):
        s.backward(dense.to_tensor(np.ones(2) * 1j))


def test_item18_asarray_copy_false_raises_where_a_copy_is_needed():
    t = dense.to_tensor(np.ones(2))
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float32, copy=False)
    assert np.shares_memory(np.asarray(t, copy=False), np.asarray(t))


def test_item18_from_scipy_checks_a_stale_canonical_flag():
    m = scipy.sparse.coo_array(([1.0, 2.0], ([0, 1], [0, 1])), shape=(2, 2))
    m.sum_duplicates()
    assert sparse.from_scipy(m).is_coalesced()
    m.coords[0][:] = [1, 0]            # edited after scipy set has_canonical_format
    assert m.has_canonical_format and not sparse.from_scipy(m).is_coalesced()
    m.coords[0][:] = [1, 1]
    m.coords[1][:] = [1, 1]            # duplicates
    assert not sparse.from_scipy(m).is_coalesced()


def test_item18_tensor_leaves_the_callers_flags_alone():
    a = np.ones(3)
    dense.Tensor(a)
    assert a.flags.writeable
    a.flags.writeable = False
    t = dense.Tensor(a)
    a.flags.writeable = True
    a[0] = 5.0
    assert t.numpy()[0] == 1.0


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "copy"])
def test_item18_copies_stay_immutable(how):
    x = dense.to_tensor(np.arange(3.0))
    y = {"pickle": lambda t: pickle.loads(pickle.dumps(t)), "deepcopy": copy.deepcopy,
         "copy": copy.copy}[how](x)
    a = np.asarray(y)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a.flags.writeable = True
    s = sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3])
    s2 = pickle.loads(pickle.dumps(s))
    np.testing.assert_array_equal(s2.to_dense().numpy(), [1.0, 2.0, 0.0])
    with pytest.raises(ValueError):
        np.asarray(s2.values()).flags.writeable = True


def test_item18_a_pooled_output_cannot_be_made_writable():
    from kernels.funcs import pool
    x = dense.to_tensor(np.ones((1, 1 << 20)))
    y = dense.expand(x, [64, 1 << 20])               # 512 MiB: a pooled block
    assert pool.pooled_bytes()[0] > 0
    a = np.asarray(y)
    with pytest.raises(ValueError):
        a.flags.writeable = True
    del y, a


# ---------------------------------------------------------------- 19. threads and pools
def test_item19_one_bounded_thread_pool():
    res = _python("import threading, numpy as np, dense\n"
                  "x = dense.to_tensor(np.ones((1, 1 << 16)))\n"
                  "for n in (64, 96, 128, 200, 256, 400, 512):\n"
                  "    dense.expand(x, [n, 1 << 16])\n"
                  "print(threading.active_count())", PHISPARSE_NUM_THREADS="32")
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) <= 32


def test_item19_concurrent_backward_passes_restore_blas_threads():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()]
    x = dense.to_tensor(np.ones((64, 1, 256)), stop_gradient=False)

    def work():
        for _ in range(5):
            dense.sum(dense.expand(x, [64, 64, 256])).backward()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [i["num_threads"] for i in threadpoolctl.threadpool_info()] == before
    np.testing.assert_array_equal(x.grad.numpy(), np.full((64, 1, 256), 20 * 64.0))


# ---------------------------------------------------------------- docstrings
def test_docstring_examples_of_the_hardening_helpers_run():
    import doctest

    import kernels.core.env
    import kernels.core.owned
    import kernels.core.size
    import kernels.sparse.data
    for module in (kernels.core.owned, kernels.core.env, kernels.core.size,
                   kernels.sparse.data):
        res = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0 and res.attempted > 0, module.__name__
    os.environ.pop("PHISPARSE_EXAMPLE", None)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")     # np.matrix's own
def test_ndarray_subclasses_count_as_their_plain_data():
    """np.matrix keeps no matrix semantics inside a tensor (its * is a product, its
    reductions stay 2-D); a masked array gives its data, as np.asarray does."""
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    x = dense.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    dense.sum(x * m).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.asarray(m))
    assert dense.reshape(m, [4]).shape == [4] and dense.unsqueeze(m, [0]).shape == [1, 2, 2]
    np.testing.assert_array_equal(dense.sum(m, axis=0).numpy(), [4.0, 6.0])
    assert type(dense.to_tensor(m).numpy()) is np.ndarray
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[1, 0, 0])
    assert dense.sum(masked).item() == np.asarray(masked).sum() == 6.0


def test_with_values_wants_one_value_per_stored_entry():
    x = sparse.sparse_coo_tensor([[0, 1, 2]], [1.0, 2.0, 3.0], [4])
    for n in (10, 2):
        with pytest.raises(ValueError, match=rf"^with_values: values has {n} rows .* nnz = 3"):
            sparse.with_values(x, np.arange(float(n)))
    np.testing.assert_array_equal(sparse.with_values(x, np.arange(3.0)).to_dense().numpy(),
                                  [0.0, 1.0, 2.0, 0.0])


@pytest.mark.parametrize("index_dtype", ["int8", "int16", "uint8"])
def test_narrow_index_dtypes_widen_where_a_result_needs_it(index_dtype):
    """cast may make int8/int16/uint8 indices; an op whose result dims they cannot hold
    widens to int32 instead of wrapping (checked against numpy on the dense form)."""
    rng = np.random.default_rng(3)
    a = np.zeros((3, 120))
    a[rng.integers(0, 3, 40), rng.integers(0, 120, 40)] = rng.random(40)
    a[2, 119] = 5.0
    s = sparse.cast(dense.to_tensor(a).to_sparse_coo(2), index_dtype, None)
    cases = [(sparse.reshape(s, [360]), a.reshape(360)),
             (sparse.reshape(s, [40, 9]), a.reshape(40, 9)),
             (sparse.concat([s] * 3, 1), np.concatenate([a] * 3, 1)),
             (sparse.concat([s] * 50, 0), np.concatenate([a] * 50, 0)),
             (sparse.stack([s] * 50, 0), np.stack([a] * 50, 0)),
             (sparse.index_select(s, dense.to_tensor(np.arange(300) % 3), 0), a[np.arange(300) % 3])]
    c = s.to_sparse_csr()
    cases += [(sparse.concat([c] * 50, 0), np.concatenate([a] * 50, 0)),
              (sparse.reshape(c, [40, 9]), a.reshape(40, 9)),
              (sparse.index_select(c, dense.to_tensor(np.arange(300) % 3), 0), a[np.arange(300) % 3])]
    for got, want in cases:
        np.testing.assert_array_equal(got.to_dense().numpy(), want)


# ---------------------------------------------------------------- hostile-probe follow-ups
# H1-H6: the findings of the hostile-input probe (tests/hostile_probes.py holds their probes).
@pytest.mark.parametrize("other", [[1.0, 5.0, 3.0], (1.0, 5.0, 3.0), [[1], [5]]])
def test_h1_list_and_tuple_operands_are_arrays_as_in_numpy(other):
    a = np.array([1.0, 2.0, 3.0])
    t = dense.to_tensor(a)
    for got, want in [(t == other, a == other), (t != other, a != other), (t < other, a < other),
                      (t >= other, a >= other), (t + other, a + other), (other - t, other - a),
                      (t * other, a * other), (other / t, other / a), (t ** other, a ** other)]:
        assert isinstance(got, dense.Tensor) and got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    assert (t @ [1.0, 2.0, 3.0]).numpy() == 14.0 and ([1.0, 2.0, 3.0] @ t).numpy() == 14.0
    with pytest.raises(ValueError, match="^equal: the list operand of == cannot become an array"):
        t == [[1], [2, 3]]


def test_h1_sparse_operands_get_arrays_for_lists_too():
    s = sparse.sparse_coo_tensor([[0, 2]], [1.0, 3.0], [3])
    np.testing.assert_array_equal((s * [2.0, 2.0, 4.0]).to_dense().numpy(), [2.0, 0.0, 12.0])
    np.testing.assert_array_equal((s + [1.0, 1.0, 1.0]).numpy(), [2.0, 1.0, 4.0])


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_h1_comparisons_with_a_sparse_tensor_raise_naming_the_operator(layout):
    d = dense.to_tensor(np.eye(2))
    s = sparse.sparse_coo_tensor([[0, 1], [0, 1]], [1.0, 1.0], [2, 2])
    s = s if layout == "coo" else s.to_sparse_csr()
    cases = [("==", lambda: d == s), ("==", lambda: s == d), ("==", lambda: s == s),
             ("!=", lambda: s != d), ("!=", lambda: d != s), ("<", lambda: d < s),
             (">=", lambda: s >= 0.5), ("==", lambda: np.eye(2) == s), ("==", lambda: s == [1.0])]
    for symbol, call in cases:
        with pytest.raises(TypeError, match=rf"^{re.escape(symbol)}: comparisons with a sparse"):
            call()
    assert (s == None) is False and (s != "a") is True        # noqa: E711  (Python decides)
    assert {s: 1}[s] == 1                                       # hashable by identity


def test_h2_empty_outputs_exist_exactly_when_numpy_can_make_them():
    for dims, dtype in [([0, 2 ** 59], "float64"), ([0, 2 ** 62], "int8"), ([3, 0, 2 ** 59], "int8")]:
        want = np.zeros(dims, dtype)                            # numpy makes these
        for got in (dense.zeros(dims, dtype=dtype), dense.full(dims, 1, dtype=dtype),
                    dense.to_tensor(np.empty(dims, dtype)),
                    dense.expand(dense.zeros([1] * len(dims), dtype=dtype), dims)):
            assert got.shape == list(want.shape) and got.dtype == want.dtype
            assert got.numpy().shape == want.shape
    e = dense.zeros([0, 4])
    assert dense.reshape(e, [0, 2 ** 59]).shape == [0, 2 ** 59]
    with pytest.raises(ValueError):
        np.zeros((0, 2 ** 62))                                  # numpy refuses these
    cases = [("zeros", lambda: dense.zeros([0, 2 ** 62])),
             ("full", lambda: dense.full([0, 2 ** 62], 1)),
             ("ones", lambda: dense.ones([2 ** 62, 0, 4], dtype="int8")),
             ("reshape", lambda: dense.reshape(e, [0, 2 ** 62])),
             ("expand", lambda: dense.expand(dense.zeros([0, 1]), [0, 2 ** 62])),
             ("repeat", lambda: dense.repeat(dense.zeros([0, 1]), [1, 2 ** 62])),
             ("cast", lambda: dense.cast(dense.zeros([0, 2 ** 59], "float32"), "complex128")),
             ("to_tensor", lambda: dense.to_tensor(np.empty((0, 2 ** 59)), dtype="complex128")),
             ("to_dense", lambda: sparse.sparse_coo_tensor(np.zeros((2, 0), int), np.zeros(0),
                                                           [0, 2 ** 62]).to_dense())]
    for op, call in cases:
        with pytest.raises(ValueError, match=rf"^{op}: .* cannot exist even empty"):
            call()
    with pytest.raises(ValueError, match=r"^zeros: the output of shape .* bytes"):
        dense.zeros([2 ** 40, 2 ** 40])                         # non-empty: the memory check


def test_h3_a_float_slice_bound_raises_a_named_type_error():
    t = dense.to_tensor(np.arange(5.0))
    for key in (slice(1.0, 2), slice(None, np.float64(3)), slice(0, 4, 0.5),
                slice(dense.to_tensor(1.0), 3)):
        with pytest.raises(TypeError, match="^getitem: a slice's (start|stop|step) must be an int"):
            t[key]
    np.testing.assert_array_equal(t[np.int64(1):dense.to_tensor(4):True].numpy(), [1.0, 2.0, 3.0])


def test_h3_dlpack_checks_its_arguments_by_name():
    t = dense.to_tensor(np.arange(3.0))
    with pytest.raises(ValueError, match="^__dlpack__: stream must be None for a CPU tensor"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="^__dlpack__: max_version must be None or a tuple"):
        t.__dlpack__(max_version="1.0")
    with pytest.raises(TypeError, match="^__dlpack__: copy must be"):
        t.__dlpack__(copy="yes")
    with pytest.raises(BufferError, match="^__dlpack__: "):
        t.__dlpack__(dl_device=(2, 0), max_version=(1, 0))
    np.testing.assert_array_equal(np.from_dlpack(t), [0.0, 1.0, 2.0])


def test_h3_one_no_grad_object_reenters_nests_and_serves_threads():
    x = dense.to_tensor(np.ones(2), stop_gradient=False)
    quiet = dense.no_grad()
    for _ in range(2):                                           # re-entered
        with quiet:
            with quiet:                                          # nested in itself
                assert (x * 2).stop_gradient
            assert (x * 2).stop_gradient
        assert not (x * 2).stop_gradient

    @dense.no_grad
    def bare():
        return (x * 2).stop_gradient

    @dense.no_grad()
    def called():
        return (x * 2).stop_gradient

    assert bare() and called() and not (x * 2).stop_gradient
    seen, barrier = [], threading.Barrier(4)

    def work():
        barrier.wait()
        for _ in range(200):
            with quiet:
                seen.append((x * 2).stop_gradient)
            seen.append(not (x * 2).stop_gradient)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(seen) == 1600 and all(seen)
    with pytest.raises(TypeError, match="^no_grad: "):
        dense.no_grad(3)


@pytest.mark.parametrize("setter,bad,exc", [
    ("set_num_threads", "abc", TypeError), ("set_num_threads", 2.5, TypeError),
    ("set_num_threads", True, TypeError), ("set_num_threads", 0, ValueError),
    ("set_pool_bytes", "1G", TypeError), ("set_pool_bytes", -1, ValueError)])
def test_h3_setters_check_their_argument_by_name(setter, bad, exc):
    fn = getattr(dense, setter)
    before = fn(None)
    fn(before)
    with pytest.raises(exc, match=rf"^{setter}: n must be"):
        fn(bad)
    assert fn(None) == before                                    # nothing changed


@pytest.mark.parametrize("setter,var,bad,good", [
    ("set_num_threads", "PHISPARSE_NUM_THREADS", "lots", 2),
    ("set_pool_bytes", "PHISPARSE_POOL_BYTES", "1.5G", 1 << 30)])
def test_a_setter_overrides_a_bad_environment_variable(setter, var, bad, good, monkeypatch):
    """A value given to the setter stands where the variable is bad (the setter read the
    variable first and raised); rereading it (None) still raises, naming it."""
    from kernels.funcs import pool, threads
    module = threads if setter == "set_num_threads" else pool
    name = "_num_threads" if setter == "set_num_threads" else "_limit"
    monkeypatch.setattr(module, name, None)
    monkeypatch.setenv(var, bad)
    fn = getattr(dense, setter)
    assert fn(good) is None
    assert fn(good) == good
    with pytest.raises(ValueError, match=var):
        fn(None)
    monkeypatch.delenv(var)
    fn(None)


def test_a_lower_pool_cap_frees_idle_blocks_at_once():
    """Lowering the cap (or 0, pooling off) frees idle blocks, largest first, until the
    pool fits under it (they stayed until a later request needed room)."""
    from kernels.funcs import pool
    old = pool.set_pool_bytes(1 << 30)
    try:
        pool.release_idle()
        in_use = pool.pooled_bytes()[0]            # blocks of other tests' live arrays
        a, b = pool.empty((1 << 23,), np.float64), pool.empty((1 << 22,), np.float64)
        del a, b
        assert pool.pooled_bytes() == (in_use, 96 << 20)
        pool.set_pool_bytes(in_use + (40 << 20))
        assert pool.pooled_bytes() == (in_use, 32 << 20)         # the 64 MiB block went
        pool.set_pool_bytes(0)
        assert pool.pooled_bytes() == (in_use, 0)
    finally:
        pool.set_pool_bytes(old)


def test_h3_int_axes_take_0d_integer_arrays_as_numpy_does():
    a = np.arange(6.0).reshape(2, 3)
    t = dense.to_tensor(a)
    np.testing.assert_array_equal(dense.gather(t, np.array([2, 0]), np.array(1)).numpy(),
                                  np.take(a, [2, 0], axis=np.array(1)))
    assert t.to_sparse_coo(np.array(1)).sparse_dim() == 1
    with pytest.raises(TypeError, match="^gather: argument 'axis' must be an int"):
        dense.gather(t, np.array([0]), np.array([1]))


def test_h3_int_and_bool_of_tensors_raise_named_value_errors():
    for v in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"^int\(\): the tensor holds"):
            int(dense.to_tensor(v))
    assert int(dense.to_tensor(-2.7)) == int(np.float64(-2.7))
    s = sparse.sparse_coo_tensor([[0]], [1.0], [2])
    with pytest.raises(ValueError, match=r"^bool\(\): only a one-element tensor"):
        bool(s)                                                  # was always True
    assert bool(sparse.sparse_coo_tensor([[0, 0]], [1.0, -1.0], [1])) is False   # 1 + -1
    assert bool(sparse.sparse_csr_tensor([0, 1], [0], [2.0], [1, 1])) is True


@pytest.mark.parametrize("make", [
    lambda: dense.to_tensor(np.arange(3.0)),
    lambda: dense.to_tensor(np.arange(3.0)) * 2.0,
    lambda: sparse.sparse_coo_tensor([[0, 2]], [1.0, 3.0], [3]),
    lambda: sparse.sparse_csr_tensor([0, 1, 1], [1], [2.0], [2, 2]) * 2.0,
    lambda: dense.to_tensor(np.arange(3.0)).to_global(sbp=dense.sbp.split(0)),
    lambda: dense.to_tensor(np.arange(3.0)).to_global(sbp=dense.sbp.broadcast) * 2.0],
    ids=["dense", "dense-output", "coo", "csr-output", "global", "global-output"])
def test_h4_tensors_take_no_new_or_changed_attributes(make):
    t = make()
    before = (t.to_dense() if t.layout != "dense" else t).numpy()
    for name, value in [("_array", np.zeros(3)), ("_d", None), ("_meta", None), ("foo", 1),
                        ("shape", [1]), ("grad", None), ("__class__", dense.Tensor)]:
        with pytest.raises(AttributeError, match=f"cannot set attribute '{name}'"):
            setattr(t, name, value)
    with pytest.raises(AttributeError, match="cannot delete attribute '_meta'"):
        del t._meta
    np.testing.assert_array_equal((t.to_dense() if t.layout != "dense" else t).numpy(), before)
    t.stop_gradient = False                                      # the one public setter
    assert t.stop_gradient is False
    assert copy.deepcopy(t).stop_gradient is False and pickle.loads(pickle.dumps(t)).is_leaf


def test_h5_a_broadcast_view_is_owned_by_its_unique_data():
    base = np.arange(3.0)
    view = np.broadcast_to(base, (10 ** 6, 10 ** 6, 3))          # 24 TB if materialised
    for t in (dense.to_tensor(view), dense.Tensor(view), dense.to_tensor(view, dtype="float32")):
        assert t.shape == [10 ** 6, 10 ** 6, 3]
        np.testing.assert_array_equal(t[123, 456].numpy(), [0.0, 1.0, 2.0])
    t = dense.to_tensor(view)
    base[:] = 7.0                                                 # the caller's memory changes
    np.testing.assert_array_equal(t[5, 5].numpy(), [0.0, 1.0, 2.0])
    with pytest.raises(ValueError):
        np.asarray(t).flags.writeable = True
    with pytest.raises(ValueError, match=r"^multiply: the output of shape .* bytes"):
        t * 2.0
    with pytest.raises(ValueError, match=r"^numpy: a copy of the tensor .* bytes"):
        t.numpy()
    assert "Tensor(shape=[1000000, 1000000, 3]" in repr(t)
    u = pickle.loads(pickle.dumps(t))
    assert u.shape == t.shape and u[9, 9].numpy().tolist() == [0.0, 1.0, 2.0]


def test_h5_ops_on_a_small_broadcast_tensor_match_numpy_and_its_gradient():
    base = np.array([1.0, -2.0, 3.0])
    a = np.broadcast_to(base, (4, 3))
    x = dense.to_tensor(a, stop_gradient=False)
    base[0] = 100.0                                              # after the copy: no effect
    want = np.broadcast_to([1.0, -2.0, 3.0], (4, 3))
    for got, ref in [(x * 2 + x, want * 3), (x.sum(axis=[0]), want.sum(0)),
                     (dense.reshape(x, [2, 6]), want.reshape(2, 6)), (x.T @ x, want.T @ want),
                     (x[np.array([3, 0])], want[[3, 0]]), (dense.max(x), want.max())]:
        np.testing.assert_array_equal(got.numpy(), ref)
    dense.sum(x * x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * want)


def test_h5_sparse_constructors_refuse_a_broadcast_view_too_big_to_copy_by_name():
    huge = np.broadcast_to(1.0, (10 ** 12,))
    with pytest.raises(ValueError, match=r"^sparse_csr_tensor: copying values .* bytes"):
        sparse.sparse_csr_tensor([0, 1, 2], [0, 0], huge, [2, 2])
    with pytest.raises(ValueError, match=r"^sparse_coo_tensor: copying indices .* bytes"):
        sparse.sparse_coo_tensor(np.broadcast_to(np.zeros((1, 1), int), (1, 10 ** 12)), huge, [3])
    v = np.broadcast_to(np.arange(2.0), (2, 2))                   # small ones are copied
    x = sparse.sparse_coo_tensor([[0, 1]], v, [3, 2])
    np.testing.assert_array_equal(x.to_dense().numpy(), [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]])


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_h6_sparse_sum_of_small_ints_is_int64_with_numpys_value(layout):
    """numpy sums uint8 to uint64, which phisparse has not (dense sum gives int64 too);
    int64 holds numpy's value exactly; an explicit dtype wraps as numpy's."""
    vals = np.array([200, 250, 255], np.uint8)
    x = sparse.sparse_coo_tensor([[0, 0, 1], [0, 1, 1]], vals, [2, 2])
    x = x if layout == "coo" else x.to_sparse_csr()
    full = x.to_dense().numpy()
    for axis in (None, 0, 1):
        got = sparse.sum(x, axis=axis).to_dense().numpy()
        want = full.sum(axis=axis)
        assert got.dtype == np.int64 and want.dtype == np.uint64
        np.testing.assert_array_equal(got.reshape(want.shape), want.astype(np.int64))
    assert dense.sum(dense.to_tensor(full)).dtype == np.int64
    got = sparse.sum(x, dtype="uint8").to_dense().numpy()
    assert got.dtype == np.uint8 and got.item() == full.sum(dtype=np.uint8)


def test_messages_name_the_input_not_the_output():
    """Errors about an input's rank or a 0-d tensor say so (not the result's rank or an
    empty range), as numpy's do."""
    t = dense.to_tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"^unsqueeze: axis 3 .* tensor of rank 2; expected "
                                         r"a value in \[-3, 3\)"):
        dense.unsqueeze(t, 3)
    with pytest.raises(TypeError, match="^iteration over a 0-d tensor"):
        list(dense.to_tensor(1.0))
    with pytest.raises(ValueError, match="^to_sparse_coo: a 0-d tensor has no dim"):
        dense.to_tensor(2.0).to_sparse_coo(0)
    assert [u.numpy().tolist() for u in dense.to_tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]


# ---------------------------------------------------------------- second hostile round
# H7-: the findings of the second hostile-input round (probes in tests/hostile_probes.py).
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_h7_sparse_tensors_convert_like_dense_ones_and_name_what_they_refuse(layout):
    """float/int/complex of a one-element sparse tensor are its logical value (duplicates
    summed), as bool() is; len() is the first dim (as torch); iteration, indexing and
    operator.index raise TypeErrors that say what to use instead."""
    one = sparse.sparse_coo_tensor([[0, 0], [0, 0]], [1.5, 2.25], [1, 1])
    one = one if layout == "coo" else one.to_sparse_csr()
    assert float(one) == 3.75 and int(one) == 3 and complex(one) == 3.75 + 0j
    empty = sparse.sparse_coo_tensor(np.zeros((2, 0), int), np.zeros(0), [1, 1])
    assert float(empty if layout == "coo" else empty.to_sparse_csr()) == 0.0
    x = sparse.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0], [3, 2])
    x = x if layout == "coo" else x.to_sparse_csr()
    assert len(x) == 3
    for conv in (float, int, complex, bool):
        with pytest.raises(ValueError, match=rf"^{conv.__name__}\(\): only a one-element "
                                             rf"tensor .* shape \[3, 2\]"):
            conv(x)
    with pytest.raises(TypeError, match="^iteration over a sparse_(coo|csr) tensor"):
        iter(x)
    with pytest.raises(TypeError, match=r"^getitem: a sparse_(coo|csr) tensor cannot be indexed"):
        x[0]
    with pytest.raises(TypeError, match=r"^operator.index\(\): a sparse"):
        [1, 2][one]
    nan = sparse.sparse_coo_tensor([[0]], [float("nan")], [1])
    with pytest.raises(ValueError, match=r"^int\(\): the tensor holds nan"):
        int(nan)
    leaf = sparse.sparse_coo_tensor([[0]], [2.0], [1], stop_gradient=False)
    assert float(leaf) == 2.0 and leaf.grad is None


@pytest.mark.parametrize("call,match", [
    (lambda: dense.full([2], 1j, dtype="float64"), r"^full: fill_value 1j is complex"),
    (lambda: dense.full([2], 1 + 0j, dtype="float32"), r"^full: fill_value \(1\+0j\) is complex"),
    (lambda: dense.full_like(dense.to_tensor([1.0]), 1j), r"^full_like: fill_value 1j"),
    (lambda: dense.full([2], np.float64(np.nan), dtype="int8"), r"^full: fill_value .*nan"),
    (lambda: dense.to_tensor(np.array([1j, 2.0]), dtype="float64"),
     r"^to_tensor: data of dtype complex128 cannot become float64"),
    (lambda: dense.to_tensor([np.complex128(1j)], dtype="float64"), r"^to_tensor: data of"),
    (lambda: dense.to_tensor(np.array([1.0, np.nan]), dtype="int64"),
     r"^to_tensor: data holds NaN or inf"),
    (lambda: dense.to_tensor(np.array([300]), dtype="uint8"),
     r"^to_tensor: data holds 300, .* uint8 \(it holds \[0, 255\]\)"),
    (lambda: dense.to_tensor(np.array([-1.5, 300.7]), dtype="int8"), r"^to_tensor: data holds 300"),
    (lambda: dense.to_tensor(np.broadcast_to(np.array([1j]), (10 ** 6, 10 ** 6)), dtype="float64"),
     r"^to_tensor: data of dtype complex128"),
    (lambda: dense.arange(0, 1e18, 1e17, dtype="int8"), r"^arange: step 1e\+17 is out of the "
                                                         r"range of int8"),
    (lambda: dense.arange(0, 257, dtype="uint8"), r"^arange: the last value 256 is out of"),
    (lambda: dense.arange(-1, 3, dtype="uint8"), r"^arange: start -1 is out of the range"),
    (lambda: sparse.sparse_coo_tensor([[0]], np.array([1j]), [1], dtype="float64"),
     r"^sparse_coo_tensor: values of dtype complex128 cannot become float64"),
    (lambda: sparse.sparse_coo_tensor([[0]], np.array([np.inf]), [1], dtype="int32"),
     r"^sparse_coo_tensor: values holds NaN or inf"),
], ids=lambda v: "" if callable(v) else v[:40])
def test_h8_creation_refuses_a_value_its_dtype_cannot_hold_by_name(call, match):
    """numpy drops imaginary parts (ComplexWarning) and makes NaN and out-of-range values
    arbitrary integers; creation refuses each by name, dense and sparse alike, before
    any output is made."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match):
            call()


def test_h8_creation_keeps_what_the_dtype_can_hold():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dense.to_tensor(np.array([1.7, -1.7]), dtype="int8").numpy().tolist() == [1, -1]
        assert dense.to_tensor([1j, 0], dtype="bool").numpy().tolist() == [True, False]
        assert dense.full([1], 1j, "complex64").numpy().tolist() == [1j]
        assert dense.full([1], np.inf, "float32").numpy().tolist() == [np.inf]
        assert dense.full_like(dense.to_tensor([1]), 2.5).numpy().tolist() == [2]
    with np.errstate(over="ignore"):    # a float too large for its dtype is inf, as in numpy
        for t in (dense.full([2], 1e300, dtype="float32"), dense.full([1], 70000, "float16"),
                  dense.to_tensor([1e300], dtype="float32"),
                  dense.to_tensor(np.array([1e300]), dtype="float32"),
                  sparse.sparse_csr_tensor([0, 1], [0], [1e300], [1, 1], dtype="float32")):
            assert np.isposinf(t.to_dense().numpy() if t.layout != "dense" else t.numpy()).all()
        assert dense.arange(0, 256, dtype="uint8").numpy()[-1] == 255
        assert dense.to_tensor("1.5", dtype="float64").numpy().tolist() == 1.5
        b = dense.to_tensor(np.broadcast_to(np.array([1, 2]), (10 ** 6, 10 ** 6, 2)),
                            dtype="float32")
        assert b.dtype == np.float32 and b[5, 6].numpy().tolist() == [1.0, 2.0]


def test_h9_sparse_add_and_subtract_infer_meta_follow_the_scalar_rule():
    """infer_meta raises what the op raises: a nonzero scalar added to a sparse tensor
    would be dense (TypeError), and a zero one gives x's metadata, as the op returns x."""
    x = sparse.sparse_coo_tensor([[0, 1]], [1.5, 2.0], [3])
    for op, args in [("add", (x, 2)), ("add", (2.5, x)), ("subtract", (x, np.float32(1))),
                     ("subtract", (1, x.meta)), ("divide", (2, x))]:
        with pytest.raises(TypeError, match=f"^{op}: "):
            getattr(sparse, op)(*args)
        with pytest.raises(TypeError, match=f"^{op}: "):
            getattr(sparse, op).infer_meta(*args)
    for op, args in [("add", (x, 0)), ("add", (0.0, x)), ("subtract", (x, 0)),
                     ("subtract", (0, x)), ("divide", (x, 2))]:
        got = getattr(sparse, op).infer_meta(*args)
        out = getattr(sparse, op)(*args)
        assert (got.shape, got.dtype, got.layout) == (tuple(out.shape), out.dtype, out.layout)
    assert sparse.add.infer_meta(x.meta, 0).layout == "sparse_coo"
    with pytest.raises(TypeError, match=r"^add.infer_meta: missing a required argument: 'y'"):
        sparse.add.infer_meta(x)


def test_h10_hostile_arguments_of_the_second_sweep_raise_named_errors():
    """What the second sweep found: each raised AttributeError or numpy's unnamed error."""
    coo = sparse.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])
    t = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    cases = [
        (lambda: dense.reshape(t, coo), TypeError, r"^reshape: argument 'shape' .* sparse_coo"),
        (lambda: sparse.sparse_coo_tensor([[0]], [1.0], coo), TypeError,
         r"^sparse_coo_tensor: shape must be a list of ints, got a sparse_coo tensor"),
        (lambda: sparse.sparse_csr_tensor([0, 1], [0], [1.0], coo), TypeError,
         r"^sparse_csr_tensor: shape"),
        (lambda: dense.to_tensor([1.0], place=np.zeros(2)), TypeError, r"^to_tensor: place must"),
        (lambda: sparse.sparse_coo_tensor([[0]], [1.0], [1], place=3), TypeError,
         r"^sparse_coo_tensor: place must"),
        (lambda: coo.to_sparse_coo(np.ones(3)), TypeError, r"^to_sparse_coo: "),
        (lambda: coo * dense.MetaTensor((2, 3), "float64"), TypeError, r"^multiply: the operand "
                                                                        r"of \* is a MetaTensor"),
        (lambda: coo + dense.MetaTensor((2, 3), "float64"), TypeError, r"^add: "),
        (lambda: t[0:np.True_], TypeError, r"^getitem: a slice's stop must be an integer"),
        (lambda: t.__array__(dtype="abc"), TypeError, r"^__array__: dtype 'abc'"),
        (lambda: t.__array__(copy=np.ones(2)), TypeError, r"^__array__: copy must be"),
        (lambda: dense.arange(np.False_, np.True_, dtype="bool"), TypeError, r"^arange: dtype bool"),
    ]
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
    assert t[0:True].shape == [1, 3]                      # a Python bool is an int, as numpy
    assert coo.to_sparse_coo(np.int64(2)).sparse_dim() == 2
    np.testing.assert_array_equal(dense.arange(np.True_, 3).numpy(), np.arange(np.True_, 3))
    np.testing.assert_array_equal(dense.arange(np.False_, np.True_).numpy(), [0])
    np.testing.assert_array_equal(dense.arange(0, 3, np.True_).numpy(), [0, 1, 2])


# ---------------------------------------------------------------- stop 33's hostile probe
def test_numpy_cannot_write_into_a_tensor():
    """np.add.at writes into read-only arrays (a numpy quirk), and out=t recursed without
    end: both raise TypeError now, and the tensor keeps its values."""
    t = dense.to_tensor(np.array([1.0, 2.0]))
    for call in (lambda: np.add.at(t, [0], 5), lambda: np.add(t, 1, out=t),
                 lambda: np.exp(t, out=(t,)), lambda: np.add(np.ones(2), 1, out=t)):
        with pytest.raises(TypeError, match=r"^np\.(add|exp)(\.at)?: cannot write into a Tensor"):
            call()
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    a = np.zeros(2)
    np.add(t, 1, out=a)                       # into a numpy array: allowed
    np.add.at(a, [0], t[0:1])
    np.testing.assert_array_equal(a, [3.0, 3.0])


def test_too_many_new_dims_raise_before_the_work_grows_with_them():
    x = dense.to_tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="^getitem: the output would have 100002 dims"):
        x[(None,) * 100000]
    with pytest.raises(ValueError, match="^unsqueeze: the output would have 200002 dims"):
        dense.unsqueeze(x, [0] * 200000)
    assert x[(None,) * 62].shape == [1] * 62 + [2, 3]
    with pytest.raises(ValueError, match="^getitem: the output would have 65 dims"):
        x[(None,) * 63]


def test_arange_with_a_step_too_small_to_count_by():
    with pytest.raises(ValueError, match=r"^arange: \[0\.0, 1\.0\) by step 5e-324 has 2\*\*63"):
        dense.arange(0.0, 1.0, 5e-324)
    assert dense.arange(0.0, -1.0, 5e-324).shape == [0]      # numpy overflows here
    np.testing.assert_array_equal(dense.arange(0, 10, 3).numpy(), np.arange(0, 10, 3))


def test_sixty_four_sparse_dims():
    x = np.zeros([1] * 63 + [2])
    x[(0,) * 63 + (1,)] = 5.0
    c = dense.to_tensor(x).to_sparse_coo(64)       # numpy indexes with at most 63 arrays
    np.testing.assert_array_equal(c.values().numpy(), [5.0])
    np.testing.assert_array_equal(c.to_dense().numpy(), x)
    with pytest.raises(ValueError, match="^sparse_coo_tensor: shape has 100 dims; a tensor "
                                         "has at most 64"):
        sparse.sparse_coo_tensor(np.zeros((100, 1), np.int64), [1.0], [1] * 100)


def test_global_helpers_check_their_argument_types():
    for ranks in ("0", "00", [0.0], [False], 5, np.array(0)):
        with pytest.raises(TypeError, match="^placement: ranks must be a list of ints"):
            dense.placement(ranks=ranks)
    assert list(dense.placement(ranks=range(1)).ranks) == [0]
    for axis in (1.0, "0", True):
        with pytest.raises(TypeError, match="^sbp.split: axis must be an int"):
            dense.sbp.split(axis)
    assert dense.sbp.split(np.int64(1)).axis == 1


@pytest.mark.parametrize("index_dtype", ["uint8", "int8", "int16"])
def test_csr_row_sums_with_narrow_index_dtypes(index_dtype):
    """cast(index_dtype='uint8') is allowed; the row sums then met numpy's reduceat with
    uint64 row starts (a raw TypeError naming no op)."""
    a = np.stack([np.eye(3), 2 * np.diag([1.0, 0.0, 3.0])])
    for x in (a[0], a):
        c = sparse.cast(dense.to_tensor(x).to_sparse_csr(), index_dtype=index_dtype)
        got = sparse.sum(c, axis=-1).to_dense().numpy()
        np.testing.assert_array_equal(got, x.sum(axis=-1, keepdims=True))


# ------------------------------------------------ numbers phisparse has no dtype for
_ODD_NUMBERS = [Fraction(1, 3), Decimal("1.5"), np.longdouble(1.5), np.clongdouble(1j),
                np.timedelta64(2), np.timedelta64(2, "s")]


@pytest.mark.parametrize("value", _ODD_NUMBERS, ids=repr)
@pytest.mark.parametrize("call, op, arg", [
    (lambda v: dense.clip(dense.to_tensor([1.0, 2.0]), v), "clip", "min"),
    (lambda v: dense.clip(dense.to_tensor([1.0, 2.0]), max=v), "clip", "max"),
    (lambda v: sparse.pow(sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3]), v), "pow",
     "factor"),
    (lambda v: sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3]) ** v, "pow", "factor"),
    (lambda v: sparse.scale(sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3]), v), "scale",
     "scale"),
    (lambda v: sparse.scale(sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3]), 2.0, v),
     "scale", "bias"),
    (lambda v: dense.arange(0, 4, v), "arange", "step"),
])
def test_scalar_arguments_refuse_numbers_without_a_dtype(call, op, arg, value):
    """Fraction, Decimal, longdouble and timedelta64 once gave object or float128 results
    (or numpy's "Can't hash generic timedelta64"): a TypeError naming the op and argument."""
    with pytest.raises(TypeError, match=rf"^{op}: argument '{arg}' must be a scalar"):
        call(value)


@pytest.mark.parametrize("value", [np.uint16(3), np.uint32(3), np.uint64(3)], ids=repr)
@pytest.mark.parametrize("call, op, arg", [
    (lambda v: dense.clip(dense.to_tensor(np.int8([1, 5])), 0, v), "clip", "max"),
    (lambda v: sparse.sparse_coo_tensor([[0, 1]], np.int8([1, 2]), [3]) ** v, "pow", "factor"),
    (lambda v: sparse.scale(sparse.sparse_coo_tensor([[0, 1]], np.int8([1, 2]), [3]), v),
     "scale", "scale"),
])
def test_scalar_arguments_refuse_unsigned_dtypes_no_tensor_takes(call, op, arg, value):
    """uint16/32/64 scalars were taken and promoted as numpy does (int8 ** uint64 gave
    float64) where ``*`` and ``to_tensor`` refuse them: a TypeError naming the argument."""
    with pytest.raises(TypeError, match=rf"^{op}: argument '{arg}' must be a scalar"):
        call(value)


@pytest.mark.parametrize("value", [np.uint64(1), np.longdouble(0.5)], ids=repr)
def test_float_arguments_refuse_dtypes_no_tensor_takes(value):
    x = sparse.sparse_coo_tensor([[0, 1]], [-1.0, 2.0], [3])
    with pytest.raises(TypeError, match=r"^leaky_relu: argument 'negative_slope' must be a float"):
        sparse.leaky_relu(x, value)
    assert sparse.leaky_relu(x, np.float32(0.5)).values().numpy().tolist() == [-0.5, 2.0]


@pytest.mark.parametrize("call, op, arg", [
    (lambda v: dense.add(dense.to_tensor([1.0]), v), "add", "y"),
    (lambda v: dense.to_tensor([1.0]) * v, "multiply", "y"),
    (lambda v: dense.maximum(dense.to_tensor([1.0]), v), "maximum", "y"),
    (lambda v: sparse.multiply(sparse.sparse_coo_tensor([[0]], [1.0], [2]), v), "multiply", "y"),
])
@pytest.mark.parametrize("value", [np.timedelta64(2), np.datetime64("2020-01-01")], ids=repr)
def test_tensor_arguments_refuse_time_scalars(call, op, arg, value):
    with pytest.raises(TypeError, match=rf"^{op}: argument '{arg}' must be a Tensor"):
        call(value)


@pytest.mark.parametrize("call, op", [
    (lambda v: dense.zeros([v]), "zeros"),
    (lambda v: dense.reshape(dense.to_tensor([1.0, 2.0]), [v]), "reshape"),
    (lambda v: dense.reshape(dense.to_tensor([1.0, 2.0]), v), "reshape"),
    (lambda v: dense.sum(dense.to_tensor([1.0, 2.0]), axis=v), "sum"),
])
@pytest.mark.parametrize("value", [np.timedelta64(2), np.timedelta64(2, "s")], ids=repr)
def test_int_arguments_refuse_timedelta64(call, op, value):
    """numpy counts timedelta64 as an Integral: a unitless one was taken as a size."""
    with pytest.raises(TypeError, match=rf"^{op}: argument '(shape|axis)' must"):
        call(value)


def test_numpy_scalars_of_phisparse_dtypes_still_pass_as_scalars():
    t = dense.to_tensor([1.0, 2.0])
    np.testing.assert_array_equal(dense.clip(t, np.float32(1.5)).numpy(), [1.5, 2.0])
    np.testing.assert_array_equal(dense.clip(t, max=np.int8(1)).numpy(), [1.0, 1.0])
    s = sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3])
    np.testing.assert_array_equal(sparse.scale(s, np.complex64(2j)).values().numpy(), [2j, 4j])
    assert dense.zeros([np.int16(2)]).shape == [2]


def test_getitem_takes_objects_with_index_as_numpy_does():
    class Index:
        def __index__(self):
            return 1

    a = np.arange(6.0).reshape(2, 3)
    t = dense.to_tensor(a)
    np.testing.assert_array_equal(t[Index()].numpy(), a[Index()])
    assert t[Index(), Index()].item() == a[1, 1]
    np.testing.assert_array_equal(t[Index():].numpy(), a[1:])
    for key in (np.timedelta64(1), True, 1.5):
        with pytest.raises(TypeError, match="^getitem: index"):
            t[key]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_an_unsigned_index_array_is_told_the_index_dtypes(dtype):
    """It was told every dtype phisparse has (floats and bool included)."""
    x = sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3])
    expected = rf"index dtype {np.dtype(dtype).name} is not supported; expected int32 or int64$"
    with pytest.raises(TypeError, match="^index_select: " + expected):
        sparse.index_select(x, np.array([0], dtype), 0)
    with pytest.raises(TypeError, match="^gather: " + expected):
        dense.gather(dense.to_tensor([1.0, 2.0]), np.array([0], dtype))


@pytest.mark.parametrize("dtype, n", [("int16", 40000), ("int8", 200), ("uint8", 300)])
def test_cast_refuses_an_index_dtype_that_cannot_hold_csr_row_pointers(dtype, n):
    """The row pointers reach nnz: int16 ones wrapped to -25536, and mv, sum and to_scipy
    then gave wrong results or crashed."""
    c = sparse.sparse_csr_tensor(np.r_[0, n // 2, n], np.zeros(n, np.int64), np.ones(n), [2, 2])
    with pytest.raises(ValueError, match=rf"^cast: index_dtype {dtype} cannot hold the row "
                                         rf"pointers of a CSR tensor with {n} entries"):
        sparse.cast(c, index_dtype=dtype)
    small = sparse.cast(sparse.sparse_csr_tensor([0, 1, 2], [0, 1], [1.0, 2.0], [2, 2]),
                        index_dtype=dtype)
    assert small.crows().dtype == np.dtype(dtype)
    np.testing.assert_array_equal(small.to_dense().numpy(), [[1.0, 0.0], [0.0, 2.0]])


def test_the_sparse_classes_check_a_bundle_as_the_constructors_do():
    """SparseCooTensor(bundle) and SparseCsrTensor(bundle) trusted their buffers: crows
    past nnz, or an index past its dim, read out of bounds in scipy's compiled walks (a
    segfault in ``s @ y`` and ``c + c``).  Run apart, so a crash fails one test."""
    code = """if True:
        import numpy as np, dense, sparse
        from kernels.sparse.data import CsrData, CooData
        bad = [lambda: sparse.SparseCsrTensor(CsrData(np.array([0, 10**8]), np.array([10**9]),
                                                       np.array([1.0]), (1, 3))),
               lambda: sparse.SparseCooTensor(CooData(np.array([[10**12, 5]]),
                                                      np.array([1., 2.]), (3,), True, True))]
        for make in bad:
            try:
                t = make()
            except (ValueError, IndexError) as exc:
                print(type(exc).__name__)
            else:
                (t @ dense.ones([3, 2])) if t.layout == "sparse_csr" else t + t
                print("built")
        """
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ValueError", "IndexError"]


def test_the_sparse_classes_copy_a_bundle_and_find_its_flags_again():
    from kernels.sparse.data import CooData, CsrData
    idx, val = np.array([[1, 0]]), np.array([1.0, 2.0])
    t = sparse.SparseCooTensor(CooData(idx, val, (3,), True, True), stop_gradient=False)
    idx[0, 0], val[0] = 2, 5.0                        # the caller's arrays, changed after
    assert not t.is_coalesced() and not t.stop_gradient    # (1, 0) is not C-sorted
    np.testing.assert_array_equal(t.to_dense().numpy(), [2.0, 1.0, 0.0])
    c = sparse.SparseCsrTensor(CsrData(np.array([0, 1, 2]), np.array([0, 1]),
                                       np.array([1.0, 2.0]), (2, 2)))
    np.testing.assert_array_equal(c.to_dense().numpy(), np.eye(2) * [1.0, 2.0])
    for cls, data in [(sparse.SparseCooTensor, np.ones(3)),
                      (sparse.SparseCsrTensor, CooData(idx, val, (3,), False, False))]:
        with pytest.raises(TypeError, match=rf"^{cls.__name__}: expected a \w+ bundle"):
            cls(data)


def test_index_select_of_a_broadcast_index_works_by_entries_not_by_its_length():
    """A stride-0 index costs its caller nothing at any length: it was scanned value by
    value (a hang at 2**59), compared pairwise (a 512 PiB mask), and handed to numpy's
    take (a copy of it).  Now its one value is checked once, an x without entries gives
    an empty result at once, and an output too large is refused before any work."""
    idx = np.broadcast_to(np.array([1]), (2 ** 59,))
    empty = sparse.sparse_coo_tensor(np.zeros((2, 0), np.int64), np.zeros(0), [2, 3])
    out = sparse.index_select(empty, idx, 0)
    assert out.shape == [2 ** 59, 3] and out.nnz() == 0
    assert dense.index_select(dense.ones([3, 0]), idx, 0).shape == [2 ** 59, 0]
    x = sparse.sparse_coo_tensor([[0, 0, 1], [1, 2, 0]], [1.0, 2.0, 3.0], [2, 3])
    for axis, n in ((0, 5), (1, 4)):
        few = np.broadcast_to(np.array([0 if axis else 1]), (n,))
        got = sparse.index_select(x, few, axis)
        np.testing.assert_array_equal(got.to_dense().numpy(),
                                      np.take(x.to_dense().numpy(), np.asarray(few), axis))
    with pytest.raises(ValueError, match=r"^index_select: the output of shape "
                                         r"\[1099511627776, 3\] needs \d+ bytes"):
        sparse.index_select(x, np.broadcast_to(np.array([1]), (2 ** 40,)), 0)
    with pytest.raises(IndexError, match=r"^index_select: index 5 at position 0"):
        sparse.index_select(x, np.broadcast_to(np.array([5]), (2 ** 40,)), 0)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_product_that_cannot_fit_is_refused_before_it_is_counted(layout):
    """A column of 2**20 entries times a row of as many has 2**40 products on distinct
    coordinates: SpGEMM's count walked every one of them (minutes) before its allocation
    failed.  The largest block of one inner index bounds the result from below."""
    n = 2 ** 20
    a = sparse.sparse_coo_tensor(np.stack([np.arange(n), np.zeros(n, int)]), np.ones(n), [n, 1])
    b = sparse.sparse_coo_tensor(np.stack([np.zeros(n, int), np.arange(n)]), np.ones(n), [1, n])
    if layout == "csr":
        a, b = a.to_sparse_csr(), b.to_sparse_csr()
    message = r"the product of shape \[1048576, 1048576\] \(at least 1099511627776 entries\)"
    with pytest.raises(ValueError, match="^matmul: " + message):
        sparse.matmul(a, b)
    with pytest.raises(ValueError, match="^addmm: " + message):
        sparse.addmm(sparse.sparse_coo_tensor([[0], [0]], [1.0], [n, n]).to_sparse_csr()
                     if layout == "csr" else
                     sparse.sparse_coo_tensor([[0], [0]], [1.0], [n, n]), a, b)


@pytest.mark.parametrize("call, error, message", [
    (lambda: sparse.sparse_coo_tensor([[0, 2 ** 63]], [1.0, 2.0], [3]), IndexError,
     r"^sparse_coo_tensor: indices holds a Python int out of the range of int64 \(numpy "
     r"makes it float64\)"),
    (lambda: sparse.sparse_coo_tensor([[2 ** 64]], [1.0], [3]), IndexError,
     r"^sparse_coo_tensor: indices holds a Python int out of the range of int64 \(numpy "
     r"makes it object\)"),
    (lambda: sparse.sparse_csr_tensor([0, 1], [2 ** 64], [1.0], [1, 3]), IndexError,
     r"^sparse_csr_tensor: cols holds a Python int out of the range of int64"),
    (lambda: sparse.sparse_csr_tensor([0, 2 ** 64], [0], [1.0], [1, 3]), ValueError,
     r"^sparse_csr_tensor: crows holds a Python int out of the range of int64"),
    (lambda: sparse.sparse_csr_tensor(np.array([0, 2 ** 63], np.uint64), [0], [1.0], [1, 3]),
     ValueError, r"^sparse_csr_tensor: crows holds 9223372036854775808, more than any dim"),
    (lambda: dense.ones([3])[[0, 2 ** 63]], IndexError,
     r"^getitem: the list index holds a Python int out of the range of int64"),
])
def test_an_index_past_int64_is_out_of_range_not_a_dtype(call, error, message):
    """numpy makes such a list float64 or object; it was reported as a dtype (TypeError)."""
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("data, hint", [
    (None, ""), ([1, None], ""), ({1, 2}, "an unordered collection or an iterator"),
    ((i for i in range(3)), "an unordered collection or an iterator"),
    (scipy.sparse.eye(2, format="csr"), r"sparse.from_scipy\(m\) takes a scipy sparse array"),
])
def test_to_tensor_names_data_that_is_not_numbers(data, hint):
    """It said 'dtype object is not supported', a dtype the caller never gave."""
    with pytest.raises(TypeError, match=rf"^to_tensor: data of type {type(data).__name__} is "
                                        rf"not numbers \(numpy makes it an object array\).*{hint}"):
        dense.to_tensor(data)


def test_coalesce_of_sparse_dims_past_int64_sorts_the_coordinates():
    """Sparse dims of 2**80 elements have no int64 flat offset: coalesce raised even for
    one entry, while ``a + a`` worked.  It now sorts the coordinate tuples (as scipy's
    sum_duplicates does), and its gradient maps back through the same grouping."""
    m = 2 ** 40
    x = sparse.sparse_coo_tensor([[m - 1, 0, m - 1, 3], [m - 2, 5, m - 2, 1]],
                                 [1.0, 2.0, 3.0, 4.0], [m, m], stop_gradient=False)
    c = x.coalesce()
    assert c.is_coalesced()
    assert c.indices().numpy().tolist() == [[0, 3, m - 1], [5, 1, m - 2]]
    np.testing.assert_array_equal(c.values().numpy(), [2.0, 4.0, 4.0])
    sparse.sum(sparse.multiply(c, np.array([[3.0]]))).backward()
    np.testing.assert_array_equal(x.grad.values().numpy(), [3.0, 3.0, 3.0, 3.0])
    one = sparse.sparse_coo_tensor([[0], [0]], [1.0], [m, m]).coalesce()
    assert one.is_coalesced() and one.nnz() == 1


def test_a_list_where_a_tensor_is_expected_is_told_what_to_pass():
    """index_select named 'a scalar' among what it takes and then refused the scalar, and
    concat blamed 'xs' for its element."""
    x = sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3])
    with pytest.raises(TypeError, match=r"^index_select: argument 'index' must be a Tensor or "
                                        r"a numpy array of int32 or int64 indices, got list; "
                                        r"dense.to_tensor\(...\) makes a Tensor of a list$"):
        sparse.index_select(x, [0, 1], 0)
    with pytest.raises(TypeError, match=r"^concat: each element of argument 'xs' must be a "
                                        r"Tensor, a numpy array or a scalar, got list"):
        dense.concat([np.ones(2), [1.0]])
