"""Bench: all-gather and all-reduce of 64 MB, next to the local op's time.

Run ``mpiexec -n N python -m mpi4py tests/mpi/bench_collectives.py`` for N = 2, 4.
The cases run interleaved, REPEATS rounds of each with a barrier before every
run, and each line is a median timed on rank 0 (timings on a shared machine are
noisy; compare the lines of one run):

- ``boxing``: phisparse's split(0) -> broadcast (all-gather of a 64 MB logical
  float64 tensor) and partial_sum -> broadcast (all-reduce of 64 MB per rank);
- ``mpi4py``: the bare collective on preallocated buffers;
- ``local``: what one process does for the same result: concatenating the
  shards, and adding N addends.
"""
import time

import numpy as np

import dense
from kernels.core.dist.comm import world

MB = 64
REPEATS = 7


def median_times(cases, barrier):
    """{name: median seconds}, running the cases interleaved round by round."""
    times = {name: [] for name in cases}
    for _ in range(REPEATS):
        for name, fn in cases.items():
            barrier()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def sum_into(addends):
    out = addends[0].copy()
    for a in addends[1:]:
        out += a
    return out


def main():
    w = world()
    comm, n, rank = w.mpi, w.size, w.rank
    barrier = comm.Barrier if comm is not None else (lambda: None)
    count = MB * 2 ** 20 // 8
    full = np.random.default_rng(0).random(count)
    shard = np.array_split(full, n)[rank]
    place = dense.placement()
    gs = dense.to_tensor(shard).to_global(placement=place, sbp=dense.sbp.split(0))
    gp = dense.to_tensor(full).to_global(placement=place, sbp=dense.sbp.partial_sum)
    recv = np.empty_like(full)
    sizes = [len(p) for p in np.array_split(full, n)]
    addends = [full] * n
    cases = {
        "all-gather boxing": lambda: gs.to_global(sbp=dense.sbp.broadcast),
        "all-gather mpi4py": lambda: comm.Allgatherv(shard, [recv, sizes]),
        "all-gather local (concatenate)": lambda: np.concatenate(np.array_split(full, n)),
        "all-reduce boxing": lambda: gp.to_global(sbp=dense.sbp.broadcast),
        "all-reduce mpi4py": lambda: comm.Allreduce(full, recv),
        "all-reduce local (sum of addends)": lambda: sum_into(addends),
    }
    if comm is None:
        cases = {k: v for k, v in cases.items() if "mpi4py" not in k}
    rows = median_times(cases, barrier)
    if rank == 0:
        for name, t in rows.items():
            if t is not None:
                print(f"ranks={n} {MB} MB float64  {name:34s} {t * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
