"""sbp rules of sparse transpose, slice, index_select, concat and stack under mpiexec
-n 2 and -n 3."""
import pytest

from test_global_mpi import _run

pytest.importorskip("mpi4py", reason="the multi-rank tests need the 'mpi' extra "
                    "(pip install 'phisparse[mpi]')")


@pytest.mark.parametrize("n", [2, 3])
def test_structure_op_signatures_match_one_process(n):
    proc, _ = _run(n, "sparse_struct_checks.py", "-m", "mpi4py", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "38 passed, 0 failed" in proc.stdout
