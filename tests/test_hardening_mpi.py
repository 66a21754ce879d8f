"""Multi-rank regression tests of the hardening issue (items 20-22)."""
import pytest

pytest.importorskip("mpi4py", reason="the multi-rank tests need the 'mpi' extra "
                    "(pip install 'phisparse[mpi]')")

from test_global_mpi import _run  # noqa: E402  (the launcher helper)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_partial_sum_conversion_and_collective_value_errors(n):
    proc, _ = _run(n, "hardening_checks.py", "-m", "mpi4py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("13 passed, 0 failed") == n


def test_a_nonzero_sys_exit_on_one_rank_ends_the_job_under_mpi4py():
    proc, took = _run(2, "exit_on_rank.py", "-m", "mpi4py", timeout=30)
    assert proc.returncode != 0
    assert took < 20
