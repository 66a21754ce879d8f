"""phisparse, from this checkout: sparse.reshape, transpose, slice, index_select, concat;
expand, repeat, gather, batch_gather; sparse add, multiply, sum and abs; sparse.matmul (SpMM,
SpGEMM), sparse.masked_matmul (SDDMM) and sparse.mv.

Gradients run through phisparse's autograd: ``out.backward(out_grad)`` on a
graph built once, untimed (``retain_graph=True``), with ``x.grad`` cleared
between calls, as for torch and Paddle.  On the gpu backend every array a
factory hands phisparse (indices, values, index arrays and ``out_grad``
included) is a cupy array (``be.asarray``), so the tensors' place is 'gpu' and
the ops dispatch to the gpu kernels with no host copy; an op without one is a
skipped job (:data:`SKIP_ERRORS`).
"""
import functools
import importlib.metadata

import dense
import sparse
from kernels import KernelNotFoundError

from ..measure import Case
from ..workloads import BINARY, REDUCE, UNARY
from ._dense_ops import CLIP, impls

BACKENDS = ("cpu", "gpu")
SKIP_ERRORS = (KernelNotFoundError,)
NEEDS = {
    "reshape": ("dense.reshape",),
    "coo_reshape": ("sparse.sparse_coo_tensor", "sparse.reshape"),
    "csr_reshape": ("sparse.sparse_csr_tensor", "sparse.reshape"),
    "coo_transpose": ("sparse.sparse_coo_tensor", "sparse.transpose"),
    "csr_transpose": ("sparse.sparse_csr_tensor", "sparse.transpose"),
    "csr_row_slice": ("sparse.sparse_csr_tensor", "sparse.slice"),
    "csr_index_select": ("sparse.sparse_csr_tensor", "sparse.index_select"),
    "csr_vstack": ("sparse.sparse_csr_tensor", "sparse.concat"),
    "expand": ("dense.expand",),
    "repeat": ("dense.repeat",),
    "gather": ("dense.gather",),
    "batch_gather": ("dense.batch_gather",),
    "spmm": ("sparse.matmul",),
    "spgemm": ("sparse.matmul",),
    "sddmm": ("sparse.masked_matmul",),
    "spmv": ("sparse.mv",),
    "sparse_add": ("sparse.add",),
    "sparse_multiply": ("sparse.multiply",),
    "sparse_sum": ("sparse.sum",),
    "sparse_abs": ("sparse.abs",),
    "matmul": ("dense.matmul",),
    "scale": ("dense.multiply",),
    **{op: (f"dense.{op}",) for op in UNARY + BINARY + REDUCE + ("where",)},
}
_MODULES = {"dense": dense, "sparse": sparse}


def version():
    try:
        return importlib.metadata.version("phisparse") + " (this checkout)"
    except importlib.metadata.PackageNotFoundError:
        return "this checkout"


def unsupported(op, p, backend="cpu"):
    """Why this checkout cannot run ``op`` yet (a public name it lacks), or None."""
    names = NEEDS[op.removesuffix("_grad")]
    missing = [n for n in names if not hasattr(_MODULES[n.split(".")[0]], n.split(".")[1])]
    return f"phisparse has no {', '.join(missing)} yet" if missing else None


def _tensor(a, be, stop_gradient=True):
    return dense.to_tensor(be.asarray(a), stop_gradient=stop_gradient)


def _coo(inp, be):
    return sparse.sparse_coo_tensor(be.asarray(inp["indices"]), be.asarray(inp["values"]),
                                    list(inp["shape"]))


def _csr(m, be, prefix=""):
    """The CSR tensor of ``m``'s ``{prefix}crows``, ``cols`` and ``values`` (shape ``shape``)."""
    return sparse.sparse_csr_tensor(*(be.asarray(m[prefix + k])
                                      for k in ("crows", "cols", "values")), list(m["shape"]))


def coo_reshape(inp, be):
    x, new = _coo(inp, be), list(inp["new_shape"])
    return Case(lambda: sparse.reshape(x, new))


def csr_reshape(inp, be):
    x, new = _csr(inp, be), list(inp["new_shape"])
    return Case(lambda: sparse.reshape(x, new))


def _operand(inp, name, be):
    """Operand ``name`` ('x' or 'y') as a COO tensor flagged coalesced, or as CSR."""
    x = sparse.sparse_coo_tensor(be.asarray(inp[name + "_indices"]),
                                 be.asarray(inp[name + "_values"]), list(inp["shape"]))
    return sparse.coalesce(x) if inp["fmt"] == "coo" else x.to_sparse_csr()


ARITH = {"sparse_add": lambda x, y: x + y, "sparse_multiply": lambda x, y: x * y,
         "sparse_sum": lambda x, y: sparse.sum(x), "sparse_abs": lambda x, y: sparse.abs(x)}


