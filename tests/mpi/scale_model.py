"""The scale model of boxing: bytes, messages and peak memory per rank, per step.

``python tests/mpi/scale_model.py --predict RANKS NNZ`` prints the model's
table for a job of RANKS ranks (dense steps on NNZ float32 values, sparse
steps on NNZ nonzeros of a 2-D float32 COO); no MPI needed.
``mpiexec -n N python -m mpi4py tests/mpi/scale_model.py`` runs every step
on small data and prints, on rank 0, one JSON line per step with the model's
prediction beside the measurement: bytes and messages from
:mod:`kernels.core.dist.traffic`, peak memory from ``tracemalloc`` (numpy's
allocations during the step, the input excluded).

The model, per rank, for P ranks, M logical bytes (dense) or Z nonzeros of
r bytes each (sparse, spread evenly):

==========================  ==================  ================  ==================
step                        sent = received     messages          peak memory
==========================  ==================  ================  ==================
all-gather S(0)->B          (P-1)/P M           2 log2 P          M
all-gather S(1)->B          (P-1)/P M           2(P-1)            2 M (packing)
all-reduce P->B             2 (P-1)/P M         2 log2 P          M
reduce-scatter P->S(0)      (P-1)/P M           2(P-1)            M/P
reduce-scatter P->S(1)      (P-1)/P M           2(P-1)            M + M/P (packing)
all-to-all S(0)->S(1)       (P-1)/P^2 M         2(P-1)            M/P (+M/P packing)
COO route S(1)->S(0)        (P-1)/P^2 Z r       8(P-1)            (2P-1)/P Z r / P + G
                            + 8(P-1)
COO all-gather S(0)->B      (P-1)/P Z r         4 log2 P          2 Z r
==========================  ==================  ================  ==================

Peak memory is what the step allocates beyond its input: results, and the
packed copies named.  Strided blocks are packed when their contiguous runs
are under 2 KiB (``comm.RUN_BYTES``), which is the case at scale (a shard's
run along a later axis shrinks as 1/P), and a later-axis gather of at most
64 KiB always goes packed; with long runs the packing terms drop out.
COO routing holds the result (Z r / P) and the other ranks' entries of every
field in owner order ((P-1)/P of Z r / P; our own go straight into the
result), plus G for the grouping: up to 8 ranks a 1-byte owner per nonzero
and, for C = 2^16 nonzeros at a time, an 8-byte index and a 1-byte mask
(G = Z/P + 9 min(Z/P, C)); past 8 ranks a radix sort's 8-byte order and an
owner of at most 2 bytes per nonzero (G = 10 Z/P); its messages are one all-to-all of the counts and one per field (the two
coordinate rows and the values): 2(P-1) each.  A COO all-gather holds the
packed records of every rank and the unpacked result (2 Z r).
"""
import json
import math
import sys
import tracemalloc

import numpy as np

LOG = lambda p: 2 * max(1, (p - 1).bit_length())        # noqa: E731 (as comm._tree)
CHUNK = 1 << 16                 # nonzeros per grouping pass of COO routing (boxing._CHUNK)


def model(step, p, m=0, z=0, r=0):
    """(bytes sent = received, messages, peak bytes) per rank for one step."""
    f = (p - 1) / p
    table = {
        "all-gather S(0)->B": (f * m, LOG(p), m),
        "all-gather S(1)->B": (f * m, 2 * (p - 1), 2 * m),
        "all-reduce P->B": (2 * f * m, LOG(p), m),
        "reduce-scatter P->S(0)": (f * m, 2 * (p - 1), m / p),
        "reduce-scatter P->S(1)": (f * m, 2 * (p - 1), m + m / p),
        "all-to-all S(0)->S(1)": (f * m / p, 2 * (p - 1), 2 * m / p),
        "COO route S(1)->S(0)": (f * z * r / p + 8 * (p - 1), 8 * (p - 1),
                                 (1 + f) * z * r / p + _grouping_bytes(p, z)),
        "COO all-gather S(0)->B": (f * z * r, 2 * LOG(p), 2 * z * r),
    }
    return table[step]


