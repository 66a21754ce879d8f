"""Global tensors in one process (a one-rank world): sbp values, shard math,
signature tables, the ``sbp:`` YAML field and the one-rank runtime.

The multi-rank runs are in tests/test_global_mpi.py.
"""
import dataclasses
import os

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import dense
import sparse
from kernels.codegen import load_yaml_dir
from kernels.codegen.loader import CodegenError, Located
from kernels.codegen.sbp import SplitPattern, check_sbp, parse_sbp
from kernels.core import dispatch
from kernels.core.dist import rules
from kernels.core.dist.runtime import canonical_attrs
from kernels.core.dist.sbp import shard_shape, shard_sizes, shard_start
from kernels.core.meta import MetaTensor

S, B, P = dense.sbp.split, dense.sbp.broadcast, dense.sbp.partial_sum
YAML = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "yaml")


# ---------------------------------------------------------------- sbp and shards
def test_sbp_values():
    assert S(2) == S(2) and S(2) != S(1) and B != P
    assert repr(S(1)) == "sbp.split(axis=1)" and repr(B) == "sbp.broadcast"
    assert B.dual() == P and P.dual() == B and S(3).dual() == S(3)
    for bad in (1.0, True, None):
        with pytest.raises(TypeError, match="sbp.split"):
            S(bad)


@given(st.integers(0, 50), st.integers(1, 9))
def test_shards_follow_array_split(n, parts):
    pieces = np.array_split(np.arange(n), parts)
    assert shard_sizes(n, parts) == [len(p) for p in pieces]
    for r, p in enumerate(pieces):
        assert shard_start(n, parts, r) == (p[0] if len(p) else n - sum(
            len(q) for q in pieces[r:]))
    assert shard_shape((4, n), S(1), parts, parts - 1) == (4, len(pieces[-1]))
    assert shard_shape((4, n), P, parts, 0) == (4, n)


def test_placement_one_rank():
    p = dense.placement()
    assert p.ranks == [0] and p.size == 1 and p.is_member and p == dense.placement([0])
    with pytest.raises(ValueError, match="placement"):
        dense.placement([1])
    with pytest.raises(TypeError, match="placement"):
        dense.placement(["a"])


# ---------------------------------------------------------------- signature tables
def _sigs(ns, name, *args, **kwargs):
    """{(input sbps, output sbp)} that op ``ns.name`` allows for these inputs."""
    spec = dispatch.get_op(ns, name)
    n = len(spec.tensor_args)
    tensors = [MetaTensor(s, np.int64) if isinstance(s, tuple) else s for s in args[:n]]
    attrs = dispatch._attrs(spec, list(args[n:]) + [kwargs[a.name] for a in
                                                    spec.attr_args[len(args) - n:]
                                                    if a.name in kwargs])
    outs = dispatch.infer(spec, tensors, attrs)
    attrs = canonical_attrs(spec, tensors, attrs)          # as the global path does
    return {(s.ins if n > 1 else s.ins[0], s.outs[0])
            for s in rules.candidates(spec, tensors, attrs, outs)}


def test_expand_signatures_article_example():
    got = _sigs("dense", "expand", (4, 3, 1, 2), [2, 4, 3, 4, 2])
    assert got == {(B, B), (S(0), S(1)), (S(1), S(2)), (S(3), S(4)), (P, P)}


def test_repeat_signatures():
    got = _sigs("dense", "repeat", (5, 3, 4), [2, 1, 1, 3])
    assert got == {(B, B), (S(0), S(1)), (S(1), S(2)), (P, P)}


def test_reshape_signatures():
    assert _sigs("dense", "reshape", (5, 3, 4), [5, 12]) == {(B, B), (S(0), S(0)), (P, P)}
    assert _sigs("dense", "reshape", (5, 3, 4), [5, 3, 2, 2]) == {
        (B, B), (S(0), S(0)), (S(1), S(1)), (P, P)}


def test_sum_signatures():
    assert _sigs("dense", "sum", (5, 3, 7), [1]) == {
        (B, B), (S(0), S(0)), (S(1), P), (S(2), S(1)), (P, P)}
    assert _sigs("dense", "sum", (5, 3, 7), [-1], True) == {
        (B, B), (S(0), S(0)), (S(1), S(1)), (S(2), P), (P, P)}
    assert _sigs("dense", "sum", (5, 3), None) == {(B, B), (S(0), P), (S(1), P), (P, P)}


