"""Dispatch's short path: canonical attributes, remembered calls, cached bindings,
no autograd work without a gradient, and environment knobs read once."""
import numpy as np
import pytest

import dense
from kernels.core import dispatch, registry
from kernels.core.meta import Canonical, MetaTensor
from kernels.core.opspec import Arg, KernelSig, OpSpec
from kernels.funcs import pool, threads

SEEN = {"infer": 0, "kernel": []}


def _probe_infer_meta(x, shape, scale):
    """Resolve -1 like reshape; hand the kernel the resolved shape (a Canonical)."""
    SEEN["infer"] += 1
    if shape.count(-1) > 1:
        raise ValueError(f"probe: shape {list(shape)} has more than one -1")
    known = int(np.prod([s for s in shape if s != -1]))
    new = tuple(x.size // known if s == -1 else s for s in shape)
    return Canonical(x.with_(shape=new), {"shape": new})


def _plain_infer_meta(x, shape, scale):
    SEEN["infer"] += 1
    return x


@registry.register_kernel("dispatch_probe", dtypes=(np.float64,))
def _probe_kernel(x, shape, scale):
    SEEN["kernel"].append((shape, scale, type(scale)))
    return x.reshape(shape) * scale


@registry.register_kernel("dispatch_plain", dtypes=(np.float64,))
def _plain_kernel(x, shape, scale):
    SEEN["kernel"].append((shape, scale, type(scale)))
    return x * scale


def _spec(name, infer_meta):
    return OpSpec(name=name, namespace="test", outputs=("out",),
                  args=(Arg("x", "Tensor"), Arg("shape", "IntArray"), Arg("scale", "Scalar")),
                  kernels=(KernelSig(name, ("dense",), ("dense",)),), infer_meta=infer_meta,
                  layout_arg="x", data_type_arg="x")


PROBE = _spec("dispatch_probe", _probe_infer_meta)
PLAIN = _spec("dispatch_plain", _plain_infer_meta)


@pytest.fixture(autouse=True)
def _fresh():
    SEEN["infer"], SEEN["kernel"] = 0, []
    PROBE.memo.clear()
    PLAIN.memo.clear()


def test_kernel_gets_the_canonical_attributes():
    x = dense.to_tensor(np.arange(6.0))
    out = dispatch.run(PROBE, [x], [[3, -1], 2])
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(3, 2) * 2)
    assert SEEN["kernel"] == [((3, 2), 2, int)]


def test_infer_meta_returning_only_metadata_keeps_the_callers_attributes():
    x = dense.to_tensor(np.arange(6.0))
    dispatch.run(PLAIN, [x], [[3, -1], 2.0])
    assert SEEN["kernel"] == [((3, -1), 2.0, float)]


def test_repeated_calls_reuse_the_infer_meta_result_but_not_across_types():
    x = dense.to_tensor(np.arange(6.0))
    for _ in range(3):
        dispatch.run(PROBE, [x], [[3, -1], 2])
    assert SEEN["infer"] == 1
    dispatch.run(PROBE, [x], [[3, -1], 2.0])            # 2.0 == 2, but another Scalar
    dispatch.run(PROBE, [x], [[2, -1], 2])
    dispatch.run(PROBE, [dense.to_tensor(np.arange(8.0))], [[2, -1], 2])
    assert SEEN["infer"] == 4
    assert [k[2] for k in SEEN["kernel"]] == [int, int, int, float, int, int]
    assert SEEN["kernel"][-1][0] == (2, 4)


def test_remembered_calls_tell_apart_what_equality_does_not():
    x = dense.to_tensor(np.arange(6.0))
    dispatch.run(PLAIN, [x], [[6], 0.0])
    out = dispatch.run(PLAIN, [x], [[6], -0.0])        # -0.0 == 0.0: the sign must reach
    assert np.signbit(SEEN["kernel"][-1][1]) and np.signbit(out.numpy()[0])
    dispatch.run(PLAIN, [x], [(6,), True])
    dispatch.run(PLAIN, [x], [(6,), 1])                 # True == 1, but another Scalar
    assert [k[2] for k in SEEN["kernel"][-2:]] == [bool, int]
    with pytest.raises(TypeError, match="must hold ints"):
        dispatch.run(PLAIN, [x], [(6.0,), 1])           # (6.0,) == (6,): still refused
    assert SEEN["infer"] == 4


