"""SpMM and SpMV by width on a real GPU: ``python -m bench.gpu_spmm`` (needs cupy and a GPU).

A CSR matrix of 20000 x 20000 with 1e7 float32 entries, its rows either
uniform (about 500 entries each) or a power law (row r holds a share
proportional to (r + 1)^-0.8 of the entries: row 0 about 1.5e5), times a
dense y of N columns for N = 1 (``sparse.mv``), 2, 4, ..., 256.  Each row of
the output gives the median milliseconds over CUDA events of phisparse's
``sparse.matmul`` / ``sparse.mv`` (``spmm.cu``), of cuSPARSE through cupyx
(``csr_matrix @ y``, the matrix made canonical once outside the timing so
that cupyx does not check it each call; it also copies y to column-major),
and of torch's CUDA CSR product where torch is importable, and phisparse's
largest error relative to cupyx's result.  ``--quick`` uses 1e5 entries on
2000 x 2000 and three widths.
"""
import argparse
import importlib.util

import numpy as np

import dense
import sparse

from .gpu_atomics import event_ms

WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def rows_of(kind, m, nnz, rng):
    """The sorted row of each entry: uniform, or a power law with exponent 0.8."""
    if kind == "uniform":
        return np.sort(rng.integers(0, m, nnz))
    p = 1.0 / np.arange(1, m + 1) ** 0.8
    return np.sort(rng.choice(m, nnz, p=p / p.sum()))


def products(cp, csp, torch, crows, cols, vals, shape):
    """name -> f(y) for phisparse, cupyx and (if given) torch, on one CSR matrix."""
    x = sparse.sparse_csr_tensor(cp.asarray(crows), cp.asarray(cols), cp.asarray(vals),
                                 list(shape))
    m = csp.csr_matrix((cp.asarray(vals), cp.asarray(cols), cp.asarray(crows)), shape=shape)
    m.sum_duplicates()
    out = {"phisparse": lambda y: (sparse.mv(x, dense.to_tensor(y[:, 0])) if y.shape[1] == 1
                                   else sparse.matmul(x, dense.to_tensor(y))),
           "cupyx": lambda y: m @ (y[:, 0] if y.shape[1] == 1 else y)}
    if torch is not None:
        t = torch.sparse_csr_tensor(*(torch.as_tensor(a, device="cuda")
                                      for a in (crows, cols, vals)), shape)
        out["torch"] = lambda y: (torch.mv(t, torch.as_tensor(y[:, 0])) if y.shape[1] == 1
                                  else t @ torch.as_tensor(y))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.gpu_spmm", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1e5 entries and three widths")
    args = ap.parse_args(argv)
    import cupy as cp
    import cupyx.scipy.sparse as csp
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch
        torch = torch if torch.cuda.is_available() else None
    m, nnz = (2000, 10**5) if args.quick else (20000, 10**7)
    widths = (1, 3, 64) if args.quick else WIDTHS
    rng = np.random.default_rng(0)
    print("| rows | N | phisparse ms | cupyx ms | torch ms | error vs cupyx |")
    print("|---|---|---|---|---|---|")
    for kind in ("uniform", "power law"):
        rows = rows_of(kind, m, nnz, rng)
        crows = np.searchsorted(rows, np.arange(m + 1)).astype(np.int32)
        cols = rng.integers(0, m, nnz).astype(np.int32)
        vals = rng.standard_normal(nnz).astype(np.float32)
        fns = products(cp, csp, torch, crows, cols, vals, (m, m))
        for n in widths:
            y = cp.asarray(rng.standard_normal((m, n)).astype(np.float32))
            want = fns["cupyx"](y).reshape(m, n)
            got = cp.from_dlpack(fns["phisparse"](y)).reshape(m, n)
            err = float(cp.abs(got - want).max() / max(float(cp.abs(want).max()), 1e-30))
            ms = {k: f"{event_ms(lambda: f(y)):.3f}" for k, f in fns.items()}
            print(f"| {kind} | {n} | {ms['phisparse']} | {ms['cupyx']} | "
                  f"{ms.get('torch', '–')} | {err:.1e} |", flush=True)
        del fns
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