def test_gather_signatures():
    index = MetaTensor((2, 3), np.int64)                     # k = 2, batch_dims 0
    assert _sigs("dense", "gather", (5, 4, 6), index, 1) == {
        ((B, B), B),
        ((B, S(0)), S(1)), ((B, S(1)), S(2)),                # index split(i): axis + i
        ((S(0), B), S(0)),                                   # x split before the axis
        ((S(1), B), P),                                      # on the axis: partial_sum
        ((S(2), B), S(3)),                                   # after it: d + k - bd - 1
        ((P, B), P)}
    batch = MetaTensor((5, 3), np.int64)                     # batch_dims 1, axis 2
    want = {((B, B), B), ((B, S(1)), S(2)), ((S(0), S(0)), S(0)), ((S(1), B), S(1)),
            ((S(2), B), P), ((P, B), P)}
    assert _sigs("dense", "gather", (5, 4, 6), batch, 2, 1) == want
    # negative and default axes and batch_dims reach the rules canonical
    assert _sigs("dense", "gather", (5, 4, 6), batch, -1, -1) == want
    assert _sigs("dense", "gather", (5, 4, 6), MetaTensor((5,), np.int64), None, 0) == {
        ((B, B), B), ((B, S(0)), S(0)), ((S(0), B), P), ((S(1), B), S(1)),
        ((S(2), B), S(2)), ((P, B), P)}


def test_batch_gather_signatures():
    index = MetaTensor((4, 3, 3), np.int64)                  # k = 3: axis = bd = 2
    assert _sigs("dense", "batch_gather", (4, 3, 5, 2), index) == {
        ((B, B), B), ((B, S(2)), S(2)),                      # not partial_sum
        ((S(0), S(0)), S(0)), ((S(1), S(1)), S(1)),          # split batch dims
        ((S(2), B), P), ((S(3), B), S(3)), ((P, B), P)}


def test_bool_is_never_partial_sum():
    x = MetaTensor((4, 3), np.bool_)
    got = _sigs("dense", "expand", x, [2, 4, 3])
    assert (P, P) not in got and (S(0), S(1)) in got


def test_partial_sum_stays_only_where_the_output_dtype_keeps_sums():
    """An addend promoted before the local op loses the wrap or rounding of the
    all-reduce in its own dtype, so such rules box the partial_sum input first."""
    i8, i16 = MetaTensor((4, 3), np.int8), MetaTensor((4, 3), np.int16)
    f32 = MetaTensor((4, 3), np.float32)
    assert ((P, P), P) in _sigs("dense", "add", i8, i8)
    assert ((P, P), P) not in _sigs("dense", "add", i8, i16)
    assert (P, P) not in _sigs("dense", "sum", i8, None)         # int8 sums to int64
    assert (P, P) in _sigs("dense", "cast", f32, "complex64")
    assert (P, P) not in _sigs("dense", "cast", f32, "float64")
    assert (P, P) in _sigs("dense", "cast", MetaTensor((4,), np.int32), "int8")


@pytest.mark.parametrize("src, dst, addends", [
    ("int8", "int16", [100, 100]),            # -56 in int8, 200 in int16
    ("int8", "float64", [100, 100]),
    ("int64", "float64", [2 ** 62, 2 ** 62]), # -2**63 in int64
    ("float32", "float64", [3e38, 3e38]),     # inf in float32
    ("float32", "float64", [1.0, 2 ** -30]),  # float32 rounds the sum to 1
    ("float64", "float32", [1e39, -1e39]),    # each addend overflows
    ("float64", "int64", [0.5, 0.5]),         # each addend truncates
])
def test_cast_keeps_sums_refuses_a_pair_with_a_witness(src, dst, addends):
    a = np.array(addends, dtype=src)
    with np.errstate(over="ignore", invalid="ignore"):
        summed = np.add.reduce(a, dtype=src).astype(dst)
        cast = np.add.reduce(a.astype(dst), dtype=dst)
    assert summed != cast
    assert not rules.cast_keeps_sums(np.dtype(src), np.dtype(dst))


