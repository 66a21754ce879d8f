"""pydata ``sparse``: ``COO.reshape`` and 2-D ``GCXS.reshape`` (its CSR); add,
multiply, sum and abs of COO (n-D) and GCXS.

Runs only from its own virtual environment: installed beside phisparse, it
would replace our ``sparse`` package.
"""
import sparse

from ..measure import Case

if not hasattr(sparse, "COO"):
    raise ImportError("the 'sparse' package importable here is not pydata's sparse "
                      f"(from {sparse.__file__}); give this peer its own venv")

BACKENDS = ("cpu",)


def version():
    return sparse.__version__


def unsupported(op, p, backend="cpu"):
    """Why pydata sparse cannot run this workload, or None."""
    if op == "coo_reshape" and p["dense"]:
        return "pydata sparse COO has no dense dims (every dim is sparse)"
    if op == "csr_reshape" and p["batch"]:
        return "pydata sparse GCXS has no batched CSR layout"
    return None


def _operand(inp, name):
    x = sparse.COO(inp[name + "_indices"], inp[name + "_values"], shape=inp["shape"],
                   has_duplicates=False, sorted=True)
    return x if inp["fmt"] == "coo" else sparse.GCXS(x, compressed_axes=(0,))


ARITH = {"sparse_add": ("x + y", lambda x, y: x + y),
         "sparse_multiply": ("x * y", lambda x, y: x * y),
         "sparse_sum": ("x.sum()", lambda x, y: x.sum()),
         "sparse_abs": ("abs(x)", lambda x, y: abs(x))}


def arith(op):
    def factory(inp, be):
        x, y, fn = _operand(inp, "x"), _operand(inp, "y"), ARITH[op][1]
        return Case(lambda: fn(x, y))
    return factory


def coo_reshape(inp, be):
    x = sparse.COO(inp["indices"], inp["values"], shape=inp["shape"],
                   has_duplicates=False, sorted=True)
    new = inp["new_shape"]
    return Case(lambda: x.reshape(new))


def csr_reshape(inp, be):
    x = sparse.GCXS((inp["values"], inp["cols"], inp["crows"]), shape=inp["shape"],
                    compressed_axes=(0,))
    new = inp["new_shape"]
    return Case(lambda: x.reshape(new))


IMPLS = {
    "coo_reshape": {"COO.reshape": coo_reshape},
    "csr_reshape": {"GCXS.reshape": csr_reshape},
}
IMPLS.update({op: {label: arith(op)} for op, (label, _) in ARITH.items()})
