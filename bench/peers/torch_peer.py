"""PyTorch (CPU and CUDA): expand().contiguous(), repeat, index_select, take_along_dim;
sparse COO ``permute`` and CSR ``t().to_sparse_csr()``; torch.sparse COO add and sum;
torch.sparse.mm, bmm, sampled_addmm and mv on sparse CSR (COO for bmm).

Gradients run through torch's autograd: ``out.backward(out_grad)`` on a graph
built once, untimed, with ``x.grad`` cleared between calls.

On the gpu backend every tensor a factory builds is copied to ``cuda``
(untimed, :func:`_t`).  The harness times a gpu call with CUDA events on
cupy's current stream, the null stream, on which torch's default (legacy)
stream queues its kernels too, so this interpreter needs cupy as well.  A
call torch has no CUDA kernel for raises NotImplementedError ("Could not run
'aten::...' with arguments from the 'SparseCUDA' backend"): a skipped job.
"""
import functools

import torch

from ..backends import fake_gpu, gpu_status
from ..measure import Case
from ..workloads import BINARY, REDUCE, UNARY
from ._dense_ops import CLIP, impls

BACKENDS = ("cpu", "gpu")
SKIP_ERRORS = (NotImplementedError,)


def version():
    return torch.__version__


def backend_missing(backend):
    """Why torch cannot run on ``backend`` here, or None."""
    if backend != "gpu":
        return None
    if fake_gpu():
        return "torch: no CUDA device (the gpu backend is the numpy stand-in)"
    if not torch.cuda.is_available():
        return "torch: no CUDA device"
    ok, why = gpu_status()
    return None if ok else f"torch: the gpu clock needs cupy in torch's interpreter: {why}"


def _t(a, be):
    """numpy array ``a`` as a torch tensor on ``be`` ('cuda' on the gpu backend)."""
    t = torch.from_numpy(a)
    return t.to("cuda") if be.name == "gpu" else t


def unsupported(op, p, backend="cpu"):
    """Why torch cannot run this workload, or None."""
    if op in ("coo_reshape", "csr_reshape"):
        return "torch has no reshape for sparse tensors ('not implemented for sparse tensors')"
    if op in ("sddmm", "spgemm") and len(p["shape"]) == 3:
        return "torch has no batched CSR product (pytorch#98675)"
    if op.startswith("sparse_") and p["fmt"] == "csr" and len(p["shape"]) != 2:
        return "torch's CSR arithmetic here is 2-D"
    return CSR_MISSING.get(op)


CSR_MISSING = {
    "csr_row_slice": "torch cannot slice a CSR tensor ('Sparse CSR tensors do not have strides')",
    "csr_index_select": "torch has no index_select for CSR ('Could not run aten::index_select "
                        "with arguments from the SparseCsrCPU backend')",
    "csr_vstack": "torch cannot concatenate CSR tensors ('Sparse CSR tensors do not have "
                  "is_contiguous', pytorch#129843)",
}


def coo_transpose(inp, be):
    x = torch.sparse_coo_tensor(_t(inp["indices"], be), _t(inp["values"], be),
                                tuple(inp["shape"]))
    perm = tuple(inp["perm"])
    return Case(lambda: x.permute(*perm))


def csr_transpose(inp, be):
    x = torch.sparse_csr_tensor(_t(inp["crows"], be), _t(inp["cols"], be),
                                _t(inp["values"], be), tuple(inp["shape"]))
    # t() gives CSC sharing the buffers; to_sparse_csr() does the transpose's real work
    return Case(lambda: x.t().to_sparse_csr())


def _operand(inp, name, be):
    x = torch.sparse_coo_tensor(_t(inp[name + "_indices"], be),
                                _t(inp[name + "_values"], be), inp["shape"],
                                is_coalesced=True)
    return x if inp["fmt"] == "coo" else x.to_sparse_csr()


def _coalesced(t):
    """COO ``t`` coalesced (a CSR tensor has no duplicates to sum)."""
    return t.coalesce() if t.layout == torch.sparse_coo else t


def _sum(x, y):
    """torch.sparse.sum of COO; CSR takes ``torch.sum`` (torch.sparse.sum coalesces)."""
    return torch.sparse.sum(x) if x.layout == torch.sparse_coo else torch.sum(x)


#: op -> {impl label: f(x, y)}.  On the CPU torch's ``x + y`` of two coalesced COO
#: tensors merges them into a coalesced sum; on CUDA it concatenates them and leaves the
#: duplicates unsummed, so ``(x + y).coalesce()`` is the sum phisparse returns there.
ARITH = {"sparse_add": {"x + y": lambda x, y: x + y,
                        "(x + y).coalesce()": lambda x, y: _coalesced(x + y)},
         "sparse_multiply": {"x * y": lambda x, y: x * y},
         "sparse_sum": {"torch.sparse.sum": _sum},
         "sparse_abs": {"torch.abs": lambda x, y: torch.abs(x)}}


def arith(fn):
    def factory(inp, be):
        x, y = _operand(inp, "x", be), _operand(inp, "y", be)
        return Case(lambda: fn(x, y))
    return factory