@pytest.mark.parametrize("src, dst", [("int16", "int8"), ("uint8", "int8"), ("int32", "int32"),
                                      ("float32", "complex64"), ("complex128", "float64"),
                                      ("float64", "float64")])
def test_cast_keeps_sums_on_random_addends(src, dst):
    rng = np.random.default_rng(7)
    raw = rng.integers(-2 ** 15, 2 ** 15, (50, 3)) if np.dtype(src).kind in "iu" else \
        rng.standard_normal((50, 3)) * 1e5
    a = raw.astype(src)
    summed = np.add.reduce(a, axis=1, dtype=src)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.testing.assert_array_equal(summed.astype(dst),
                                      np.add.reduce(a.astype(dst), axis=1, dtype=dst))
    assert rules.cast_keeps_sums(np.dtype(src), np.dtype(dst))


def test_sparse_reshape_signatures():
    x = MetaTensor((6, 4), np.float64, "sparse_coo", sparse_dim=2)
    assert _sigs("sparse", "reshape", x, [3, 8]) == {(B, B), (P, P)}


def _metas(*shapes, **kw):
    return [MetaTensor(s, kw.get("dtype", np.int64), kw.get("layout", "dense"),
                       sparse_dim=kw.get("sparse_dim")) for s in shapes]


def test_concat_signatures_split_any_axis_but_the_concat_axis():
    xs = _metas((2, 5, 7), (3, 5, 7))
    want = {(B, B), (S(1), S(1)), (S(2), S(2)), (P, P)}
    assert _sigs("dense", "concat", xs, 0) == want
    assert _sigs("dense", "concat", xs, -3) == want
    assert _sigs("dense", "concat", _metas((4, 2), (4, 3)), -1) == {(B, B), (S(0), S(0)),
                                                                    (P, P)}
    assert (P, P) not in _sigs("dense", "concat", _metas((2, 3), (2, 3), dtype=bool), 0)


def test_stack_signatures_shift_the_axes_from_the_new_one_on():
    xs = _metas((5, 3), (5, 3), (5, 3))
    assert _sigs("dense", "stack", xs, 0) == {(B, B), (S(0), S(1)), (S(1), S(2)), (P, P)}
    assert _sigs("dense", "stack", xs, 1) == {(B, B), (S(0), S(0)), (S(1), S(2)), (P, P)}
    assert _sigs("dense", "stack", xs, -1) == {(B, B), (S(0), S(0)), (S(1), S(1)), (P, P)}


def test_sparse_sum_signatures_follow_the_dims_kept():
    x = MetaTensor((5, 3, 7), np.float64, "sparse_coo", sparse_dim=2)   # dim 2 is dense
    assert _sigs("sparse", "sum", x, [1]) == {(B, B), (S(0), S(0)), (S(1), P), (P, P)}
    assert _sigs("sparse", "sum", x, [0, 1]) == {(B, B), (S(0), P), (S(1), P), (P, P)}
    assert _sigs("sparse", "sum", x, [0, 1], None, True) == {(B, B), (S(0), P), (S(1), P),
                                                            (P, P)}
    y = MetaTensor((5, 3, 7), np.float64, "sparse_coo", sparse_dim=3)
    assert _sigs("sparse", "sum", y, [1]) == {(B, B), (S(0), S(0)), (S(1), P), (S(2), S(1)),
                                              (P, P)}
    assert _sigs("sparse", "sum", y, [1], None, True) == {(B, B), (S(0), S(0)), (S(1), P),
                                                          (S(2), S(2)), (P, P)}

def test_sparse_list_signatures_split_sparse_dims_only():
    # hybrid COO (2 sparse dims, 1 dense): a split of the dense dim 2 never matches
    xs = _metas((4, 5, 3), (2, 5, 3), dtype=np.float64, layout="sparse_coo", sparse_dim=2)
    assert _sigs("sparse", "concat", xs, 0) == {(B, B), (S(1), S(1)), (P, P)}
    assert _sigs("sparse", "stack", _metas((4, 5, 3), (4, 5, 3), dtype=np.float64,
                                          layout="sparse_coo", sparse_dim=2), 0) == {
        (B, B), (S(0), S(1)), (S(1), S(2)), (P, P)}


