"""gather_grad's atomics on a real GPU: ``python -m bench.gpu_atomics`` (needs cupy and a GPU).

For x [65536, 256] and 2**20 gathered rows (about 16 hits per row) it runs
``kernels.gpu.gather.gather_grad`` five times per dtype and prints one row:
the median time over CUDA events, the bytes moved per second, whether the
five results are bit-identical and how many elements differ between runs,
the relative error against a float64 (complex128) sum made with cupy's
``add.at``, and the time of a deterministic sort-based scatter built from
cupy primitives (stable argsort of the index, rows gathered in that order,
``add.reduceat`` over equal indices).  The float64 row's error compares two
float64 atomic sums, so it says nothing about float64's accuracy.
"""
import argparse

import numpy as np

from kernels.funcs.gather_view import gather_view
from kernels.gpu import gather as cu
from kernels.gpu.backend import device

from .backends import get_backend

cp = None   # cupy, imported by main(): --help needs no GPU

ROWS, N, COLS = 2**16, 2**20, 256
DTYPES = ("float16", "float32", "float64", "complex64")


def event_ms(f, reps=10):
    """Median milliseconds of ``f()`` on the gpu backend's CUDA-event clock, after one
    warm-up call."""
    backend = get_backend("gpu")
    f()
    times = []
    for _ in range(reps):
        start, stop = backend.timer()
        start()
        f()
        times.append(stop() * 1e3)
    return float(np.median(times))


def sort_scatter(g, idx):
    """The deterministic alternative: rows summed in index order, no atomics."""
    perm = cp.argsort(idx, kind="stable")
    sk = idx[perm]
    starts = cp.flatnonzero(cp.concatenate([cp.ones(1, bool), sk[1:] != sk[:-1]]))
    out = cp.zeros((ROWS, COLS), g.dtype)
    out[sk[starts]] = cp.add.reduceat(g[perm], starts, axis=0)
    return out


def reference(g, idx):
    """The sum in float64 (complex128) by cupy's add.at, part by part."""
    wide = cp.zeros((ROWS, COLS), np.complex128 if g.dtype.kind == "c" else np.float64)
    parts = [(wide.real, g.real), (wide.imag, g.imag)] if g.dtype.kind == "c" else [(wide, g)]
    for out, part in parts:
        cp.add.at(out, idx, part.astype(np.float64))
    return wide


def row(dtype, idx, view, rng):
    g = rng.standard_normal((N, COLS)).astype(np.float32)
    if dtype.startswith("complex"):
        g = g + 1j * rng.standard_normal((N, COLS)).astype(np.float32)
    g = cp.asarray(g.astype(dtype))
    ref = reference(g, idx)

    def run():
        return cu.gather_grad(device(), g, idx, view, (ROWS, COLS))
    runs = [run() for _ in range(5)]
    same = all(bool(cp.array_equal(runs[0], r)) for r in runs[1:])
    differ = max(int(cp.count_nonzero(runs[0] != r)) for r in runs[1:])
    err = float(cp.linalg.norm((runs[0] - ref).ravel()) / cp.linalg.norm(ref.ravel()))
    t, ts = event_ms(run), event_ms(lambda: sort_scatter(g, idx), 5)
    rate = (g.nbytes + runs[0].nbytes) / t / 1e6
    return (f"| {dtype} | {t:.3f} | {rate:.0f} | {same} | {differ} of {runs[0].size} "
            f"| {err:.2e} | {ts:.3f} | {ts / t - 1:+.0%} |")


def main(argv=None):
    global cp
    argparse.ArgumentParser(prog="python -m bench.gpu_atomics", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter
                            ).parse_args(argv)
    import cupy
    cp = cupy
    rng = np.random.default_rng(0)
    idx = cp.asarray(rng.integers(0, ROWS, N))
    view = gather_view((ROWS, COLS), idx.shape, 0)
    print(f"x [{ROWS},{COLS}], index {N} rows (~{N // ROWS} hits per row), axis 0")
    print("| dtype | atomics ms | GB/s (read g + write x) | runs bit-identical | elements "
          "differing run to run | rel err vs float64 | sort-based ms | extra |")
    print("|---|---|---|---|---|---|---|---|")
    for dtype in DTYPES:
        print(row(dtype, idx, view, rng))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
