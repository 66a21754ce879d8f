"""Bench: each dense boxing step on 64 MB of float64, next to bare mpi4py and the local op.

Run ``mpiexec -n N python -m mpi4py tests/mpi/bench_collectives.py`` for N = 2, 4.
The cases run interleaved, REPEATS rounds of each in a shuffled order (the
same on every rank; a fixed order favours some cases by tens of percent) with
a barrier before every run, and each line is a median timed on rank 0
(timings on a shared machine are noisy; compare the lines of one run):

- ``boxing``: phisparse re-boxing a global tensor with ``x.to_global(sbp=...)``:
  split(0) -> broadcast (all-gather of a 64 MB logical tensor), partial_sum ->
  broadcast (all-reduce of 64 MB per rank), and on the same bytes as a
  (1024, 8192) tensor split(1) -> broadcast (an all-gather of strided
  shards), partial_sum -> split(0) and -> split(1) (reduce-scatter), and
  split(0) -> split(1) (all-to-all);
- the routing of a 2-D float32 COO of 2^20 nonzeros split(1) -> split(0),
  its nonzeros in random order, and coalesced (sorted by row: each shard's
  nonzeros already grouped by owner);
- ``mpi4py``: the bare collective on the same bytes, contiguous, with
  preallocated buffers;
- ``local``: what one process does for the same result: concatenating the
  shards, and adding N addends.

The ratio after a boxing line is boxing / mpi4py.
"""
import time

import numpy as np

import dense
from kernels.core.dist.comm import world

MB = 64
COO_NNZ = 1 << 20
REPEATS = 7
ROWS = 1024


def median_times(cases, barrier):
    """{name: median seconds}, running the cases interleaved, shuffled round by round."""
    times = {name: [] for name in cases}
    names = list(cases)
    for round_ in range(REPEATS):
        for i in np.random.default_rng(round_).permutation(len(names)):
            barrier()
            t0 = time.perf_counter()
            cases[names[i]]()
            times[names[i]].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def sum_into(addends):
    out = addends[0].copy()
    for a in addends[1:]:
        out += a
    return out


def counts(n, n_ranks, inner=1):
    """Element counts of an array_split of ``n`` rows of ``inner`` elements."""
    base, extra = divmod(n, n_ranks)
    return [(base + (r < extra)) * inner for r in range(n_ranks)]


def collective_cases(comm, n, rank):
    """{step: {kind: fn}} for kinds boxing, mpi4py and (where one applies) local."""
    count = MB * 2 ** 20 // 8
    full = np.random.default_rng(0).random(count)
    cols = count // ROWS
    place = dense.placement()
    S, B, P = dense.sbp.split, dense.sbp.broadcast, dense.sbp.partial_sum
    shard = np.array_split(full, n)[rank]
    col_shard = np.ascontiguousarray(np.array_split(full.reshape(ROWS, cols), n, axis=1)[rank])
    row_shard = np.array_split(full.reshape(ROWS, cols), n)[rank]
    gs = dense.to_tensor(shard).to_global(placement=place, sbp=S(0))
    gp = dense.to_tensor(full).to_global(placement=place, sbp=P)
    gp2 = dense.reshape(gp, [ROWS, cols])
    gcol = dense.to_tensor(col_shard).to_global(placement=place, sbp=S(1))
    grow = dense.to_tensor(row_shard).to_global(placement=place, sbp=S(0))
    recv = np.empty_like(full)
    flat_counts = counts(count, n)
    mine = np.empty(flat_counts[rank])
    mine_col = np.empty(col_shard.size)
    col_counts = counts(cols, n, ROWS)
    swap = counts(row_shard.size, n)
    return {
        "COO route split(1)->split(0)": coo_cases(comm, n, rank, coalesced=False),
        "COO route, coalesced": coo_cases(comm, n, rank, coalesced=True),
        "all-gather": {
            "boxing": lambda: gs.to_global(sbp=B),
            "mpi4py": lambda: comm.Allgatherv(shard, [recv, flat_counts]),
            "local (concatenate)": lambda: np.concatenate(np.array_split(full, n))},
        "all-reduce": {
            "boxing": lambda: gp.to_global(sbp=B),
            "mpi4py": lambda: comm.Allreduce(full, recv),
            "local (sum of addends)": lambda: sum_into([full] * n)},
        "all-gather split(1)": {
            "boxing": lambda: gcol.to_global(sbp=B),
            "mpi4py": lambda: comm.Allgatherv(col_shard, [recv, col_counts])},
        "reduce-scatter split(0)": {
            "boxing": lambda: gp.to_global(sbp=S(0)),
            "mpi4py": lambda: comm.Reduce_scatter(full, mine, flat_counts)},
        "reduce-scatter split(1)": {
            "boxing": lambda: gp2.to_global(sbp=S(1)),
            "mpi4py": lambda: comm.Reduce_scatter(full, mine_col, col_counts)},
        "all-to-all split(0)->(1)": {
            "boxing": lambda: grow.to_global(sbp=S(1)),
            "mpi4py": lambda: comm.Alltoallv(row_shard, [recv[:row_shard.size], swap])},
    }


