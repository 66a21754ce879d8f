"""Regression tests of the third hostile-input round: metadata and the kernel registry.

The public MetaTensor constructor checks its fields, register_kernel checks its
arguments, and a kernel registered under a built-in name before the built-in's
op has run is refused (the built-in kernels load lazily) instead of taking the
name and breaking the built-ins.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dense
import kernels
import sparse
from kernels.core import registry

ROOT = Path(__file__).resolve().parents[1]

BAD_META = [
    (("ab", "float64"), {}, TypeError, r"^MetaTensor: shape must be a tuple or list of ints, "
                                       r"got 'ab'"),
    ((None, "float64"), {}, TypeError, r"^MetaTensor: shape must be a tuple or list of ints"),
    (((2.0, 3), "float64"), {}, TypeError, r"^MetaTensor: shape \[2\.0, 3\] holds 2\.0 "
                                           r"\(float\); expected ints"),
    (((True, 3), "float64"), {}, TypeError, r"^MetaTensor: shape \[True, 3\] holds True"),
    (((-2, 3), "float64"), {}, ValueError, r"^MetaTensor: shape \[-2, 3\] has a negative dim "
                                           r"-2; expected sizes >= 0, or -1 for an unknown dim"),
    (((2,), "foo"), {}, TypeError, r"^MetaTensor: dtype 'foo' is not a dtype; expected one of"),
    (((2,), object), {}, TypeError, r"^MetaTensor: dtype object is not supported; expected"),
    (((2,), "float64"), {"layout": "weird"}, ValueError,
     r"^MetaTensor: layout 'weird' is not one of \['dense', 'sparse_coo', 'sparse_csr'\]"),
    (((2,), "float64"), {"layout": None}, TypeError, r"^MetaTensor: layout None is not one of"),
    (((2,), "float64"), {"place": "tpu"}, ValueError,
     r"^MetaTensor: place 'tpu' is not one of \['cpu', 'gpu'\]"),
    (((2, 3), "float64"), {"layout": "sparse_coo", "sparse_dim": -1}, ValueError,
     r"^MetaTensor: sparse_dim -1 is out of range for a sparse_coo tensor of rank 2; "
     r"expected an int in \[1, 2\]"),
    (((2, 3), "float64"), {"layout": "sparse_coo", "sparse_dim": 3}, ValueError,
     r"^MetaTensor: sparse_dim 3 is out of range"),
    (((2, 3), "float64"), {"layout": "sparse_coo", "sparse_dim": 1.0}, TypeError,
     r"^MetaTensor: sparse_dim 1\.0 of a sparse_coo tensor must be None or an int in "
     r"\[1, 2\]"),
    (((2, 3), "float64"), {"sparse_dim": 1}, ValueError,
     r"^MetaTensor: sparse_dim 1 is given for a dense tensor; expected None"),
    (((2, 3), "float64"), {"layout": "sparse_csr", "sparse_dim": 2}, ValueError,
     r"^MetaTensor: sparse_dim 2 is given for a sparse_csr tensor"),
]


@pytest.mark.parametrize("args,kw,exc,message", BAD_META,
                         ids=[m[3][1:40] for m in BAD_META])
def test_meta_tensor_checks_its_fields_by_name(args, kw, exc, message):
    with pytest.raises(exc, match=message):
        dense.MetaTensor(*args, **kw)


def test_meta_tensor_keeps_what_the_library_makes():
    """-1 (an unknown dim, as a values tensor's nnz), numpy ints, a byte-swapped dtype and
    each layout with its sparse_dim are accepted, normalised as before."""
    m = dense.MetaTensor([np.int64(2), 3], ">f8")
    assert m.shape == (2, 3) and type(m.shape[0]) is int and m.dtype == np.float64
    assert m == dense.MetaTensor((2, 3), np.float64)
    assert dense.MetaTensor((-1, 3), np.float32).shape == (-1, 3)
    coo = dense.MetaTensor((4, 6), "float32", "sparse_coo", "gpu", np.int64(1))
    assert type(coo.sparse_dim) is int and coo.sparse_dim == 1
    s = sparse.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], [2, 3])
    values = sparse.values.infer_meta(s)
    assert values.shape == (-1,)
    assert dense.MetaTensor(*values._key) == values
    for t in (s, s.to_sparse_csr(), dense.ones([2, 3])):
        assert dense.MetaTensor(*t.meta._key) == t.meta


def test_infer_meta_refuses_a_bad_meta_before_any_work():
    with pytest.raises(ValueError, match=r"^MetaTensor: shape \[-5, 2\] has a negative dim"):
        dense.add.infer_meta(dense.MetaTensor((-5, 2), "float64"), dense.ones([2]))


REGISTER_FIRST = """
import numpy as np
import kernels, dense
try:
    kernels.register_kernel({args})(lambda x, y: x)
except ValueError as exc:
    print(exc)
print(dense.multiply(dense.ones([2]), dense.ones([2])).numpy().tolist(),
      dense.add(dense.ones([2]), dense.ones([2])).numpy().tolist())
"""


def _fresh(code):
    """Run ``code`` in a fresh interpreter, where no built-in kernel module is loaded yet."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout.splitlines()


def test_a_builtin_name_is_refused_before_its_op_has_run():
    refused, results = _fresh(REGISTER_FIRST.format(args="'add'"))
    assert refused.startswith("register_kernel: kernel 'add' (cpu, dense, bool) is already "
                              "registered by kernels.dense.elementwise; pick another name "
                              "or pass override=True")
    assert results == "[1.0, 1.0] [2.0, 2.0]"


def test_override_before_first_use_replaces_only_that_key():
    out = _fresh(REGISTER_FIRST.format(args="'add', dtypes=[np.float64], override=True"))
    assert out == ["[1.0, 1.0] [1.0, 1.0]"]                  # add is x, multiply still works


def test_a_ufunc_or_partial_of_another_module_does_not_take_a_builtin_name():
    """A ufunc's or partial's owner is the module that registers it, not its __module__
    (numpy for a ufunc): np.subtract under 'add' is refused."""
    import kernels.dense.elementwise  # noqa: F401
    before = registry.lookup("add", "cpu", "dense", np.float64)
    with pytest.raises(ValueError, match=r"^register_kernel: kernel 'add' .* already "
                                         r"registered by kernels\.dense\.elementwise"):
        kernels.register_kernel("add", dtypes=[np.float64])(np.subtract)
    assert registry.lookup("add", "cpu", "dense", np.float64) is before


def test_functions_registered_through_a_shared_helper_keep_their_own_modules(tmp_path,
                                                                            monkeypatch):
    """Two modules registering one name through a helper module still conflict: a Python
    function's owner is the module defining it, not the helper that calls register_kernel."""
    pkg = tmp_path / "helped"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("import kernels\n"
                                    "def reg(name):\n    return kernels.register_kernel(name)\n")
    for mod in ("a", "b"):
        (pkg / f"{mod}.py").write_text("from .helpers import reg\n"
                                       "@reg('helped_op_x')\n"
                                       f"def {mod}_kernel(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import helped.a  # noqa: F401
    with pytest.raises(ValueError, match=r"kernel 'helped_op_x' .* already registered by "
                                         r"helped\.a; pick another name"):
        import helped.b  # noqa: F401
    assert registry.lookup("helped_op_x", "cpu", "dense", np.float64).__name__ == "a_kernel"


BAD_REGISTER = [
    ((None,), {}, TypeError, r"^register_kernel: name must be a non-empty str, got None"),
    ((3,), {}, TypeError, r"^register_kernel: name must be a non-empty str, got 3"),
    (("k",), {"layout": "weird"}, ValueError,
     r"^register_kernel: layout 'weird' is not one of \['dense', 'sparse_coo', 'sparse_csr'\]"),
    (("k",), {"backends": "cpu"}, TypeError,
     r"^register_kernel: backends must be a tuple of str from \('cpu', 'gpu'\), got 'cpu'"),
    (("k",), {"backends": ("tpu",)}, ValueError, r"^register_kernel: backend 'tpu' not in"),
    (("k",), {"dtypes": [object]}, TypeError,
     r"^register_kernel: dtypes entry object is not supported; expected one of"),
    (("k",), {"dtypes": "float64"}, TypeError,
     r"^register_kernel: dtypes must be an iterable of dtypes, got 'float64'"),
    (("k",), {"override": 1}, TypeError, r"^register_kernel: override must be a bool, got 1"),
]


@pytest.mark.parametrize("args,kw,exc,message", BAD_REGISTER,
                         ids=[m[3][18:50] for m in BAD_REGISTER])
def test_register_kernel_checks_its_arguments_by_name(args, kw, exc, message):
    generation = registry.GENERATION[0]
    with pytest.raises(exc, match=message):
        kernels.register_kernel(*args, **kw)(lambda x: x)
    assert registry.GENERATION[0] == generation and not registry.registered("k")


def test_register_kernel_refuses_a_kernel_that_is_not_callable():
    with pytest.raises(TypeError, match=r"^register_kernel: kernel 'k' must be a function, "
                                        r"got None"):
        kernels.register_kernel("k")(None)
    assert not registry.registered("k")