def test_a_split_list_matches_only_when_its_elements_align():
    """One S(i) for the list: every element split along i, so their sizes along i
    must agree (each rank then holds the same range of each); a rule without a
    condition still never splits an axis along which the elements differ."""
    spec = dispatch.get_op("dense", "concat")
    bare = dataclasses.replace(spec, sbp=rules.SbpTable(
        (rules.SbpRule((("S", "i"),), lambda e: (rules.S(e.i),), None, "S(i) -> S(i)"),)))
    xs = _metas((2, 5), (3, 5))
    outs = dispatch.infer(bare, [xs], [0])
    got = {s.ins[0] for s in rules.candidates(bare, [xs], [0], outs)}
    assert got == {B, S(1)}


def test_global_concat_and_stack_one_rank():
    a = dense.to_tensor(np.arange(6.0).reshape(2, 3), stop_gradient=False)
    b = dense.to_tensor(np.arange(9.0).reshape(3, 3), stop_gradient=False)
    out = dense.concat([a.to_global(sbp=S(1)), b], axis=0)   # b: a local, taken as broadcast
    assert out.is_global and out.sbp == S(1)
    assert np.array_equal(out.numpy(), np.concatenate([a.numpy(), b.numpy()]))
    seed = np.arange(15.0).reshape(5, 3)
    out.backward(dense.to_tensor(seed))
    assert np.array_equal(a.grad.numpy(), seed[:2]) and np.array_equal(b.grad.numpy(), seed[2:])
    st = dense.stack([a.to_global(sbp=S(1)), a.to_global(sbp=S(1))], axis=-1)
    assert st.sbp == S(1) and np.array_equal(st.numpy(), np.stack([a.numpy()] * 2, -1))
    coo = sparse.sparse_coo_tensor(np.array([[0, 1], [1, 2]]), np.array([1.0, 2.0]), [2, 3])
    sc = sparse.concat([coo.to_global(sbp=S(1)), coo.to_global(sbp=S(1))], axis=0)
    assert sc.sbp == S(1) and sc.is_sparse_coo()
    assert np.array_equal(sc.to_dense().numpy(), np.concatenate([coo.to_dense().numpy()] * 2))
    with pytest.raises(ValueError, match="concat: tensor 1 has shape"):
        dense.concat([a.to_global(sbp=S(0)), dense.to_tensor(np.zeros((2, 4)))], axis=0)


# ---------------------------------------------------------------- the sbp: field
def _op(name, ns="dense"):
    return next(d for d in load_yaml_dir(YAML) if d.name == name and d.namespace == ns
                and not d.is_backward)


def _field(rules_, **extra):
    value = {"rules": Located([Located(r, "t.yaml", 9) for r in rules_], "t.yaml", 8)}
    value.update({k: Located(v if isinstance(v, str) else
                             {n: Located(t, "t.yaml", 10) for n, t in v.items()}, "t.yaml", 10)
                  for k, v in extra.items()})
    return Located(value, "t.yaml", 7)


def test_sbp_field_parses_rules():
    sbp = parse_sbp(_field(["S(i) -> S(i if keepdim else i - 1) if i > 0", "P -> P"]))
    first = sbp.rules[0]
    assert first.ins == (SplitPattern("i"),) and first.cond == "i > 0"
    assert first.outs == ("S(i if keepdim else i - 1)",)


@pytest.mark.parametrize("rule, message", [
    ("S(i) S(j)", "must read"),
    ("Q -> B", "must be S\\(name\\), B or P"),
    ("S(1) -> B", "must be S\\(name\\), B or P"),
    ("B -> split(0)", "must be S\\(expression\\), B or P"),
    ("B -> B if (", "not an expression"),
])
def test_sbp_field_syntax_errors(rule, message):
    with pytest.raises(CodegenError, match="t.yaml:9: sbp: .*" + message):
        parse_sbp(_field([rule]))


@pytest.mark.parametrize("extra, message", [
    ({"let": {"lead": "1"}}, "unknown key 'let'; allowed: rules, physical"),
    ({"local": {"forward": "f"}}, "unknown key 'local'"),
    ({"physical": {"shape": "out_local.shape"}}, "physical must name a function"),
])
def test_sbp_field_has_rules_and_a_physical_function_only(extra, message):
    with pytest.raises(CodegenError, match="t.yaml:10: sbp: " + message):
        parse_sbp(_field(["P -> P"], **extra))


