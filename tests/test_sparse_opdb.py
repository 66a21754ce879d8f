"""Generic suite over the sparse op database (tests/sparse_opdb).

For every entry and sample: forward against the numpy reference on the dense
form (every dtype), infer-meta against the output (with and without data),
finite-difference gradients on stored values and dense entries, sparse
against dense, inputs never mutated, and the coalesced flag true to the data.
"""
import numpy as np
import pytest

import dense

from opdb import complex_vjp, grad_cases, grad_seed, numeric_vjp
from sparse_opdb import SparseArg, all_ops, dense_of, tensor_of

OPS = all_ops()


def _tensors(sample, backend, stop_gradient=True):
    return [tensor_of(a, backend, stop_gradient) for a in sample.args]


def _dense_form(out):
    return (out.to_dense() if out.layout != "dense" else out).numpy()


def _assert_close(got, ref, dtype):
    """Equal shapes and dtypes; values to the precision of the inputs' dtype ``dtype``."""
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    kinds = {np.dtype(dtype).kind, got.dtype.kind}
    if kinds & set("fc"):
        inexact = [d for d in (np.dtype(dtype), got.dtype) if d.kind in "fc"]
        tol = max(1e-12, max(np.finfo(d).resolution for d in inexact) * 20)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, ref)


def _buffers(t):
    if t.layout == "sparse_coo":
        return [t.indices().numpy(), t.values().numpy()]
    if t.layout == "sparse_csr":
        return [t.crows().numpy(), t.cols().numpy(), t.values().numpy()]
    return [t.numpy()]


def _arrays(arg):
    if isinstance(arg, SparseArg):
        return [a for a in (arg.indices, arg.crows, arg.cols, arg.values) if a is not None]
    return [arg]


def _check_coalesced_flag(out):
    if out.layout != "sparse_coo" or not out.is_coalesced():
        return
    idx = out.indices().numpy()
    keys = np.ravel_multi_index(tuple(idx), out.shape[:idx.shape[0]]) if idx.size else idx[0]
    assert np.all(np.diff(keys) > 0), "flagged coalesced but coordinates repeat or are unsorted"


@pytest.mark.parametrize("info", OPS, ids=repr)
def test_forward_matches_reference_for_every_dtype(info, backend):
    rng = np.random.default_rng(0)
    for dtype in info.dtypes:
        for sample in info.samples(dtype, rng):
            before = [a.copy() for arg in sample.args for a in _arrays(arg)]
            xs = _tensors(sample, backend)
            held = [b for x in xs for b in _buffers(x)]
            out = info.op(*xs, **sample.attrs)
            _assert_close(_dense_form(out), info.ref(*sample.args, **sample.attrs), dtype)
            _check_coalesced_flag(out)
            after = [a for arg in sample.args for a in _arrays(arg)]
            for a, b in zip(before + held, after + [b for x in xs for b in _buffers(x)]):
                np.testing.assert_array_equal(a, b)  # inputs never mutated


def _known(meta, out):
    """``meta`` with its unknown dims (-1: a size only the data gives, such as the nnz of
    values()) taken from ``out``, the rest as inferred."""
    if len(meta.shape) != len(out.shape) or -1 not in meta.shape:
        return meta
    return meta.with_(shape=tuple(o if m == -1 else m for m, o in zip(meta.shape, out.shape)))


@pytest.mark.parametrize("info", OPS, ids=repr)
def test_infer_meta_matches_output(info, backend):
    rng = np.random.default_rng(1)
    for dtype in info.dtypes:
        for sample in info.samples(dtype, rng):
            xs = _tensors(sample, backend)
            meta = info.op.infer_meta(*xs, **sample.attrs)
            out = info.op(*xs, **sample.attrs)
            assert _known(meta, out.meta) == out.meta, (sample, meta, out.meta)
            assert info.op.infer_meta(*[x.meta for x in xs], **sample.attrs) == meta


@pytest.mark.parametrize("info", [i for i in OPS if i.dense_op is not None], ids=repr)
def test_sparse_matches_dense_op(info, backend):
    rng = np.random.default_rng(3)
    for dtype in info.dtypes:
        for sample in info.samples(dtype, rng):
            out = info.op(*_tensors(sample, backend), **sample.attrs)
            dense_in = [dense.to_tensor(dense_of(a), place=backend) for a in sample.args]
            expect = info.dense_op(*dense_in, **sample.attrs)
            _assert_close(_dense_form(out), _dense_form(expect), dtype)


def _numeric_grad(info, sample, k, w, dtype):
    """Finite differences on a sparse operand's stored values or a dense operand's
    entries: real (float64), or complex (``g * conj(f'(z))``, :func:`opdb.complex_vjp`)
    for complex operands or outputs."""
    arg = sample.args[k]
    sparse_arg = isinstance(arg, SparseArg)
    base = arg.values if sparse_arg else np.asarray(arg)

    def f(*args):
        args = list(args)
        args[k] = arg.with_values(args[k]) if sparse_arg else args[k]
        return info.ref(*args, **sample.attrs)
    if dtype.kind != "c" and not np.iscomplexobj(w):
        return numeric_vjp(f, sample.args[:k] + (base.astype(np.float64),) + sample.args[k + 1:],
                           k, w)
    grad = complex_vjp(f, sample.args[:k] + (base,) + sample.args[k + 1:], k, w)
    return grad if dtype.kind == "c" else grad.real    # a real input of a complex output


def _check_sparse_grad(x, grad, expect):
    assert grad is not None and grad.layout == x.layout, "a sparse gradient keeps the layout"
    for a, b in zip(_buffers(grad)[:-1], _buffers(x)[:-1]):
        np.testing.assert_array_equal(a, b)  # the pattern, entry for entry
    np.testing.assert_allclose(grad.values().numpy(), expect, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("info,dtype", grad_cases(OPS))
def test_gradient_matches_finite_differences(info, dtype, backend):
    """float64 and complex128 operands (a complex ``scale`` once gave ``g * scale`` where
    ``g * conj(scale)`` is the gradient)."""
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
            expect = _numeric_grad(info, sample, k, w, dtype)
            if isinstance(sample.args[k], SparseArg):
                _check_sparse_grad(xs[k], xs[k].grad, expect)
            else:
                assert xs[k].grad is not None and xs[k].grad.layout == "dense"
                np.testing.assert_allclose(xs[k].grad.numpy(), expect, rtol=1e-6, atol=1e-7)
