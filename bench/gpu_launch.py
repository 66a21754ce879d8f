"""The row-copying kernels' launch constants on a real GPU: ``python -m bench.gpu_launch``.

For each of expand, repeat, gather and batch_gather at its GPU bench size
(:mod:`bench.workloads`, the same inputs ``python -m bench --backends gpu``
builds) it times the op under every combination of words per thread
(:data:`kernels.gpu.launch.WORDS_PER_THREAD`), block size and grid cap
(:data:`kernels.gpu.backend.BLOCK`, ``MAX_GRID``), checks each output
against cupy's own op, and prints the median milliseconds over CUDA events
and the share of the copy rate (bytes read + written over a 2 GiB device
copy's rate in the same run).  The last lines give each op's default and
fastest combination.  Needs cupy and a GPU.

``--others`` times every other kernel's workload (:data:`OTHERS`: the
gradients' scatter-adds and sums, the COO and CSR reshapes, SpMM, SpMV and
SDDMM) under each block size and grid cap at the default words per thread,
and checks each output against the default launch's: bit for bit, or to
rounding where atomics reorder the sums.  While it runs, no kernel keeps the
geometry :data:`kernels.gpu.launch.TUNED` gives it.
"""
import argparse
import itertools

import numpy as np

from kernels.gpu import backend as launch_backend
from kernels.gpu import launch

from .gpu_atomics import event_ms
from .peers import phisparse_peer
from .workloads import BY_NAME

OPS = ("expand", "repeat", "gather", "batch_gather")
VARIANTS = {"words per thread": (2, 4, 8, 16), "block": (128, 256, 512),
            "grid cap": (65535, 2**20)}
OTHERS = ("gather_grad", "batch_gather_grad", "expand_grad", "coo_reshape/3d-2d/nnz1e7",
          "coo_reshape/2d-3d/nnz1e7", "csr_reshape/2d/nnz1e7", "spmm/nnz1e7", "spmv/nnz1e7",
          "sddmm/nnz1e6")
#: Workloads whose kernels add by atomics: outputs compared to rounding.
ATOMIC = ("gather_grad", "batch_gather_grad", "spmm/nnz1e7", "spmv/nnz1e7")


def reference(cp, op, inp):
    """cupy's own result for ``op`` on the workload's inputs."""
    x = cp.asarray(inp["x"])
    if op == "expand":
        return cp.broadcast_to(x, inp["new_shape"])
    if op == "repeat":
        return cp.tile(x, inp["repeats"])
    index = cp.asarray(inp["index"])
    if op == "gather":
        return cp.take(x, index, axis=inp["axis"])
    return cp.take_along_axis(x, index.reshape(index.shape + (1,) * (x.ndim - index.ndim)),
                              axis=index.ndim - 1)


def copy_rate(cp, n=2**29):
    """Bytes read + written per ms by a copy of ``n`` float32 on the device."""
    a = cp.ones(n, dtype=np.float32)
    b = cp.empty_like(a)
    return 2 * a.nbytes / event_ms(lambda: cp.copyto(b, a))


def set_variant(words, block, grid, tuned=None):
    """Every kernel's launch constants (none tuned apart from the rest, unless ``tuned``)."""
    launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID = words, block, grid
    launch.TUNED = {} if tuned is None else tuned


def arrays(out):
    """The device arrays of an op's output: a dense tensor, or a sparse one's buffers."""
    import cupy as cp
    layout = getattr(out, "layout", "dense")
    if layout == "sparse_csr":
        return [cp.from_dlpack(t) for t in (out.crows(), out.cols(), out.values())]
    if layout == "sparse_coo":
        return [cp.from_dlpack(t) for t in (out.indices(), out.values())]
    return [cp.from_dlpack(out)]


def same(cp, got, want, atomic):
    if atomic:
        return all(bool(cp.allclose(a, b, rtol=1e-4, atol=1e-5)) for a, b in zip(got, want))
    return all(bool(cp.array_equal(a, b)) for a, b in zip(got, want))


def others(cp, backend, quick):
    """Block size and grid cap for the other kernels' workloads, at the default words."""
    words = launch.WORDS_PER_THREAD
    default = (words, launch_backend.BLOCK, launch_backend.MAX_GRID)
    tuned = launch.TUNED
    print("| workload | block | grid cap | median ms | output |")
    print("|---|---|---|---|---|")
    best = {}
    for name in OTHERS:
        w = BY_NAME[name]
        case = next(iter(phisparse_peer.IMPLS[w.op].values()))(w.inputs(quick, "gpu"), backend)

        def run():
            case.reset()
            return case.run()
        try:
            set_variant(*default)
            want = [a.copy() for a in arrays(run())]
            for block, grid in itertools.product(*list(VARIANTS.values())[1:]):
                set_variant(words, block, grid)
                ok = same(cp, arrays(run()), want, name in ATOMIC)
                ms = best.setdefault(name, {})[(words, block, grid)] = event_ms(run)
                print(f"| {name} | {block} | {grid} | {ms:.3f} | "
                      f"{'equal' if ok else 'WRONG'} |", flush=True)
        finally:
            set_variant(*default, tuned)
        del case, want
        cp.get_default_memory_pool().free_all_blocks()
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.gpu_launch", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the bench's quick sizes (a smoke run)")
    ap.add_argument("--others", action="store_true",
                    help="the other kernels' workloads, under each block size and grid cap")
    args = ap.parse_args(argv)
    import cupy as cp

    from .backends import get_backend
    backend, rate = get_backend("gpu"), copy_rate(cp, 2**20 if args.quick else 2**29)
    default = (launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID)
    print(f"copy rate {rate / 1e6:.0f} GB/s; default (words, block, grid cap) {default}")
    best = (others(cp, backend, args.quick) if args.others
            else copies(cp, backend, rate, args.quick))
    for op, times in best.items():
        fastest = min(times, key=times.get)
        now = f"{times[default]:.3f} ms" if default in times else "not among the variants"
        print(f"{op}: default {now}, fastest {fastest} {times[fastest]:.3f} ms")


def copies(cp, backend, rate, quick):
    """Every variant for the row-copying ops, checked against cupy."""
    default = (launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID)
    tuned = launch.TUNED
    print("| op | words per thread | block | grid cap | median ms | % of copy rate | output |")
    print("|---|---|---|---|---|---|---|")
    best = {}
    for op in OPS:
        inp = BY_NAME[op].inputs(quick, "gpu")
        ref = reference(cp, op, inp)
        run = phisparse_peer.IMPLS[op][op](inp, backend).run
        moved = ref.nbytes + (ref.nbytes if op in ("gather", "batch_gather") else 0)
        try:
            for variant in itertools.product(*VARIANTS.values()):
                set_variant(*variant)
                ok = bool(cp.array_equal(cp.from_dlpack(run()), ref))
                ms = event_ms(run)
                best.setdefault(op, {})[variant] = ms
                print(f"| {op} | {' | '.join(map(str, variant))} | {ms:.3f} "
                      f"| {100 * moved / ms / rate:.0f}% | {'equal' if ok else 'WRONG'} |",
                      flush=True)
        finally:
            set_variant(*default, tuned)
        del inp, ref, run
        cp.get_default_memory_pool().free_all_blocks()
    return best


if __name__ == "__main__":
    main()