def test_memo_keys_tell_types_and_zero_signs_apart():
    """The memo key separates 1, True, None and "1", 1 and 1.0, 0.0 and -0.0, a dtype
    and its name, on every call; an array attribute has no key."""
    m = [MetaTensor((2, 3), np.float32)]
    for _ in range(2):
        keys = {dispatch._memo_key(m, [v, None, False]) for v in (1, True, None, "1")}
        assert len(keys) == 4
        assert dispatch._memo_key(m, [0.0]) != dispatch._memo_key(m, [-0.0])
        assert dispatch._memo_key(m, [1]) != dispatch._memo_key(m, [1.0])
        assert dispatch._memo_key(m, [np.dtype("float32")]) != \
            dispatch._memo_key(m, ["float32"])
    assert dispatch._memo_key(m, [[1, 2]]) is not None
    assert dispatch._memo_key(m, [np.ones(2)]) is None
    x = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(dense.sum(x, axis=1).numpy(), [3.0, 12.0])
    np.testing.assert_array_equal(dense.sum(x, axis=0).numpy(), [3.0, 5.0, 7.0])
    assert dense.sum(x, axis=0, keepdim=True).shape == [1, 3]


def test_a_tensor_attribute_is_converted_every_call():
    x = dense.to_tensor(np.arange(6.0))
    for shape in ([3, -1], [2, -1]):
        dispatch.run(PROBE, [x], [dense.to_tensor(np.array(shape)), 1])
    assert [k[0] for k in SEEN["kernel"]] == [(3, 2), (2, 3)]


def test_errors_are_raised_every_time_and_never_remembered():
    x = dense.to_tensor(np.arange(6.0))
    for _ in range(2):
        with pytest.raises(ValueError, match="more than one -1"):
            dispatch.run(PROBE, [x], [[-1, -1], 2])
    assert SEEN["infer"] == 2 and SEEN["kernel"] == [] and not PROBE.memo


def test_a_later_registration_rebinds_the_kernel():
    x = dense.to_tensor(np.arange(6.0))
    dispatch.run(PLAIN, [x], [[6], 1.0])
    before = registry.GENERATION[0]
    calls = []
    registry.register_kernel("dispatch_plain", dtypes=(np.float64,))(
        lambda x, shape, scale: calls.append(scale) or x)
    try:
        assert registry.GENERATION[0] > before
        dispatch.run(PLAIN, [x], [[6], 1.0])
        assert calls == [1.0]
    finally:
        registry.register_kernel("dispatch_plain", dtypes=(np.float64,))(_plain_kernel)


def test_no_grad_node_without_an_input_that_needs_one():
    x = dense.to_tensor(np.arange(6.0))
    assert dense.reshape(x, [2, 3])._grad_fn is None
    w = dense.to_tensor(np.arange(6.0), stop_gradient=False)
    y = dense.reshape(w, [2, 3])
    assert y._grad_fn is not None and not y.stop_gradient
    with dense.no_grad():
        assert dense.reshape(w, [2, 3])._grad_fn is None


def test_infer_meta_binding_still_returns_metadata_only():
    m = dense.reshape.infer_meta(MetaTensor((2, 3), np.float32), [-1])
    assert type(m) is MetaTensor and m.shape == (6,)


