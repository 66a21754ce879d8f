"""scipy.sparse: 2-D CSR products (``@`` with a dense matrix or vector, or a CSR
matrix), n-D ``coo_array.reshape``, 2-D ``csr_array.reshape`` (made CSR
again: scipy returns COO), the gather gradients as a one-hot sparse matrix
times the dense ``out_grad``, the structure ops (n-D ``coo_array.transpose``,
``.T.tocsr()``, row slicing and fancy row indexing, ``vstack``), and 2-D add,
multiply, sum and abs.

scipy stores indices as int32 whenever they fit; that is its own choice and
counts in its favour.
"""
import numpy as np
import scipy
import scipy.sparse as sp

from ..measure import Case
from ._grad import split_axis

BACKENDS = ("cpu",)


def version():
    return scipy.__version__


def unsupported(op, p, backend="cpu"):
    """Why scipy cannot run this workload, or None."""
    if op == "coo_reshape" and p["dense"]:
        return "scipy.sparse COO has no dense dims (values must be 1-D)"
    if op == "csr_reshape" and p["batch"]:
        return "scipy.sparse CSR is 2-D only (no batched CSR)"
    if op in ("spmm", "spgemm", "sddmm", "spmv") and len(p["shape"]) == 3:
        return "scipy.sparse CSR is 2-D only (no batched CSR)"
    if op == "sddmm":
        return "scipy.sparse has no SDDMM (sampled dense-dense product)"
    if op.startswith("sparse_") and len(p["shape"]) != 2:
        return "scipy.sparse arithmetic is 2-D only"
    return None


def _operand(inp, name):
    a = sp.coo_array((inp[name + "_values"], tuple(inp[name + "_indices"])), shape=inp["shape"])
    a.has_canonical_format = True      # the bench builds sorted unique coordinates
    return a if inp["fmt"] == "coo" else a.tocsr()


ARITH = {"sparse_add": ("a + b", lambda a, b: a + b),
         "sparse_multiply": ("a.multiply(b)", lambda a, b: a.multiply(b)),
         "sparse_sum": ("a.sum()", lambda a, b: a.sum()),
         "sparse_abs": ("abs(a)", lambda a, b: abs(a))}


def arith(op):
    def factory(inp, be):
        a, b, fn = _operand(inp, "x"), _operand(inp, "y"), ARITH[op][1]
        return Case(lambda: fn(a, b))
    return factory


def coo_reshape(inp, be):
    x = sp.coo_array((inp["values"], tuple(inp["indices"])), shape=inp["shape"])
    new = inp["new_shape"]
    return Case(lambda: x.reshape(new))


def csr_reshape(inp, be):
    x = sp.csr_array((inp["values"], inp["cols"], inp["crows"]), shape=inp["shape"])
    new = inp["new_shape"]
    # scipy's CSR reshape returns COO; .tocsr() makes the output CSR like every peer's
    return Case(lambda: x.reshape(new).tocsr())


def _one_hot_t(rows, n):
    """The transposed one-hot matrix [n, len(rows)] as CSC: column k is e_rows[k]."""
    k = len(rows)
    return sp.csc_array((np.ones(k, np.float32), rows, np.arange(k + 1)), shape=(n, k))


def gather_grad(inp, be):
    g, index, shape, axis = inp["out_grad"], inp["index"], inp["shape"], inp["axis"]
    outer, n, inner = split_axis(shape, axis)
    g3 = g.reshape(outer, len(index), inner)

    def run():
        hot_t = _one_hot_t(index, n)
        out = np.empty((outer, n, inner), g.dtype)
        for a in range(outer):
            out[a] = hot_t @ g3[a]
        return out.reshape(shape)
    return Case(run)


def batch_gather_grad(inp, be):
    g, index, shape = inp["out_grad"], inp["index"], inp["shape"]
    batch, n, inner = split_axis(shape, index.ndim - 1)
    offset = (np.arange(batch) * n).reshape(index.shape[:-1] + (1,))
    g2 = g.reshape(-1, inner)

    def run():
        hot_t = _one_hot_t((index + offset).ravel(), batch * n)
        return (hot_t @ g2).reshape(shape)
    return Case(run)


def _csr(inp, prefix=""):
    return sp.csr_array((inp[prefix + "values"], inp[prefix + "cols"], inp[prefix + "crows"]),
                        shape=inp["shape"])


def matmul(inp, be):
    """``csr_array @ dense`` (SpMM, SpMV) and ``csr_array @ csr_array`` (SpGEMM)."""
    x = _csr(inp)
    y = _csr(inp, "b_") if "b_crows" in inp else inp["y"]
    return Case(lambda: x @ y)


def coo_transpose(inp, be):
    x = sp.coo_array((inp["values"], tuple(inp["indices"])), shape=inp["shape"])
    perm = tuple(inp["perm"])
    return Case(lambda: x.transpose(perm))


def csr_transpose(inp, be):
    x = _csr(inp)
    return Case(lambda: x.T.tocsr())


def csr_row_slice(inp, be):
    x, a, b = _csr(inp), inp["start"], inp["stop"]
    return Case(lambda: x[a:b])


def csr_index_select(inp, be):
    x, index = _csr(inp), inp["index"]
    return Case(lambda: x[index])


def csr_vstack(inp, be):
    mats = [_csr(m) for m in inp["mats"]]
    return Case(lambda: sp.vstack(mats, format="csr"))


IMPLS = {
    "spmm": {"csr_array @ dense": matmul},
    "spgemm": {"csr_array @ csr_array": matmul},
    "spmv": {"csr_array @ vector": matmul},
    "coo_transpose": {"coo_array.transpose(axes)": coo_transpose},
    "csr_transpose": {".T.tocsr()": csr_transpose},
    "csr_row_slice": {"m[a:b]": csr_row_slice},
    "csr_index_select": {"m[index]": csr_index_select},
    "csr_vstack": {"vstack(format='csr')": csr_vstack},
    "coo_reshape": {"coo_array.reshape": coo_reshape},
    "csr_reshape": {"csr_array.reshape().tocsr()": csr_reshape},
    "gather_grad": {"one-hot csc @ dense": gather_grad},
    "batch_gather_grad": {"one-hot csc @ dense": batch_gather_grad},
}
IMPLS.update({op: {label: arith(op)} for op, (label, _) in ARITH.items()})
