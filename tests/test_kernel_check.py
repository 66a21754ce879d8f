"""PHISPARSE_CHECK_KERNELS: kernels' outputs checked against their op's infer-meta."""
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from kernels.core import kernel_check
from kernels.core.meta import MetaTensor
from kernels.sparse.data import CooData, CsrData

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = SimpleNamespace(name="my_op")


def _run(kernel, meta):
    return kernel_check.checked(SPEC, kernel, [meta])()


def test_a_dense_output_of_another_dtype_or_shape_names_the_op_and_kernel():
    meta = MetaTensor((2, 3), np.float64)

    def my_kernel():
        return np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"^my_op: kernel .*my_kernel returned an array of "
                                        r"shape \[2, 3\] and dtype float32 \(its infer-meta "
                                        r"says dense of shape \[2, 3\] and dtype float64"):
        _run(my_kernel, meta)
    with pytest.raises(TypeError, match="returned a list, not an array"):
        _run(lambda: [1.0, 2.0], meta)
    out = _run(lambda: np.zeros((2, 3)), meta)           # right: passed through
    assert out.shape == (2, 3)
    assert _run(lambda: np.zeros(4), MetaTensor((-1,), np.float64)).shape == (4,)


def test_sparse_outputs_must_hold_consistent_buffers():
    coo = MetaTensor((3, 4), np.float64, layout="sparse_coo", sparse_dim=2)
    two = np.array([[0, 1], [1, 2]])
    with pytest.raises(TypeError, match=r"an index matrix of shape \[2, 2\] with values of "
                                        r"shape \[1\]"):
        _run(lambda: CooData(two, np.ones(1), (3, 4)), coo)
    with pytest.raises(TypeError, match="not the sparse_coo buffers"):
        _run(lambda: np.ones(2), coo)
    assert _run(lambda: CooData(two, np.ones(2), (3, 4)), coo).values.shape == (2,)
    csr = MetaTensor((2, 3, 4), np.float64, layout="sparse_csr")
    crows = np.array([0, 1, 2, 2, 0, 0, 1, 1])             # batches of 2 and 1 entries
    assert _run(lambda: CsrData(crows, np.zeros(3, int), np.ones(3), (2, 3, 4)),
                csr).values.shape == (3,)
    with pytest.raises(TypeError, match="ending at 3 entries"):
        _run(lambda: CsrData(crows, np.zeros(4, int), np.ones(4), (2, 3, 4)), csr)
    with pytest.raises(TypeError, match=r"5 row pointers for shape \[2, 3, 4\]"):
        _run(lambda: CsrData(crows[:5], np.zeros(3, int), np.ones(3), (2, 3, 4)), csr)
    hybrid = MetaTensor((3, 4), np.float64, layout="sparse_coo", sparse_dim=1)
    with pytest.raises(TypeError, match="an index matrix of 2 rows for sparse_dim 1"):
        _run(lambda: CooData(two, np.ones(2), (3, 4)), hybrid)


def test_a_python_scalar_result_is_taken_as_a_0d_array():
    assert _run(lambda: 2.5, MetaTensor((), np.float64)) == 2.5


def test_the_library_runs_with_the_check_on():
    """Every kernel a few ops bind passes the check (the test suite passes with it on)."""
    code = ("import numpy as np, dense, sparse; from kernels.core import kernel_check; "
            "assert kernel_check.ENABLED; "
            "x = dense.to_tensor(np.arange(6.0).reshape(2, 3), stop_gradient=False); "
            "s = x.to_sparse_csr(); y = sparse.sum(sparse.multiply(s, x) + s); "
            "dense.sum(dense.concat([x, x]) * 2.0).backward(); print(y.shape)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PHISPARSE_CHECK_KERNELS="1", PYTHONPATH=ROOT))
    assert res.returncode == 0, res.stderr
