"""Multi-rank runs: mpiexec -n 1, 2, 4 and 8 (oversubscribed) of the rank scripts in tests/mpi/."""
import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("mpi4py", reason="the multi-rank tests need the 'mpi' extra "
                    "(pip install 'phisparse[mpi]')")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _mpiexec():
    for d in (os.path.dirname(sys.executable), *os.environ.get("PATH", "").split(os.pathsep)):
        path = os.path.join(d, "mpiexec")
        if os.access(path, os.X_OK):
            return path
    pytest.fail("mpiexec not found next to python or on PATH; the 'mpi' extra installs "
                "it with the mpich wheel")


def _run(n, script, *python_args, timeout=60, env=()):
    cmd = [_mpiexec(), "-n", str(n), sys.executable, *python_args,
           os.path.join(HERE, "mpi", script)]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **dict(env))
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)
    return proc, time.monotonic() - start


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_every_signature_matches_one_process(n):
    proc, _ = _run(n, "global_checks.py", "-m", "mpi4py", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed, 0 failed" in proc.stdout


#: Rank scripts of the op families' SBP rules (forward, backward, against one process),
#: each with the number of checks it must report.
FAMILY_CHECKS = {
    "dense_checks.py": 82,            # dense ops, concat and stack over Tensor[] lists
    "sparse_arith_checks.py": 73,     # sparse arithmetic; positional gradients of COO boxing
    "sparse_struct_checks.py": 41,    # sparse transpose, slice, index_select, concat, stack
    "operator_checks.py": 53,         # operators on global tensors, squeeze, inf grads, splits
}


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("script", sorted(FAMILY_CHECKS))
def test_op_family_signatures_match_one_process(script, n):
    proc, _ = _run(n, script, "-m", "mpi4py", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{FAMILY_CHECKS[script]} passed, 0 failed" in proc.stdout


@pytest.mark.parametrize("n", [1, 2, 3])
def test_coo_routing_matches_a_reference(n):
    """COO split -> split and partial_sum -> split routing, its adjoint, in one
    and several grouping chunks, on the radix sort path and with the index
    matrix in either memory order, against numpy."""
    proc, _ = _run(n, "routing_checks.py", "-m", "mpi4py", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "144 passed, 0 failed" in proc.stdout


def test_bookkeeping_per_rank_grows_linearly_in_ranks():
    """Each rank holds the same data at 2, 4 and 8 ranks; what it receives beyond
    the payload when routing nonzeros is P - 1 counts (a P x P matrix would be
    P times that), to_global exchanges no per-rank headers, and backward()
    without a seed allocates nothing of the logical size."""
    seen = {}
    for n in (2, 4, 8):
        proc, _ = _run(n, "scale_checks.py", "-m", "mpi4py", timeout=240)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        seen[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [seen[n]["routing_extra_bytes"] for n in (2, 4, 8)] == [8, 24, 56]
    assert len({seen[n]["to_global_received"] for n in (2, 4, 8)}) == 1
    assert all(seen[n]["seed_peak_bytes"] < 1 << 20 for n in (2, 4, 8))


@pytest.mark.parametrize("n", [2, 4, 8])
def test_scale_model_predicts_each_boxing_step_within_2x(n):
    """The README's scale model against measurement: bytes sent and received,
    messages, and peak memory (tracemalloc) of every boxing step."""
    proc, _ = _run(n, "scale_model.py", "-m", "mpi4py", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 8
    for row in rows:
        wire, msgs, peak = row["model"]
        sent, received, got_msgs, got_peak = row["measured"]
        for got, want in ((sent, wire), (received, wire), (got_msgs, msgs), (got_peak, peak)):
            assert want / 2 <= got <= 2 * want, row


def _run_failing(tmp_path, script, *launcher):
    """Run a job that must abort; return its exit code, every rank's stderr, and its time.

    Each rank writes stderr to a file (tests/mpi/rank_stderr.py), read after
    the job has ended: mpiexec's forwarding can cut a traceback off when the
    abort arrives.
    """
    proc, took = _run(2, script, *launcher, timeout=30,
                      env={"PHISPARSE_RANK_STDERR": str(tmp_path)})
    errs = "".join(p.read_text() for p in sorted(tmp_path.glob("rank*.err")))
    return proc.returncode, errs + proc.stderr, took


@pytest.mark.parametrize("launcher", [("-m", "mpi4py"), ()], ids=["python-m-mpi4py", "hook"])
def test_a_rank_that_raises_ends_the_job(tmp_path, launcher):
    rc, stderr, took = _run_failing(tmp_path, "raise_on_rank.py", *launcher)
    assert rc != 0
    assert "rank 1 fails on purpose" in stderr
    assert took < 20


def test_a_rank_that_raises_before_any_placement_ends_the_job(tmp_path):
    rc, stderr, took = _run_failing(tmp_path, "raise_before_placement.py")
    assert rc != 0
    assert "fails on purpose before any placement" in stderr
    assert took < 20