def test_infer_meta_shape_equals_the_outputs_list_shape():
    """API2: ``op.infer_meta(*args)`` takes the op's own arguments; its ``.shape``
    compares equal to the op's output ``.shape`` (a list), and to the tuple."""
    import doctest

    import kernels.core.meta
    import sparse
    assert doctest.testmod(kernels.core.meta).failed == 0
    x = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    s = sparse.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], [2, 3])
    calls = [(dense.reshape, (x, [3, -1])), (dense.sum, (x, 1)), (dense.matmul, (x, x.T)),
             (dense.concat, ([x, x], 1)), (dense.argmax, (x,)), (sparse.sum, (s,)),
             (sparse.transpose, (s, [1, 0])), (sparse.matmul, (s, x.T))]
    for op, args in calls:
        got, want = op.infer_meta(*args), op(*args)
        assert got.shape == want.shape and got.shape == tuple(want.shape), op.__name__
        assert got.dtype == want.dtype and got.ndim == len(want.shape)
        assert isinstance(want.shape, list)


def test_environment_knobs_are_read_once_and_set_at_run_time(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", None)
    monkeypatch.setattr(pool, "_limit", None)
    monkeypatch.setenv("PHISPARSE_NUM_THREADS", "3")
    monkeypatch.setenv("PHISPARSE_POOL_BYTES", "12345")
    assert threads.num_threads() == 3 and pool.pool_limit() == 12345
    monkeypatch.setenv("PHISPARSE_NUM_THREADS", "5")
    monkeypatch.setenv("PHISPARSE_POOL_BYTES", "0")
    assert threads.num_threads() == 3 and pool.pool_limit() == 12345    # read once
    assert threads.set_num_threads(2) == 3 and threads.num_threads() == 2
    assert pool.set_pool_bytes(0) == 12345 and pool.pool_limit() == 0
    assert threads.set_num_threads() == 2 and threads.num_threads() == 5  # None: re-read
    assert pool.set_pool_bytes() == 0 and pool.pool_limit() == 0


@pytest.mark.parametrize("module", ["kernels.core.meta", "kernels.core.resolve",
                                    "kernels.funcs.threads", "kernels.funcs.pool"])
def test_docstring_examples_run(module):
    import doctest
    import importlib
    res = doctest.testmod(importlib.import_module(module))
    assert res.failed == 0 and res.attempted > 0


def test_metadata_ids_name_equal_metadata_alike_and_are_never_reused(monkeypatch):
    """``MetaTensor._id`` keys the memos: equal metadata gets one id, other metadata another;
    once the table forgets (it is bounded), metadata seen again gets a new id, so a
    remembered call is missed, never matched to other metadata."""
    from kernels.core import meta as meta_module
    a, b = MetaTensor((2, 3), np.float32), MetaTensor((2, 3), np.dtype("float32"))
    assert a._id == b._id and a.with_(layout="dense")._id == a._id
    assert len({a._id, MetaTensor((2, 3), np.float64)._id, MetaTensor((3, 2), np.float32)._id,
                MetaTensor((2, 3), np.float32, place="gpu")._id}) == 4
    monkeypatch.setattr(meta_module, "ID_TABLE_SIZE", 3)
    seen = {}
    for n in range(1, 12):          # the table forgets several times over
        m = MetaTensor((n,), np.float32)
        assert m._id not in seen.values()
        seen[n] = m._id
        x = dense.to_tensor(np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(dense.sum(x * 2.0).numpy(), np.float32(n * (n - 1)))
    assert MetaTensor((1,), np.float32)._id != seen[1]


def test_a_pickled_metadata_takes_an_id_of_this_process(monkeypatch):
    """``_id`` is not pickled: a copy made in another process (here: after the table
    forgot every id) takes the id of its fields here, never the stale one, which may name
    other metadata now; copies within a process keep theirs."""
    import copy
    import pickle
    from kernels.core import meta as meta_module
    m = MetaTensor((2, 3), np.float32, "sparse_coo", "cpu", 2)
    assert copy.deepcopy(m)._id == m._id == pickle.loads(pickle.dumps(m))._id
    monkeypatch.setattr(meta_module, "_IDS", {})
    other = MetaTensor((7,), np.int64)              # takes a fresh id, never m's
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back._key == m._key
    assert back._id not in (m._id, other._id)
    assert back._id == MetaTensor((2, 3), np.float32, "sparse_coo", "cpu", 2)._id
