"""PaddlePaddle (CPU): sparse.reshape (COO and CSR), expand, tile, gather, take_along_axis.

Gradients run through Paddle's autograd: ``out.backward(out_grad)`` on a graph
built once, untimed, with the gradient released between calls.
"""
import paddle

from ..measure import Case

paddle.set_device("cpu")
BACKENDS = ("cpu",)


def version():
    return paddle.__version__


def unsupported(op, p, backend="cpu"):
    """Why Paddle cannot run this workload on the CPU, or None."""
    if op in ("spmm", "spgemm", "sddmm", "spmv"):
        return ("Paddle's sparse matmul family has no CPU kernel ('Not support CPU kernel "
                "of sparse.matmul now', Paddle#63717)")
    return None


def coo_reshape(inp, be):
    x = paddle.sparse.sparse_coo_tensor(paddle.to_tensor(inp["indices"]),
                                        paddle.to_tensor(inp["values"]), list(inp["shape"]))
    new = list(inp["new_shape"])
    return Case(lambda: paddle.sparse.reshape(x, new))


def csr_reshape(inp, be):
    x = paddle.sparse.sparse_csr_tensor(paddle.to_tensor(inp["crows"]),
                                        paddle.to_tensor(inp["cols"]),
                                        paddle.to_tensor(inp["values"]), list(inp["shape"]))
    new = list(inp["new_shape"])
    return Case(lambda: paddle.sparse.reshape(x, new))


def _forwards(inp):
    new_shape, repeats, axis = inp.get("new_shape"), inp.get("repeats"), inp.get("axis")
    index = paddle.to_tensor(inp["index"]) if "index" in inp else None
    y = paddle.to_tensor(inp["y"]) if "y" in inp else None
    return {
        "add": lambda x: paddle.add(x, y),
        "matmul": lambda x: paddle.matmul(x, y),
        "mean": lambda x: paddle.mean(x, axis=axis),
        "sum": lambda x: paddle.sum(x, axis=axis),
        "max": lambda x: paddle.max(x, axis=axis),
        "exp": lambda x: paddle.exp(x),
        "scale": lambda x: x * 2.0,
        "reshape": lambda x: paddle.reshape(x, list(new_shape)),
        "expand": lambda x: paddle.expand(x, list(new_shape)),
        "repeat": lambda x: paddle.tile(x, list(repeats)),
        "gather": lambda x: paddle.gather(x, index, axis=axis),
        "batch_gather": lambda x: paddle.take_along_axis(
            x, index.reshape(index.shape + [1] * (x.ndim - index.ndim)),
            axis=index.ndim - 1, broadcast=True),
    }


def forward(op):
    """A factory timing the forward of ``op``."""
    def factory(inp, be):
        x, fn = paddle.to_tensor(inp["x"]), _forwards(inp)[op]
        return Case(lambda: fn(x))
    return factory


def backward(op):
    """A factory timing ``out.backward(out_grad)`` of ``op``."""
    def factory(inp, be):
        x = paddle.to_tensor(inp["x"], stop_gradient=False)
        out, g = _forwards(inp)[op](x), paddle.to_tensor(inp["out_grad"])

        def run():
            out.backward(g, retain_graph=True)
            return x.grad
        return Case(run, lambda: x.clear_gradient(False))
    return factory


OPS = {"expand": "expand", "repeat": "tile", "gather": "gather",
       "batch_gather": "take_along_axis"}
IMPLS = {"coo_reshape": {"sparse.reshape": coo_reshape},
         "csr_reshape": {"sparse.reshape": csr_reshape},
         "reshape": {"reshape": forward("reshape")}}
for _op in ("add", "matmul", "mean", "sum", "max", "exp"):
    IMPLS[_op] = {_op: forward(_op)}
IMPLS["scale"] = {"x * 2.0": forward("scale")}
for _op, _label in OPS.items():
    IMPLS[_op] = {_label: forward(_op)}
    IMPLS[_op + "_grad"] = {"autograd": backward(_op)}
