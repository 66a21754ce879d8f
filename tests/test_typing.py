"""Type hints: every public function and method is annotated, and mypy checks a typed
usage file (and rejects a wrong one) against them."""
import inspect
import os
import subprocess
import sys

import pytest

import dense
import sparse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLASSES = (dense.Tensor, sparse.SparseCooTensor, sparse.SparseCsrTensor)


def _public_callables():
    for mod in (dense, sparse):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                yield f"{mod.__name__}.{name}", obj
    for cls in CLASSES:
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") and name not in ("__init__", "__len__", "__iter__",
                                                     "__float__", "__int__", "__bool__",
                                                     "__complex__", "__index__", "__dlpack__",
                                                     "__dlpack_device__", "__array__"):
                continue
            func = member.fget if isinstance(member, property) else member
            if inspect.isfunction(func) or inspect.ismethod(func):
                yield f"{cls.__module__}.{cls.__name__}.{name}", func


def test_every_public_function_and_method_is_annotated():
    missing = []
    for label, func in _public_callables():
        sig = inspect.signature(func)
        unannotated = [p.name for p in sig.parameters.values()
                       if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")]
        if unannotated or sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{label}({', '.join(unannotated)})")
    assert not missing, "not annotated:\n  " + "\n  ".join(missing)


def _mypy(path, tmp_path):
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                           "--no-error-summary", "--follow-imports=silent", path],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_mypy_accepts_typed_usage_and_rejects_wrong_usage(tmp_path):
    ok = _mypy(os.path.join(HERE, "typing", "usage.py"), tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _mypy(os.path.join(HERE, "typing", "wrong.py"), tmp_path)
    lines = [line for line in bad.stdout.splitlines() if "error:" in line]
    assert bad.returncode == 1 and len(lines) == 2, bad.stdout + bad.stderr
    assert "wrong.py:8: error: Incompatible types in assignment" in lines[0]
    assert "wrong.py:9: error: Argument 2 to \"expand\" has incompatible type" in lines[1]


def test_the_generator_annotates_every_yaml_type():
    from kernels.codegen.emit import _api_fn
    from kernels.codegen.model import OpDef
    from kernels.core.opspec import Arg, KernelSig
    args = (Arg("xs", "Tensor[]"), Arg("x", "Tensor"), Arg("value", "Scalar"),
            Arg("dtype", "DataType", True, None), Arg("axis", "int", True, None),
            Arg("rate", "float", True, 0.5), Arg("flag", "bool", True, False),
            Arg("mode", "str", True, "C"), Arg("shape", "IntArray", True, None))
    op = OpDef("demo", "dense", False, args, ("out", "mask"), "ops.yaml", 1, doc="Demo.",
               kernels=(KernelSig("demo", ("dense", "dense"), ("dense", "sparse_coo")),
                        KernelSig("demo_csr", ("dense", "dense"), ("dense", "sparse_csr"))))
    head = _api_fn(op).strip().splitlines()[0]
    assert head == (
        "def demo(xs: _t.Sequence[_t.TensorLike], x: _t.TensorLike, value: _t.Scalar, "
        "dtype: _t.Optional[_t.DataType] = None, axis: _t.Optional[int] = None, "
        "rate: float = 0.5, flag: bool = False, mode: str = 'C', "
        "shape: _t.Optional[_t.IntArray] = None) -> tuple[_dense.Tensor, "
        "_sparse.SparseCooTensor | _sparse.SparseCsrTensor]:")


def test_a_last_required_int_array_also_takes_sizes_one_by_one():
    import dense
    sig = inspect.signature(dense.expand)
    assert [p.kind.name for p in sig.parameters.values()] == [
        "POSITIONAL_OR_KEYWORD", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL"]
    assert "sizes" not in inspect.signature(dense.sum).parameters
