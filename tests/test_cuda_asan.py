"""The kernel suites again, on AddressSanitizer builds of the same .cu files.

The ASan libraries are built here, then a child pytest with libasan
preloaded (an instrumented library cannot load otherwise) runs the kernel
test files on them. A canary kernel that writes one past the end proves the
harness does catch out-of-bounds access.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cuda_emu.build import CXX, build
from kernels.gpu import SOURCE_DIR, cu_files

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["test_cuda_restride.py", "test_cuda_csr.py", "test_cuda_broadcast.py",
          "test_cuda_gather.py", "test_cuda_registered.py", "test_cuda_spmm.py",
          "test_cuda_sddmm.py"]


@pytest.fixture(scope="module")
def asan_env():
    """The environment for a child process that can load ASan builds."""
    found = subprocess.run([CXX, "-print-file-name=libasan.so"], capture_output=True,
                           text=True, check=True).stdout.strip()
    if not os.path.isabs(found):
        pytest.fail(f"{CXX} has no libasan.so (install the compiler's libasan)")
    path = os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "tests"),
                                         os.environ.get("PYTHONPATH")]))
    return {**os.environ, "LD_PRELOAD": found, "PHISPARSE_EMU_SANITIZE": "1",
            "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1", "PYTHONPATH": path}


def run_child(args, env):
    """Run ``python args`` under ``env``; returns (returncode, combined output)."""
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    return result.returncode, result.stdout + result.stderr


def report(output):
    """The ASan report in ``output`` if there is one, else its tail."""
    start = output.find("ERROR: AddressSanitizer")
    return output[start:start + 4000] if start >= 0 else output[-4000:]


def test_kernel_suites_under_asan(asan_env):
    for file in cu_files():
        build(SOURCE_DIR / file, sanitize=True)
    # --capture=sys: ASan writes its report to fd 2 and exits; fd capture would swallow it
    code, output = run_child(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--capture=sys",
                              "-m", "not gpu",
                              *[str(ROOT / "tests" / s) for s in SUITES]], asan_env)
    assert code == 0 and "AddressSanitizer" not in output, report(output)


def test_asan_catches_an_out_of_bounds_write(asan_env, tmp_path, monkeypatch):
    monkeypatch.setenv("PHISPARSE_EMU_CACHE", str(tmp_path))  # keep the canary out of the cache
    (tmp_path / "canary.cu").write_text(textwrap.dedent("""\
        typedef long long i64;
        extern "C" __global__ void one_past_the_end(int* out, i64 n)
        {
            for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
                 i += (i64)blockDim.x * gridDim.x) {
                out[i + 1] = 1;
            }
        }
        """))
    build(tmp_path / "canary.cu", sanitize=True)
    script = textwrap.dedent(f"""\
        import pathlib
        import numpy as np
        from cuda_emu.backend import EmuBackend
        backend = EmuBackend(sanitize=True, source_dir=pathlib.Path({str(tmp_path)!r}))
        kernel = backend.function("canary.cu", "one_past_the_end")
        kernel((1,), (4,), (np.zeros(4, np.int32), np.int64(4)))
        """)
    code, output = run_child(["-c", script], {**asan_env, "PHISPARSE_EMU_CACHE": str(tmp_path)})
    assert code != 0 and "heap-buffer-overflow" in output, report(output)
