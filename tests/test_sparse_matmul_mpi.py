"""sparse.matmul and sparse.mv on global tensors: mpiexec -n 1, 2, 3 of tests/mpi/matmul_checks.py."""
import pytest

pytest.importorskip("mpi4py", reason="the multi-rank tests need the 'mpi' extra "
                    "(pip install 'phisparse[mpi]')")

from test_global_mpi import _run  # noqa: E402


@pytest.mark.parametrize("n", [1, 2, 3])
def test_matmul_signatures_match_one_process(n):
    proc, _ = _run(n, "matmul_checks.py", "-m", "mpi4py", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed, 0 failed" in proc.stdout