def _grouping_bytes(p, z):
    """COO routing's owners and index arrays (boxing._group: chunked up to 8 ranks)."""
    return z / p + 9 * min(z / p, CHUNK) if p <= 8 else 10 * z / p


STEPS = ["all-gather S(0)->B", "all-gather S(1)->B", "all-reduce P->B",
         "reduce-scatter P->S(0)", "reduce-scatter P->S(1)", "all-to-all S(0)->S(1)",
         "COO route S(1)->S(0)", "COO all-gather S(0)->B"]


def predict(p, nnz):
    """The model's table at P ranks for NNZ float32 values / 2-D COO nonzeros."""
    m, r = 4 * nnz, 2 * 8 + 4
    print(f"| step | sent = received per rank | messages per rank | peak memory per rank |")
    print("|---|---|---|---|")
    for step in STEPS:
        wire, msgs, peak = model(step, p, m=m, z=nnz, r=r)
        print(f"| {step} | {_size(wire)} | {msgs} | {_size(peak)} |")


def _size(b):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if b < 1000 or unit == "TB":
            return f"{b:.3g} {unit}"
        b /= 1000


# ---------------------------------------------------------------- measurement
def measure_steps():
    """{step: (sent, received, messages, peak)} measured on this rank."""
    import dense
    import sparse
    from kernels.core.dist import comm, traffic
    place = dense.placement()
    p, rank = place.size, place.rank
    S, B, P = dense.sbp.split, dense.sbp.broadcast, dense.sbp.partial_sum
    rows, cols, z = 256, 64 * p, 20000 * p            # dense float32: 64 KiB * p
    x = np.random.default_rng(0).random((rows, cols)).astype(np.float32)
    dense_g = {
        "S0": dense.to_tensor(np.array_split(x, p)[rank]).to_global(placement=place, sbp=S(0)),
        "S1": dense.to_tensor(np.array_split(x, p, axis=1)[rank]).to_global(placement=place,
                                                                           sbp=S(1)),
        "P": dense.to_tensor(x).to_global(placement=place, sbp=P),
    }
    rng = np.random.default_rng(rank)
    width = len(np.array_split(np.arange(4 * p), p)[rank])
    n = z // p
    idx = np.stack([rng.integers(0, 4 * p, n), rng.integers(0, width, n)])
    coo_s1 = sparse.sparse_coo_tensor(idx, rng.random(n).astype(np.float32), [4 * p, width])
    coo_s1 = coo_s1.to_global(placement=place, sbp=S(1))
    coo_s0 = coo_s1.to_global(sbp=S(0))
    jobs = {
        "all-gather S(0)->B": (dense_g["S0"], B), "all-gather S(1)->B": (dense_g["S1"], B),
        "all-reduce P->B": (dense_g["P"], B), "reduce-scatter P->S(0)": (dense_g["P"], S(0)),
        "reduce-scatter P->S(1)": (dense_g["P"], S(1)),
        "all-to-all S(0)->S(1)": (dense_g["S0"], S(1)),
        "COO route S(1)->S(0)": (coo_s1, S(0)), "COO all-gather S(0)->B": (coo_s0, B),
    }
    out = {}
    for step, (g, dst) in jobs.items():
        place.group.mpi.Barrier()
        tracemalloc.start()
        with traffic.measure() as t:
            res = g.to_global(sbp=dst)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del res
        out[step] = (t.sent, t.received, t.messages, peak)
    return out, {"m": x.nbytes, "z": z, "r": 2 * 8 + 4}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--predict":
        predict(int(sys.argv[2]), int(float(sys.argv[3])))
        return
    from kernels.core.dist import comm
    w = comm.world()
    got, size = measure_steps()
    if w.rank != 0:
        return
    for step, (sent, received, msgs, peak) in got.items():
        wire, m_msgs, m_peak = model(step, w.size, **size)
        print(json.dumps({"step": step, "ranks": w.size,
                          "model": [round(wire), m_msgs, round(m_peak)],
                          "measured": [sent, received, msgs, peak]}))


if __name__ == "__main__":
    main()
