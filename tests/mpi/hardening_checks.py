"""Rank script: the global-tensor items of the hardening issue, on any number of ranks.

- A dense partial_sum input to ``to_sparse_coo`` gets the gradient one
  process gives (the addends' patterns differ from x's).
- An out-of-range index value in one rank's shard raises the same IndexError
  on every rank, naming that rank and its global window; the job goes on.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/hardening_checks.py``.
"""
import numpy as np

import dense
import sparse
from kernels.core.dist.comm import world

RANK, SIZE = world().rank, world().size
PLACE = dense.placement()
P, S, B = dense.sbp.partial_sum, dense.sbp.split, dense.sbp.broadcast


def partial_sum_to_sparse_grad():
    # logical x = [1, 0]: rank 0 holds [1, 1], rank 1 [0, -1], any others zeros
    addends = [np.array([1.0, 1.0]), np.array([0.0, -1.0])] + [np.zeros(2)] * (SIZE - 2)
    mine = addends[RANK] if SIZE > 1 else np.array([1.0, 0.0])
    t = dense.to_tensor(mine, stop_gradient=False)
    s = t.to_global(placement=PLACE, sbp=P).to_sparse_coo(1)
    assert np.array_equal(s.to_dense().numpy(), [1.0, 0.0])
    g = sparse.sparse_coo_tensor([[0, 1]], [3.0, 5.0], [2])    # a pattern wider than x's
    ref = dense.to_tensor(np.array([1.0, 0.0]), stop_gradient=False)
    ref.to_sparse_coo(1).backward(g)                          # one process
    s.backward(g)
    assert np.array_equal(t.grad.numpy(), ref.grad.numpy()), (RANK, t.grad.numpy())


def index_error_on_one_rank_is_everyones():
    n = 2 * SIZE
    logical = np.arange(n) % 4
    logical[-1] = 9                                  # out of range, on the last rank's shard
    x = dense.to_tensor(np.arange(4.0)).to_global(placement=PLACE, sbp=B)
    shard = np.array_split(logical, SIZE)[RANK]
    index = dense.to_tensor(shard).to_global(placement=PLACE, sbp=S(0))
    try:
        dense.gather(x, index)
    except IndexError as exc:
        message = str(exc)
    else:
        raise AssertionError(f"rank {RANK}: no IndexError")
    assert message.startswith("gather:") and "9" in message, message
    if SIZE > 1:
        assert f"rank {SIZE - 1}" in message and f"[{n - 2}, {n})" in message, message
    everyone = world().mpi.allgather(message) if SIZE > 1 else [message]
    assert len(set(everyone)) == 1, everyone
    # the job goes on: a collective after the error completes on every rank
    assert dense.sum(x).numpy() == 6.0


CHECKS = [partial_sum_to_sparse_grad, index_error_on_one_rank_is_everyones]
for check in CHECKS:
    check()
print(f"rank {RANK}: {len(CHECKS)} passed, 0 failed", flush=True)
