"""python -m sparse: a short tour of phisparse, checked against scipy and numpy.

It builds sparse tensors from generated data, reshapes them as COO (with and
without dense dims) and as CSR in C and F order, checks every result against
scipy, runs backward passes, shows dense reshape, expand and repeat, and
times one COO reshape next to scipy's.  It takes a few seconds and exits
non-zero on any mismatch.
"""
import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

import dense
import sparse


def _check(label, ok, detail=""):
    print(f"  {'ok ' if ok else 'FAIL'} {label}{(': ' + detail) if detail else ''}")
    if not ok:
        raise SystemExit(f"python -m sparse: check failed: {label}")


def _random_coords(rng, shape, nnz):
    flat = np.unique(rng.integers(0, int(np.prod(shape)), size=nnz))
    return np.array(np.unravel_index(flat, shape), dtype=np.int32)


def tour_coo(rng):
    print("COO reshape, any rank, checked against scipy's n-D coo_array")
    shape = (60, 40, 50)
    coords = _random_coords(rng, shape, 3000)
    vals = rng.standard_normal(coords.shape[1])
    x = sparse.sparse_coo_tensor(coords, vals, shape)
    m = sp.coo_array((vals, tuple(coords)), shape=shape)
    for new, order in [([2400, 50], "C"), ([50, -1], "F"), ([0, 20, 100], "C")]:
        y = sparse.reshape(x, new, order=order)
        ref = m.reshape(tuple(y.shape), order=order)
        same = np.array_equal(y.indices().numpy(), np.array(ref.coords)) and \
            np.array_equal(y.values().numpy(), ref.data)
        _check(f"{list(shape)} -> {new} order {order}: shape {y.shape}, nnz {y.nnz()}, "
               f"indices {y.indices().dtype}", same)
    d = x.to_dense().numpy()
    xd = dense.to_tensor(d).to_sparse_coo(2)          # dense dim of 50 per stored entry
    kept = sparse.reshape(xd, [20, 120, 50])
    _check(f"dense dims kept: sparse_dim {kept.sparse_dim()}, dense_dim {kept.dense_dim()}, "
           "values shared", kept.values()._data() is xd.values()._data()
           and np.array_equal(kept.to_dense().numpy(), d.reshape(20, 120, 50)))
    folded = sparse.reshape(xd, [600, 200])
    _check(f"dense dims changed -> folded: dense_dim {folded.dense_dim()}",
           np.array_equal(folded.to_dense().numpy(), d.reshape(600, 200)))


def tour_csr(rng):
    print("CSR reshape, 2-D and batched 3-D, checked against scipy's csr_array")
    m = sp.random_array((600, 400), density=0.01, format="csr", rng=rng)
    x = sparse.from_scipy(m)
    for new, order in [((800, 300), "C"), ((300, 800), "F")]:
        got = sparse.reshape(x, list(new), order=order).to_scipy()
        ref = m.reshape(new, order=order).tocsr()
        got.sort_indices()
        ref.sort_indices()
        same = all(np.array_equal(a, b) for a, b in
                   [(got.indptr, ref.indptr), (got.indices, ref.indices), (got.data, ref.data)])
        _check(f"[600, 400] -> {list(new)} order {order}: nnz {got.nnz}", same)
    b = sparse.reshape(x, [4, 300, 200])
    d = m.toarray().reshape(4, 300, 200)
    _check(f"[600, 400] -> [4, 300, 200] batched: crows {b.crows().shape[0]} = 4 * 301",
           np.array_equal(b.to_dense().numpy(), d))


def tour_backward(rng):
    print("backward: gradients keep the input's pattern and layout")
    x = sparse.sparse_csr_tensor([0, 2, 3, 5], [4, 1, 0, 3, 2], rng.standard_normal(5),
                                 [3, 5], stop_gradient=False)
    w = rng.standard_normal((5, 3))
    sparse.reshape(x, [5, 3], order="F").to_dense().backward(dense.to_tensor(w))
    coords = x.to_sparse_coo().indices().numpy()
    flat = np.ravel_multi_index(tuple(coords), (3, 5), order="F")
    want = w[np.unravel_index(flat, (5, 3), order="F")]
    _check(f"CSR x.grad is {x.grad.layout} with x's cols, values = weights at moved coords",
           x.grad.is_sparse_csr() and np.array_equal(x.grad.values().numpy(), want))
    c = sparse.sparse_coo_tensor([[0, 1, 0]], [1.0, 2.0, 3.0], [2], stop_gradient=False)
    sparse.reshape(c, [1, 2]).backward()
    _check("default backward gives the 0/1 pattern, duplicates included",
           np.array_equal(c.grad.values().numpy(), [1.0, 1.0, 1.0]))


def tour_dense():
    print("dense reshape (Paddle's 0 and -1)")
    t = dense.to_tensor(np.arange(48.0).reshape(2, 4, 6), stop_gradient=False)
    y = dense.reshape(t, [-1, 0, 3, 2])
    y.backward()
    _check(f"[2, 4, 6] -> [-1, 0, 3, 2] gives {y.shape}; grad of ones",
           y.shape == [2, 4, 3, 2] and np.array_equal(t.grad.numpy(), np.ones((2, 4, 6))))
    print("dense expand and repeat (OneFlow/PyTorch semantics)")
    e = dense.to_tensor(np.ones((1, 4, 1, 2)), stop_gradient=False)
    e.expand(2, 1, 2, 4, 2, 2).backward()
    _check("expand [1, 4, 1, 2] -> [2, 1, 2, 4, 2, 2]: grad 8.0 everywhere",
           np.array_equal(e.grad.numpy(), np.full((1, 4, 1, 2), 8.0)))
    r = dense.to_tensor(np.arange(6.0).reshape(3, 1, 2), stop_gradient=False)
    out = r.repeat(2, 1, 3, 0)
    out.backward()
    _check(f"repeat [3, 1, 2] by [2, 1, 3, 0] gives {out.shape} = np.tile; zero grad",
           np.array_equal(out.numpy(), np.tile(r.numpy(), (2, 1, 3, 0)))
           and not r.grad.numpy().any())


def tour_speed(rng):
    print("speed, one COO reshape (1e6 entries, (100,100,100) -> (10000,100)), median of 5")
    coords = rng.integers(0, 100, size=(3, 1_000_000))
    vals = rng.standard_normal(1_000_000)
    x = sparse.sparse_coo_tensor(coords, vals, [100, 100, 100])
    m = sp.coo_array((vals, tuple(coords)), shape=(100, 100, 100))
    times = {"phisparse": [], "scipy": []}
    for _ in range(5):
        for name, f in (("phisparse", lambda: sparse.reshape(x, [10000, 100])),
                        ("scipy", lambda: m.reshape((10000, 100)))):
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    ours, theirs = (float(np.median(times[k])) * 1e3 for k in ("phisparse", "scipy"))
    print(f"  phisparse {ours:.1f} ms, scipy {theirs:.1f} ms, ratio {ours / theirs:.2f} "
          "(python -m bench runs the full comparison)")


def main(argv=()):
    """Run the tour; ``argv`` holds the command-line flags (only --help)."""
    argparse.ArgumentParser(prog="python -m sparse", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter
                            ).parse_args(list(argv))
    rng = np.random.default_rng(2024)
    t0 = time.perf_counter()
    print("phisparse tour")
    tour_coo(rng)
    tour_csr(rng)
    tour_backward(rng)
    tour_dense()
    tour_speed(rng)
    print(f"all checks passed in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