def _forwards(inp, be):
    """The forward of each dense op as a function of x."""
    new_shape, repeats, axis = inp.get("new_shape"), inp.get("repeats"), inp.get("axis")
    index = _t(inp["index"], be) if "index" in inp else None
    y = _t(inp["y"], be) if "y" in inp else None
    return {
        "matmul": lambda x: torch.matmul(x, y),
        "scale": lambda x: x * 2.0,
        "reshape": lambda x: x.reshape(*new_shape),
        "expand": lambda x: x.expand(*new_shape).contiguous(),
        "repeat": lambda x: x.repeat(*repeats),
        "gather": lambda x: torch.index_select(x, axis, index),
        "batch_gather": lambda x: torch.take_along_dim(
            x, index.reshape(index.shape + (1,) * (x.ndim - index.ndim)),
            dim=index.ndim - 1),
    }


def forward(op):
    """A factory timing the forward of ``op``."""
    def factory(inp, be):
        x, fn = _t(inp["x"], be), _forwards(inp, be)[op]
        return Case(lambda: fn(x))
    return factory


def backward(op):
    """A factory timing ``out.backward(out_grad)`` of ``op``."""
    def factory(inp, be):
        x = _t(inp["x"], be).requires_grad_()
        out, g = _forwards(inp, be)[op](x), _t(inp["out_grad"], be)

        def run():
            out.backward(g, retain_graph=True)
            return x.grad

        def reset():
            x.grad = None
        return Case(run, reset)
    return factory


def _csr(inp, be, prefix=""):
    """A CSR tensor; a batched one as torch lays it out (crows [B, m + 1], cols and
    values [B, nnz per batch]: the workloads give every batch the same nnz)."""
    shape = inp["shape"]
    lead = (shape[0], -1) if len(shape) == 3 else (-1,)
    parts = [_t(inp[prefix + k], be).reshape(lead) for k in ("crows", "cols", "values")]
    return torch.sparse_csr_tensor(*parts, shape, check_invariants=True)


def matmul(inp, be):
    """torch.sparse.mm on CSR (SpMM, SpGEMM); torch.bmm on a COO batch (batched CSR
    products are missing, pytorch#98675)."""
    if len(inp["shape"]) == 3:
        x = _csr(inp, be).to_sparse_coo().coalesce()
        y = _t(inp["y"], be)
        return Case(lambda: torch.bmm(x, y))
    x = _csr(inp, be)
    y = _csr(inp, be, "b_") if "b_crows" in inp else _t(inp["y"], be)
    return Case(lambda: torch.sparse.mm(x, y))


def sddmm(inp, be):
    mask, x, y = _csr(inp, be), _t(inp["x"], be), _t(inp["y"], be)
    return Case(lambda: torch.sparse.sampled_addmm(mask, x, y, beta=0.0))


def spmv(inp, be):
    x, v = _csr(inp, be), _t(inp["y"], be)
    return Case(lambda: torch.mv(x, v))


#: torch's function for each of issue 19's ops, where its name is not the op's.
TORCH_NAMES = {"subtract": "sub", "multiply": "mul", "divide": "div", "max": "amax",
               "min": "amin", "clip": "clamp"}


def _dense_ops():
    """IMPLS of issue 19's elementwise ops and reductions: ``torch.<name>`` (amax/amin for
    max/min, which return no indices; ``dim=`` for one axis, no argument for all).  Each
    entry makes its function when a factory runs (untimed)."""
    fn = {op: (lambda op=op: getattr(torch, TORCH_NAMES.get(op, op)))
          for op in UNARY + BINARY + REDUCE}
    unary = {op: fn[op] for op in UNARY}
    unary["clip"] = lambda: functools.partial(torch.clamp, min=CLIP[0], max=CLIP[1])
    reduce = {op: (lambda op=op: lambda axis: _along(fn[op](), axis)) for op in REDUCE}
    return impls(_t, unary, {op: fn[op] for op in BINARY}, reduce, lambda: torch.where,
                 lambda op: TORCH_NAMES.get(op, op), bind=lambda make, be: make())


def _along(f, axis):
    return f if axis is None else functools.partial(f, dim=axis)


OPS = {"expand": "expand().contiguous()", "repeat": "repeat",
       "gather": "index_select", "batch_gather": "take_along_dim"}
IMPLS = {"reshape": {"reshape": forward("reshape")},
         "coo_transpose": {"permute": coo_transpose},
         "csr_transpose": {"t().to_sparse_csr()": csr_transpose}}
IMPLS.update({"matmul": {"matmul": forward("matmul")}, "scale": {"x * 2.0": forward("scale")}})
IMPLS.update(_dense_ops())
IMPLS.update({op: {label: arith(fn) for label, fn in impls.items()}
              for op, impls in ARITH.items()})
for _op, _label in OPS.items():
    IMPLS[_op] = {_label: forward(_op)}
    IMPLS[_op + "_grad"] = {"autograd": backward(_op)}
IMPLS.update({"spmm": {"sparse.mm (bmm batched)": matmul}, "spgemm": {"sparse.mm": matmul},
              "sddmm": {"sparse.sampled_addmm": sddmm}, "spmv": {"mv": spmv}})
