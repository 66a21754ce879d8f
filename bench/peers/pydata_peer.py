"""pydata ``sparse``: ``COO.reshape`` and 2-D ``GCXS.reshape`` (its CSR).

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


def unsupported(op, p):
    """Why pydata sparse cannot run this workload, or None."""
    if op == "coo_reshape" and p["dense"]:
        return "pydata sparse COO has no dense dims (every dim is sparse)"
    if op == "csr_reshape" and p["batch"]:
        return "pydata sparse GCXS has no batched CSR layout"
    return None


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