@pytest.mark.parametrize("rules_, extra, message", [
    (["B, B -> B"], {}, "has 2 inputs and 1 outputs; the op has 1 Tensor"),
    (["S(i) -> S(j)"], {}, "uses 'j'"),
    (["S(i) -> S(i) if x.data[i]"], {}, "reads '.data'"),
    (["S(i) -> S(i) if [a for a in shape]"], {}, "ListComp is not allowed"),
    (["S(i) -> S(i) if kernels.funcs.missing(x)"], {}, "calls 'kernels.funcs.missing'"),
    (["P -> P"], {"physical": "no_such_rule"}, "physical function 'no_such_rule' does not "),
    (["P -> P"], {"physical": "kernels.funcs.missing"}, "physical function .* does not exist"),
])
def test_sbp_field_name_errors(rules_, extra, message):
    op = dataclasses.replace(_op("expand"), sbp=parse_sbp(_field(rules_, **extra)))
    with pytest.raises(CodegenError, match=message):
        check_sbp(op)


def test_sbp_field_on_a_tensor_list_reads_elements():
    op = _op("concat")
    assert [r.text for r in op.sbp.rules][0] == "S(i) -> S(i) if i != norm_axis(axis, xs[0].ndim)"
    check_sbp(op)
    for rule, message in [
        ("S(i) -> S(i) if i != norm_axis(axis, xs.ndim)",
         r"reads 'xs.ndim', but 'xs' is a Tensor\[\] .*read an element, e.g. 'xs\[0\].ndim'"),
        ("S(i), S(i) -> S(i)",
         r"has 2 inputs .* \(a Tensor\[\] argument, \['xs'\], takes one pattern"),
    ]:
        bad = dataclasses.replace(op, sbp=parse_sbp(_field([rule])))
        with pytest.raises(CodegenError, match="t.yaml:9: sbp: .*" + message):
            check_sbp(bad)
    bad = dataclasses.replace(op, sbp=parse_sbp(_field(["P -> P"], physical="shard_out_shape")))
    with pytest.raises(CodegenError, match=r"t.yaml:7: sbp: physical is not supported on an "
                                           r"op with a Tensor\[\] argument \(\['xs'\]\)"):
        check_sbp(bad)


def test_generated_tables_are_attached():
    assert dispatch.get_op("dense", "expand").sbp.rules[0].text.startswith("S(i) ->")
    assert dispatch.get_op("dense", "expand_grad").sbp is None


# ---------------------------------------------------------------- one-rank runtime
def test_to_global_round_trip_one_rank():
    x = dense.to_tensor(np.arange(12).reshape(3, 4))
    g = x.to_global(placement=dense.placement(), sbp=S(1))
    assert g.is_global and g.sbp == S(1) and g.placement == dense.placement()
    assert g.shape == [3, 4] and g.ndim == 2 and g.dtype == np.int64
    assert np.array_equal(g.numpy(), x.numpy())
    assert np.array_equal(g.to_local().numpy(), x.numpy())
    assert x.sbp is None and x.placement is None and x.to_local() is x
    y = g.reshape(4, 3)                       # Tensor methods work on global tensors
    assert y.is_global and np.array_equal(y.numpy(), x.numpy().reshape(4, 3))
    assert "GlobalTensor(shape=[3, 4]" in repr(g)


def test_to_global_errors():
    x = dense.to_tensor(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="needs an sbp"):
        x.to_global()
    with pytest.raises(ValueError, match="out of range"):
        x.to_global(sbp=S(2))
    with pytest.raises(TypeError, match="bool tensor cannot be partial_sum"):
        dense.to_tensor(np.zeros(2, bool)).to_global(sbp=P)
    coo = sparse.sparse_coo_tensor(np.array([[0, 1]]), np.ones((2, 3)), [2, 3])
    with pytest.raises(ValueError, match="only along a sparse dim"):
        coo.to_global(sbp=S(1))
    with pytest.raises(TypeError, match="sparse_csr tensor cannot be global"):
        coo.to_dense().to_sparse_csr().to_global(sbp=B)
    with pytest.raises(TypeError, match="to_sparse_csr: a sparse_csr tensor cannot be global"):
        coo.to_global(sbp=P).to_sparse_csr()


