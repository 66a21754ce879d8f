"""PaddlePaddle (CPU): sparse.reshape (COO and CSR), sparse add, multiply, sum and abs (COO
and CSR), expand, tile, gather, take_along_axis.

Gradients run through Paddle's autograd: ``out.backward(out_grad)`` on a graph
built once, untimed, with the gradient released between calls.
"""
import functools

import paddle
import paddle.nn.functional as F

from ..measure import Case
from ..workloads import BINARY, REDUCE, UNARY
from ._dense_ops import CLIP, impls

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


def _arith_operand(inp, name):
    x = paddle.sparse.sparse_coo_tensor(paddle.to_tensor(inp[name + "_indices"]),
                                        paddle.to_tensor(inp[name + "_values"]),
                                        list(inp["shape"]))
    return x if inp["fmt"] == "coo" else x.to_sparse_csr()


#: op -> (label, f(x, y)): issue 16's sparse arithmetic, as Paddle's users call it.
ARITH = {"sparse_add": ("sparse.add", paddle.sparse.add),
         "sparse_multiply": ("sparse.multiply", paddle.sparse.multiply),
         "sparse_sum": ("sparse.sum", lambda x, y: paddle.sparse.sum(x)),
         "sparse_abs": ("sparse.abs", lambda x, y: paddle.sparse.abs(x))}


def arith(op):
    def factory(inp, be):
        x, y, fn = _arith_operand(inp, "x"), _arith_operand(inp, "y"), ARITH[op][1]
        return Case(lambda: fn(x, y))
    return factory


def _forwards(inp):
    new_shape, repeats, axis = inp.get("new_shape"), inp.get("repeats"), inp.get("axis")
    index = paddle.to_tensor(inp["index"]) if "index" in inp else None
    y = paddle.to_tensor(inp["y"]) if "y" in inp else None
    return {
        "matmul": lambda x: paddle.matmul(x, y),
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


def _dense_ops():
    """IMPLS of issue 19's elementwise ops and reductions: ``paddle.<op>`` (sigmoid and relu
    from ``paddle.nn.functional``), reductions with ``axis=`` (None: every axis)."""
    unary = {op: getattr(paddle, op) for op in UNARY if op not in ("sigmoid", "relu", "clip")}
    unary.update(sigmoid=F.sigmoid, relu=F.relu,
                 clip=functools.partial(paddle.clip, min=CLIP[0], max=CLIP[1]))
    reduce = {op: (lambda axis, f=getattr(paddle, op): functools.partial(f, axis=axis))
              for op in REDUCE}
    return impls(lambda a, be: paddle.to_tensor(a), unary,
                 {op: getattr(paddle, op) for op in BINARY}, reduce, paddle.where,
                 lambda op: {"sigmoid": "nn.functional.sigmoid",
                             "relu": "nn.functional.relu"}.get(op, op))


OPS = {"expand": "expand", "repeat": "tile", "gather": "gather",
       "batch_gather": "take_along_axis"}
IMPLS = {"coo_reshape": {"sparse.reshape": coo_reshape},
         "csr_reshape": {"sparse.reshape": csr_reshape},
         "reshape": {"reshape": forward("reshape")}}
IMPLS["matmul"] = {"matmul": forward("matmul")}
IMPLS.update(_dense_ops())
IMPLS["scale"] = {"x * 2.0": forward("scale")}
IMPLS.update({op: {label: arith(op)} for op, (label, _) in ARITH.items()})
for _op, _label in OPS.items():
    IMPLS[_op] = {_label: forward(_op)}
    IMPLS[_op + "_grad"] = {"autograd": backward(_op)}