def coo_cases(comm, n, rank, coalesced):
    """{kind: fn}: routing a COO split(1) -> split(0), and the bare exchange of the
    same records, preallocated (see :func:`coo_case`)."""
    coo, records, rec_counts, rec_recv = coo_case(comm, n, rank, coalesced)
    rec_out = np.empty(int(sum(rec_recv)) * records.shape[1], np.uint8)
    return {
        "boxing": lambda: coo.to_global(sbp=dense.sbp.split(0)),
        "mpi4py": lambda: comm.Alltoallv(
            [records, [c * records.shape[1] for c in rec_counts]],
            [rec_out, [c * records.shape[1] for c in rec_recv]])}


def coo_case(comm, n, rank, coalesced=False):
    """A 2-D float32 COO of COO_NNZ nonzeros split(1) (in random order, or
    ``coalesced``: sorted by row, then column, so each shard's nonzeros are
    already grouped by their split(0) owner), and the bare exchange of its
    nonzeros as records (two int64 coordinates and the value, 20 bytes) grouped
    by destination, with the counts each rank sends and receives."""
    import sparse
    rows, cols = 1 << 16, 1 << 16
    rng = np.random.default_rng(rank)
    width = len(np.array_split(np.arange(cols), n)[rank])
    m = COO_NNZ // n
    idx = np.stack([rng.integers(0, rows, m), rng.integers(0, width, m)])
    if coalesced:
        idx = np.unique(idx, axis=1)          # sorted by row, then column; no duplicates
        m = idx.shape[1]
    coo = sparse.sparse_coo_tensor(idx, rng.random(m).astype(np.float32), [rows, width])
    g = coo.to_global(placement=dense.placement(), sbp=dense.sbp.split(1))
    owner = np.searchsorted(np.cumsum(counts(rows, n)), idx[0], side="right")
    send = np.bincount(owner, minlength=n)
    recv = np.empty(n, np.int64)
    comm.Alltoall(send.astype(np.int64), recv)
    records = np.zeros((m, 20), np.uint8)
    return g, records, send.tolist(), recv.tolist()


def main():
    w = world()
    comm, n, rank = w.mpi, w.size, w.rank
    if comm is None:
        print("run under mpiexec -n N (N >= 2): the bench compares with bare mpi4py")
        return
    steps = collective_cases(comm, n, rank)
    cases = {(step, kind): fn for step, kinds in steps.items() for kind, fn in kinds.items()}
    rows = median_times(cases, comm.Barrier)
    if rank != 0:
        return
    for (step, kind), t in rows.items():
        ratio = f"  x{t / rows[step, 'mpi4py']:.2f}" if kind == "boxing" else ""
        print(f"ranks={n} {MB} MB float64  {step + ' ' + kind:46s} {t * 1e3:8.1f} ms{ratio}")


if __name__ == "__main__":
    main()