def test_sparse_conversions_keep_partial_sum_and_split():
    # each is linear in the logical tensor, so it runs shard by shard
    i = np.array([[0, 1, 1], [2, 0, 0]])
    coo = sparse.sparse_coo_tensor(i, np.array([1.0, 2.0, 4.0]), [2, 3])
    want = np.zeros((2, 3))
    np.add.at(want, tuple(i), [1.0, 2.0, 4.0])
    for sbp in (P, S(0), S(1)):
        g = coo.to_global(sbp=sbp)
        d = sparse.to_dense(g)
        for out in (d, g.to_dense(), sparse.coalesce(g).to_dense(),
                    d.to_sparse_coo(1).to_dense(), sparse.to_sparse_coo(d, 2).to_dense()):
            assert np.array_equal(out.numpy(), want)
        assert d.sbp == sbp and sparse.coalesce(g).sbp == sbp
        if sbp == P:
            # a dense partial_sum is reduced first (to a split, the cheaper move): each
            # addend's nonzero pattern differs from the sum's (hardening item 20)
            assert sparse.to_sparse_coo(d, 2).sbp == d.to_sparse_coo(1).sbp == S(0)
            continue
        assert sparse.to_sparse_coo(d, 2).sbp == sbp
        # a split on a dim that becomes dense is boxed first (to broadcast, the cheaper move)
        assert d.to_sparse_coo(1).sbp == (B if sbp == S(1) else sbp)
        assert g.is_sparse_coo() and not g.is_sparse_csr() and g.sparse_dim() == 2


def test_global_errors_come_from_logical_infer_meta():
    g = dense.to_tensor(np.zeros((2, 3))).to_global(sbp=S(0))
    with pytest.raises(ValueError, match="reshape"):
        dense.reshape(g, [5])


def test_mixed_local_input_is_broadcast_and_gradients_flow():
    x = dense.to_tensor(np.arange(6.0).reshape(2, 3), stop_gradient=False)
    g = x.to_global(sbp=S(0))
    out = dense.sum(g)
    assert out.sbp == P and out.item() == 15.0
    out.backward()
    assert np.array_equal(x.grad.numpy(), np.ones((2, 3)))


def test_global_coo_counts_entries_and_points_to_the_shard_for_its_arrays():
    coo = sparse.sparse_coo_tensor(np.array([[0, 1, 1]]), np.ones(3), [2])
    g = coo.to_global(sbp=P)
    assert g.nnz() == 3
    for name in ("indices", "values"):
        with pytest.raises(TypeError, match=f"{name}: .* use g.to_local"):
            getattr(g, name)()


def test_negative_split_axis_counts_from_the_end():
    x = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    g = x.to_global(sbp=S(-1))
    assert g.sbp == S(1) and np.array_equal(g.numpy(), x.numpy())
    assert g.to_global(sbp=S(-2)).sbp == S(0)
    with pytest.raises(ValueError, match=r"expected an axis in \[-2, 2\)"):
        x.to_global(sbp=S(-3))
    with pytest.raises(TypeError, match="must be an int"):
        S(1.0)


def test_large_counts_need_an_mpi4_library(monkeypatch):
    """A block past 2**31 - 1 bytes goes through mpi4py's large-count calls on an
    MPI-4 library and raises a clear OverflowError on an older one."""
    pytest.importorskip("mpi4py")
    from kernels.core.dist import comm
    comm.check_counts([comm.INT_MAX], [0])              # fits a C int: always fine
    monkeypatch.setattr(comm, "large_count_version", lambda: (4, 0))
    comm.check_counts([comm.INT_MAX + 1], [0])
    monkeypatch.setattr(comm, "large_count_version", lambda: (3, 1))
    with pytest.raises(OverflowError, match=r"large-count.*version \(3, 1\)"):
        comm.check_counts([5], [comm.INT_MAX + 1])


def test_owner_of_matches_array_split():
    """The owner arithmetic of sparse routing agrees with numpy.array_split."""
    from kernels.core.dist.boxing import owner_of
    for n in (0, 1, 5, 7, 64, 1000):
        for size in (1, 2, 3, 8, 13):
            parts = np.array_split(np.arange(n), size)
            want = np.concatenate([np.full(len(p), r) for r, p in enumerate(parts)])
            np.testing.assert_array_equal(owner_of(np.arange(n), n, size), want)
