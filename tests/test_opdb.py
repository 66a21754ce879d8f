"""Generic suites over the op database: forward, infer-meta and gradients."""
import numpy as np
import pytest

import dense
from kernels.core.dtypes import FLOATS

from opdb import all_ops, complex_vjp, grad_cases, grad_seed, numeric_vjp

OPS = all_ops()


def _tensors(sample, backend, stop_gradient=True):
    return [dense.to_tensor(a, place=backend, stop_gradient=stop_gradient)
            for a in sample.arrays]


def _assert_same(out, ref, dtype):
    ref = np.asarray(ref)
    got = out.numpy()
    assert got.shape == ref.shape
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    if np.dtype(dtype) in FLOATS and np.dtype(dtype).itemsize == 2:
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)
    else:
        # 32-bit results may differ from numpy's in the last bit (SIMD and scalar loops)
        rtol = 1e-12 if got.dtype in (np.float64, np.complex128) else 1e-6
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=0) if got.dtype.kind in "fc" \
            else np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("info", OPS, ids=repr)
def test_forward_matches_reference_for_every_dtype(info, backend):
    rng = np.random.default_rng(0)
    for dtype in info.dtypes:
        for sample in info.samples(dtype, rng):
            before = [a.copy() for a in sample.arrays]
            out = info.op(*_tensors(sample, backend), **sample.attrs)
            _assert_same(out, info.ref(*sample.arrays, **sample.attrs), dtype)
            for a, b in zip(sample.arrays, before):
                np.testing.assert_array_equal(a, b)  # inputs never mutated


@pytest.mark.parametrize("info", OPS, ids=repr)
def test_infer_meta_matches_kernel_output(info, backend):
    rng = np.random.default_rng(1)
    for dtype in info.dtypes:
        for sample in info.samples(dtype, rng):
            xs = _tensors(sample, backend)
            meta = info.op.infer_meta(*xs, *sample.attrs.values())
            out = info.op(*xs, **sample.attrs)
            assert meta == out.meta, (sample, meta, out.meta)
            # infer-meta works on metadata alone
            assert info.op.infer_meta(*[x.meta for x in xs], *sample.attrs.values()) == meta


def _numeric_vjp(info, sample, k, w, dtype):
    """Central differences of the reference: real (:func:`opdb.numeric_vjp`, in float64)
    or complex (:func:`opdb.complex_vjp`, ``g * conj(f'(z))``)."""
    def f(*a):
        return info.ref(*a, **sample.attrs)
    if dtype.kind != "c" and not np.iscomplexobj(w):
        return numeric_vjp(f, [a.astype(np.float64) for a in sample.arrays], k, w)
    grad = complex_vjp(f, sample.arrays, k, w)
    return grad if dtype.kind == "c" else grad.real    # a real input of a complex output


@pytest.mark.parametrize("info,dtype", grad_cases(OPS))
def test_gradient_matches_finite_differences(info, dtype, backend):
    rng = np.random.default_rng(2)
    for sample in info.samples(dtype, rng):
        if not sample.grad:
            continue
        xs = _tensors(sample, backend)
        for k in info.grad_args:
            xs[k].stop_gradient = False
        out = info.op(*xs, **sample.attrs)
        w = grad_seed(out, rng)
        out.backward(dense.to_tensor(w, place=backend))
        for k in info.grad_args:
            expect = _numeric_vjp(info, sample, k, w, dtype)
            assert xs[k].grad is not None and xs[k].grad.shape == list(expect.shape)
            np.testing.assert_allclose(xs[k].grad.numpy(), expect, rtol=1e-6, atol=1e-7)


def test_every_declared_op_has_an_op_database_entry():
    """Step 7 of README's "Adding an op": each op of yaml/ops.yaml has an OpInfo here and
    each op of yaml/sparse_ops.yaml one in tests/sparse_opdb (the generic suites then
    check it); a new op without one fails here, naming it."""
    import os

    import yaml

    import sparse_opdb
    from opdb import ops_of
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "yaml")
    for file, infos in (("ops.yaml", OPS), ("sparse_ops.yaml", ops_of(sparse_opdb))):
        with open(os.path.join(root, file)) as f:
            declared = {e["op"] for e in yaml.safe_load(f) if "op" in e}
        covered = {info.name.split("[")[0].split(" ")[0] for info in infos}
        assert declared <= covered, f"{file}: no op database entry for {sorted(declared - covered)}"
