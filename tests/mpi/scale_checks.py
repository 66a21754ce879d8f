"""Rank script: what each rank moves per boxing step grows linearly in P, not P^2.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/scale_checks.py`` (tests/
test_global_mpi.py does, for N = 2, 4, 8).  Every rank holds the same amount
of data whatever N is, so anything a rank receives beyond the payload is
bookkeeping, and it must be O(P): a P x P count matrix would show up as
8 P (P - 1) bytes.  Rank 0 prints one JSON line with the measurements.
"""
import json
import tracemalloc

import numpy as np

import dense
import sparse
from kernels.core.dist import comm, runtime, traffic
from kernels.core.dist.boxing import owner_of

RANK, SIZE = comm.world().rank, comm.world().size
PLACE = dense.placement()
S, B, P = dense.sbp.split, dense.sbp.broadcast, dense.sbp.partial_sum
NNZ = 64                  # nonzeros per rank, whatever SIZE is
OUT = {"ranks": SIZE}


def routing():
    """split(1) -> split(0) of a COO: the extra bytes are exactly P - 1 counts."""
    rng = np.random.default_rng(RANK)
    n0, n1 = 4 * SIZE, 4 * SIZE
    width = len(np.array_split(np.arange(n1), SIZE)[RANK])
    idx = np.stack([rng.integers(0, n0, NNZ), rng.integers(0, width, NNZ)])
    local = sparse.sparse_coo_tensor(idx, np.ones(NNZ), [n0, width])
    g = local.to_global(placement=PLACE, sbp=S(1))
    with traffic.measure() as t:
        h = g.to_global(sbp=S(0))
    record = 2 * 8 + 8
    got = h.to_local().nnz()
    sent_payload = t.sent - 8 * (SIZE - 1)
    extra = t.received - got * record + _own(idx, n0, record)
    assert sent_payload % record == 0, t
    assert extra == 8 * (SIZE - 1), f"routing received {extra} bookkeeping bytes, {t}"
    assert "allgather_ints" not in t.calls, t.calls
    OUT["routing_extra_bytes"] = extra
    OUT["routing_messages"] = t.messages


def _own(idx, n0, record):
    """Bytes of our own nonzeros that stay here (a local copy, not received)."""
    mine = owner_of(idx[0], n0, SIZE) == RANK
    return int(mine.sum()) * record


def to_global_meta():
    """to_global of a local shard exchanges O(1) header data, never every rank's."""
    x = dense.to_tensor(np.ones((SIZE + 3, 5)))
    shard_rows = np.array_split(np.arange(SIZE + 3), SIZE)[RANK]
    with traffic.measure() as t:
        dense.to_tensor(np.ones((len(shard_rows), 5))).to_global(placement=PLACE, sbp=S(0))
        x.to_global(placement=PLACE, sbp=B)
    assert "allgather_ints" not in t.calls, t.calls
    OUT["to_global_received"] = t.received


def seed_memory():
    """backward() with no seed allocates nothing of the logical size."""
    n = 1 << 22                              # 32 MiB of float64, logical
    rows = np.array_split(np.arange(n), SIZE)[RANK]
    leaf = dense.to_tensor(np.zeros(len(rows)), stop_gradient=False)
    g = leaf.to_global(placement=PLACE, sbp=S(0))
    y = dense.to_tensor(np.zeros(3), stop_gradient=False).to_global(placement=PLACE, sbp=B)
    tracemalloc.start()
    g.backward()
    y.backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < (1 << 20), f"backward() seed peaked at {peak} bytes"
    assert np.all(leaf.grad.numpy() == 1.0)
    OUT["seed_peak_bytes"] = peak


def signature_bytes():
    """The cost a sparse input brings to signature choice is the same on every rank,
    however unevenly its nonzeros are spread."""
    n = 10 * RANK + 1                         # uneven nnz
    idx = np.stack([np.zeros(n, np.int64), np.arange(n) % 3])
    t = sparse.sparse_coo_tensor(idx, np.ones(n), [1, 3]).to_global(placement=PLACE, sbp=P)
    costs = comm.allgather_ints(PLACE.group, [runtime._nbytes(t)])
    assert len(set(costs[:, 0].tolist())) == 1, costs


def datatype_cache():
    """A repeated gather of the same shapes builds no new MPI datatypes."""
    x = np.arange(6 * 4 * SIZE * 40, dtype=np.float64).reshape(6, 4 * SIZE * 40)
    cols = np.array_split(x, SIZE, axis=1)[RANK]
    g = dense.to_tensor(cols).to_global(placement=PLACE, sbp=S(1))
    first = g.to_global(sbp=B).numpy()
    before = len(comm._TYPES)
    again = g.to_global(sbp=B).numpy()
    assert len(comm._TYPES) == before
    assert np.array_equal(first, x) and np.array_equal(again, x)


def main():
    routing()
    to_global_meta()
    seed_memory()
    signature_bytes()
    datatype_cache()
    if RANK == 0:
        print(json.dumps(OUT))


if __name__ == "__main__":
    main()