def arith(op):
    """A factory timing the sparse arithmetic op on the operands built untimed."""
    def factory(inp, be):
        x, y, fn = _operand(inp, "x", be), _operand(inp, "y", be), ARITH[op]
        return Case(lambda: fn(x, y))
    return factory


def coo_transpose(inp, be):
    x, perm = _coo(inp, be), list(inp["perm"])
    return Case(lambda: sparse.transpose(x, perm))


def csr_transpose(inp, be):
    x = _csr(inp, be)
    return Case(lambda: sparse.transpose(x, [1, 0]))


def csr_row_slice(inp, be):
    x, a, b = _csr(inp, be), inp["start"], inp["stop"]
    return Case(lambda: sparse.slice(x, [0], [a], [b]))


def csr_index_select(inp, be):
    x, index = _csr(inp, be), _tensor(inp["index"], be)
    return Case(lambda: sparse.index_select(x, index, 0))


def csr_vstack(inp, be):
    mats = [_csr(m, be) for m in inp["mats"]]
    return Case(lambda: sparse.concat(mats, 0))


def _forwards(inp, be):
    new_shape, repeats, axis = inp.get("new_shape"), inp.get("repeats"), inp.get("axis")
    index = _tensor(inp["index"], be) if "index" in inp else None
    return {
        "reshape": lambda x: dense.reshape(x, list(new_shape)),
        "expand": lambda x: dense.expand(x, list(new_shape)),
        "repeat": lambda x: dense.repeat(x, list(repeats)),
        "gather": lambda x: dense.gather(x, index, axis=axis),
        "batch_gather": lambda x: dense.batch_gather(x, index),
    }


def forward(op):
    """A factory timing the forward of ``op``."""
    def factory(inp, be):
        x, fn = _tensor(inp["x"], be), _forwards(inp, be)[op]
        return Case(lambda: fn(x))
    return factory


def backward(op):
    """A factory timing ``out.backward(out_grad)`` of ``op``."""
    def factory(inp, be):
        x = _tensor(inp["x"], be, stop_gradient=False)
        out, g = _forwards(inp, be)[op](x), _tensor(inp["out_grad"], be)

        def run():
            out.backward(g, retain_graph=True)
            return x.grad
        return Case(run, x.clear_grad)
    return factory


def matmul(inp, be):
    """SpMM and SpGEMM: sparse.matmul on CSR tensors (the batched one included)."""
    x = _csr(inp, be)
    y = _csr(inp, be, "b_") if "b_crows" in inp else _tensor(inp["y"], be)
    return Case(lambda: sparse.matmul(x, y))


def sddmm(inp, be):
    mask, x, y = _csr(inp, be), _tensor(inp["x"], be), _tensor(inp["y"], be)
    return Case(lambda: sparse.masked_matmul(x, y, mask))


def spmv(inp, be):
    x, v = _csr(inp, be), _tensor(inp["y"], be)
    return Case(lambda: sparse.mv(x, v))


def matmul_dense(inp, be):
    x, y = _tensor(inp["x"], be), _tensor(inp["y"], be)
    return Case(lambda: dense.matmul(x, y))


def scale(inp, be):
    x = _tensor(inp["x"], be)
    return Case(lambda: x * 2.0)


def _dense_ops():
    """IMPLS of issue 19's elementwise ops and reductions: ``dense.<op>``."""
    unary = {op: getattr(dense, op) for op in UNARY if op != "clip"}
    unary["clip"] = functools.partial(dense.clip, min=CLIP[0], max=CLIP[1])
    reduce = {op: (lambda axis, op=op: functools.partial(getattr(dense, op), axis=axis))
              for op in REDUCE}
    return impls(lambda a, be: _tensor(a, be), unary,
                 {op: getattr(dense, op) for op in BINARY}, reduce, dense.where,
                 lambda op: op)


IMPLS = {"coo_reshape": {"sparse.reshape": coo_reshape},
         "csr_reshape": {"sparse.reshape": csr_reshape},
         "coo_transpose": {"sparse.transpose": coo_transpose},
         "csr_transpose": {"sparse.transpose": csr_transpose},
         "csr_row_slice": {"sparse.slice": csr_row_slice},
         "csr_index_select": {"sparse.index_select": csr_index_select},
         "csr_vstack": {"sparse.concat": csr_vstack},
         "reshape": {"reshape": forward("reshape")},
         "spmm": {"sparse.matmul": matmul}, "spgemm": {"sparse.matmul": matmul},
         "sddmm": {"sparse.masked_matmul": sddmm}, "spmv": {"sparse.mv": spmv},
         "matmul": {"matmul": matmul_dense}, "scale": {"x * 2.0": scale}}
IMPLS.update(_dense_ops())
IMPLS.update({op: {f"sparse.{op.removeprefix('sparse_')}": arith(op)} for op in ARITH})
for _op in ("expand", "repeat", "gather", "batch_gather"):
    IMPLS[_op] = {_op: forward(_op)}
    IMPLS[_op + "_grad"] = {"autograd": backward(_op)}
