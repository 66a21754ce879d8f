"""The dense ops' SBP rules on 2 and 3 ranks, concat and stack over Tensor[] lists
included: tests/mpi/dense_checks.py under mpiexec."""
import pytest

pytest.importorskip("mpi4py", reason="the multi-rank tests need the 'mpi' extra "
                    "(pip install 'phisparse[mpi]')")

from test_global_mpi import _run  # noqa: E402


@pytest.mark.parametrize("n", [2, 3])
def test_dense_signatures_match_one_process(n):
    proc, _ = _run(n, "dense_checks.py", "-m", "mpi4py", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "51 passed, 0 failed" in proc.stdout
