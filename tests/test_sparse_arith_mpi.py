"""The sparse arithmetic ops' SBP signatures, and positional gradients through COO
boxing, on 2 and 3 ranks (tests/mpi/sparse_arith_checks.py)."""
import pytest

pytest.importorskip("mpi4py", reason="the multi-rank tests need the 'mpi' extra "
                    "(pip install 'phisparse[mpi]')")

from test_global_mpi import _run  # noqa: E402


@pytest.mark.parametrize("n", [2, 3])
def test_sparse_arith_signatures_match_one_process(n):
    proc, _ = _run(n, "sparse_arith_checks.py", "-m", "mpi4py", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "34 passed, 0 failed" in proc.stdout
