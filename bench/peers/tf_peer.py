"""TensorFlow (CPU): tf.sparse.reshape, broadcast_to, tile, gather (with batch_dims),
tf.sparse.sparse_dense_matmul.

Gradients come from a persistent ``GradientTape`` recorded once, untimed;
each timed call is ``tape.gradient(out, x, output_gradients=out_grad)``
converted to a dense tensor (tf.gather's gradient is IndexedSlices, and every
peer is timed producing the dense ``x_grad``).
"""
import numpy as np
import tensorflow as tf

from ..measure import Case

BACKENDS = ("cpu",)


def version():
    return tf.__version__


def unsupported(op, p, backend="cpu"):
    """Why TensorFlow cannot run this workload, or None."""
    if op == "coo_reshape" and p["dense"]:
        return "tf.SparseTensor values are 1-D (no dense dims)"
    if op == "csr_reshape":
        return "TensorFlow has no CSR tensor in its core API"
    if op in ("spgemm", "sddmm"):
        return f"TensorFlow's core API has no {op} (tf.sparse has sparse x dense only)"
    if op in ("spmm", "spmv") and len(p["shape"]) == 3:
        return "tf.sparse.sparse_dense_matmul is rank-2 only"
    return None


def coo_reshape(inp, be):
    with tf.device("/CPU:0"):
        x = tf.SparseTensor(np.ascontiguousarray(inp["indices"].T), inp["values"],
                            inp["shape"])
    new = list(inp["new_shape"])
    return Case(lambda: tf.sparse.reshape(x, new))


def _forwards(inp):
    new_shape, repeats, axis = inp.get("new_shape"), inp.get("repeats"), inp.get("axis")
    index = tf.constant(inp["index"]) if "index" in inp else None
    return {
        "reshape": lambda x: tf.reshape(x, new_shape),
        "expand": lambda x: tf.broadcast_to(x, new_shape),
        "repeat": lambda x: tf.tile(x, repeats),
        "gather": lambda x: tf.gather(x, index, axis=axis),
        "batch_gather": lambda x: tf.gather(x, index, axis=index.ndim - 1,
                                            batch_dims=index.ndim - 1),
    }


def forward(op):
    """A factory timing the forward of ``op``."""
    def factory(inp, be):
        x, fn = tf.constant(inp["x"]), _forwards(inp)[op]
        return Case(lambda: fn(x))
    return factory


def backward(op):
    """A factory timing ``tape.gradient`` of ``op``, made dense."""
    def factory(inp, be):
        x, g = tf.constant(inp["x"]), tf.constant(inp["out_grad"])
        tape = tf.GradientTape(persistent=True)
        with tape:
            tape.watch(x)
            out = _forwards(inp)[op](x)
        return Case(lambda: tf.convert_to_tensor(tape.gradient(out, x, output_gradients=g)))
    return factory


OPS = {"expand": "broadcast_to", "repeat": "tile", "gather": "gather",
       "batch_gather": "gather(batch_dims)"}
def matmul(inp, be):
    """tf.sparse.sparse_dense_matmul of the CSR operand as a SparseTensor (a vector as
    a column)."""
    crows = inp["crows"]
    rows = np.repeat(np.arange(len(crows) - 1), np.diff(crows))
    y = inp["y"] if inp["y"].ndim == 2 else inp["y"][:, None]
    with tf.device("/CPU:0"):
        x = tf.SparseTensor(np.stack([rows, inp["cols"]], axis=1), inp["values"],
                            inp["shape"])
        y = tf.constant(y)
    return Case(lambda: tf.sparse.sparse_dense_matmul(x, y))


IMPLS = {"coo_reshape": {"sparse.reshape": coo_reshape},
         "spmm": {"sparse.sparse_dense_matmul": matmul},
         "spmv": {"sparse.sparse_dense_matmul": matmul},
         "reshape": {"reshape": forward("reshape")}}
for _op, _label in OPS.items():
    IMPLS[_op] = {_label: forward(_op)}
    IMPLS[_op + "_grad"] = {"GradientTape": backward(_op)}
