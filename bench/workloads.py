"""The fixed workload set: parameters, input builders and the bytes each op must move.

Inputs are plain numpy arrays built from a fixed seed, so every peer's
subprocess builds the same data and converts it to its own types untimed.
A workload ``op`` names what the peers implement; ``*_grad`` workloads carry an
``out_grad`` input and time the backward alone.  ``tiny/*`` workloads run an op
on 10 elements (or 10 nonzeros) ``calls`` times per sample and report the time
per call: the fixed cost of one call, which a library called in a loop pays.

Traffic (``read``, ``write`` in bytes) is what the op cannot avoid moving:
indices are counted as int64, sparse values are not counted (a reshape can
share them), a gather reads only the rows it gathers, and a gradient reads
``out_grad`` and writes a full, fresh ``x_grad``.
"""
import dataclasses
import math

import numpy as np

SEED = 20240531
F32 = 4
I64 = 8


@dataclasses.dataclass(frozen=True)
class Workload:
    """One benchmark case at its full and its ``--quick`` size, and optionally a
    larger ``gpu`` size that replaces ``full`` on the gpu backend (not under
    ``--quick``): the CPU sizes leave a GPU idle most of a call.  A ``grouped``
    workload is short (a call of milliseconds or less): a peer's grouped jobs
    share a process, over many rounds (:func:`bench.runner.schedule`).

    Every size-dependent method takes the ``backend`` name ('cpu' by default).
    """

    name: str
    op: str
    full: dict
    quick: dict
    calls: int = 1
    gpu: dict = None
    grouped: bool = False

    def params(self, quick, backend="cpu"):
        """The parameters at the chosen size."""
        if quick:
            return self.quick
        return self.gpu if backend == "gpu" and self.gpu else self.full

    def calls_per_sample(self, quick):
        """Calls of the op per timed sample (a tenth under ``--quick``)."""
        return max(1, self.calls // 10) if quick else self.calls

    def describe(self, quick, backend="cpu"):
        """A one-line description with the shapes."""
        return DESCRIBE[self.op.removesuffix("_grad")](self.params(quick, backend))

    def inputs(self, quick, backend="cpu"):
        """The input arrays and attributes, built with the fixed seed."""
        p = self.params(quick, backend)
        rng = np.random.default_rng(SEED)
        base = self.op.removesuffix("_grad")
        inp = {**p, **BUILD[base](p, rng)}
        if self.op.endswith("_grad"):
            inp["out_grad"] = rng.random(OUT_SHAPE[base](p), dtype=np.float32)
        return inp

    def traffic(self, quick, backend="cpu"):
        """(read, write) bytes the op must move at the chosen size."""
        p = self.params(quick, backend)
        base = self.op.removesuffix("_grad")
        if base in OUT_SHAPE:
            return _dense_traffic(base, p, grad=self.op.endswith("_grad"))
        return TRAFFIC[base](p)


# ------------------------------------------------------------------ index helpers
def unique_flat(size, nnz, rng):
    """``nnz`` distinct sorted positions in [0, size): one per equal stratum.

    The stratum edges ``k * size // nnz`` are computed as
    ``k * (size // nnz) + k * (size % nnz) // nnz``, which is exact and stays in
    int64 while ``nnz ** 2`` does (a GPU size has ``nnz * size`` far past it).
    """
    if nnz > size or nnz * nnz >= 2**63 or size >= 2**62:
        raise ValueError(f"bench: cannot draw {nnz} distinct positions below {size}")
    k = np.arange(nnz + 1, dtype=np.int64)
    edges = k * (size // nnz) + k * (size % nnz) // nnz
    return edges[:-1] + (rng.random(nnz) * np.diff(edges)).astype(np.int64)


def unravel(flat, shape):
    """``np.unravel_index(flat, shape)`` as an int64 [ndim, n] array, by floor divisions
    (numpy divides by a scalar an order of magnitude faster than unravel_index does)."""
    out = np.empty((len(shape), flat.size), dtype=np.int64)
    rest = flat
    for d in range(len(shape) - 1, 0, -1):
        rest, out[d] = np.divmod(rest, shape[d])
    out[0] = rest
    return out


def _sparse_shape(p):
    return tuple(p["shape"]) + tuple(p["dense"])


# ------------------------------------------------------------------ COO reshape
def _coo_build(p, rng):
    flat = unique_flat(math.prod(p["shape"]), p["nnz"], rng)
    indices = unravel(flat, p["shape"])
    values = rng.random((p["nnz"], *p["dense"]), dtype=np.float32)
    return {"indices": indices, "values": values, "shape": _sparse_shape(p),
            "new_shape": tuple(p["new_shape"]) + tuple(p["dense"])}


def _coo_traffic(p):
    return len(p["shape"]) * p["nnz"] * I64, len(p["new_shape"]) * p["nnz"] * I64


def _coo_describe(p):
    dense = f", values [nnz,{','.join(map(str, p['dense']))}]" if p["dense"] else ""
    return f"COO {tuple(p['shape'])} -> {tuple(p['new_shape'])}, nnz {p['nnz']:.0e}{dense}"


# ------------------------------------------------------------------ CSR reshape
def _csr_build(p, rng):
    batch, (rows, cols) = p["batch"], p["shape"][-2:]
    per = p["nnz"] // max(batch, 1)
    crows, col_parts = [], []
    for _ in range(max(batch, 1)):
        flat = unique_flat(rows * cols, per, rng)
        counts = np.bincount(flat // cols, minlength=rows)
        crows.append(np.concatenate([[0], np.cumsum(counts)]))
        col_parts.append(flat % cols)
    return {"crows": np.concatenate(crows).astype(np.int64),
            "cols": np.concatenate(col_parts).astype(np.int64),
            "values": rng.random(per * max(batch, 1), dtype=np.float32),
            "shape": tuple(p["shape"]), "new_shape": tuple(p["new_shape"])}


def _csr_traffic(p):
    b = max(p["batch"], 1)
    crows_in = b * (p["shape"][-2] + 1) * I64
    crows_out = b * (p["new_shape"][-2] + 1) * I64
    return crows_in + p["nnz"] * I64, crows_out + p["nnz"] * I64


def _csr_describe(p):
    return f"CSR {tuple(p['shape'])} -> {tuple(p['new_shape'])}, nnz {p['nnz']:.0e}"


# ------------------------------------------------------------------ sparse arithmetic
SPARSE_ARITH = ("sparse_add", "sparse_multiply", "sparse_sum", "sparse_abs")

#: Issue 19's elementwise ops and reductions, each timed by name by every dense peer.
UNARY = ("neg", "abs", "exp", "log", "sqrt", "square", "sin", "cos", "tanh", "sigmoid",
         "relu", "clip")
BINARY = ("add", "subtract", "multiply", "divide", "pow", "maximum", "minimum")
REDUCE = ("sum", "mean", "max", "min", "prod", "argmax", "argmin")
#: A large dense input: 16 MiB of float32, where issue 19 compares us with numpy.
LARGE = (4096, 1024)


def _arith_build(p, rng):
    """Two canonical COO operands x and y (sorted unique coordinates, independent draws)."""
    out = {"shape": tuple(p["shape"]), "fmt": p["fmt"]}
    for name in ("x", "y"):
        flat = unique_flat(math.prod(p["shape"]), p["nnz"], rng)
        out[name + "_indices"] = unravel(flat, p["shape"])
        out[name + "_values"] = rng.random(p["nnz"], dtype=np.float32)
    return out


def _arith_traffic(op, p):
    entry = len(p["shape"]) * I64 + F32
    if op == "sparse_abs":          # values only: the indices are shared
        return p["nnz"] * F32, p["nnz"] * F32
    if op == "sparse_sum":
        return p["nnz"] * F32, F32
    out = 2 * p["nnz"] if op == "sparse_add" else 0
    return 2 * p["nnz"] * entry, out * entry


def _arith_describe(op, p):
    return (f"{op.removeprefix('sparse_')} {p['fmt'].upper()} {tuple(p['shape'])} f32, "
            f"nnz {p['nnz']:.0e}" + (" each" if op in ("sparse_add", "sparse_multiply")
                                      else ""))


# ------------------------------------------------------------------ sparse structure ops
def _struct_build(p, rng):
    """Inputs of the structure ops: one 3-D COO, or ``parts`` 2-D CSR matrices of p's shape."""
    if p["op"] == "coo_transpose":
        return {**_coo_build({**p, "dense": (), "new_shape": p["shape"]}, rng), "perm": p["perm"]}
    mats = [_csr_build({"batch": 0, "shape": p["shape"], "new_shape": p["shape"],
                        "nnz": p["nnz"] // p.get("parts", 1)}, rng)
            for _ in range(p.get("parts", 1))]
    out = dict(mats[0], mats=mats)
    if p["op"] == "csr_index_select":
        out["index"] = rng.integers(0, p["shape"][0], p["n_index"], dtype=np.int64)
    return out


def _struct_nnz_out(p):
    """Stored entries the op writes (expected counts for a slice or a row selection)."""
    if p["op"] == "csr_row_slice":
        return p["nnz"] * (p["stop"] - p["start"]) // p["shape"][0]
    if p["op"] == "csr_index_select":
        return p["nnz"] * p["n_index"] // p["shape"][0]
    return p["nnz"]


def _struct_traffic(p):
    """COO transpose rewrites the index rows (values are shared); the CSR ops move
    cols (int64) and values (f32) of every entry they write, and its crows."""
    if p["op"] == "coo_transpose":
        return (len(p["shape"]) * p["nnz"] * I64,) * 2
    n = _struct_nnz_out(p) * (I64 + F32)
    return n, n + (p["shape"][0] + 1) * I64


def _struct_describe(p):
    what = {"coo_transpose": f"COO {tuple(p['shape'])} transpose {tuple(p.get('perm', ()))}",
            "csr_transpose": f"CSR {tuple(p['shape'])} transpose into CSR",
            "csr_row_slice": f"CSR {tuple(p['shape'])} rows [{p.get('start')}, {p.get('stop')})",
            "csr_index_select": f"CSR {tuple(p['shape'])} index_select of {p.get('n_index')} rows",
            "csr_vstack": f"vstack of {p.get('parts')} CSR {tuple(p['shape'])}"}[p["op"]]
    return f"{what}, nnz {p['nnz']:.0e}"


# ------------------------------------------------------------------ dense ops
def _random(shape, rng):
    return rng.random(shape, dtype=np.float32)


def _positive(shape, rng):
    """float32 in [0.5, 1.5): inside every unary op's domain (log, sqrt) and away from 0."""
    return rng.random(shape, dtype=np.float32) + np.float32(0.5)


def _index(n, shape, rng):
    return rng.integers(0, n, size=shape, dtype=np.int64)


def _gather_out(p):
    s, ax = p["shape"], p["axis"]
    return tuple(s[:ax]) + (p["n_index"],) + tuple(s[ax + 1:])


def _batch_gather_out(p):
    return tuple(p["index_shape"]) + tuple(p["shape"][len(p["index_shape"]):])


def _reduced(p):
    """The shape a reduction over ``axis`` (an int, or None for every axis) leaves."""
    return () if p["axis"] is None else tuple(
        s for i, s in enumerate(p["shape"]) if i != p["axis"])


OUT_SHAPE = {
    "reshape": lambda p: tuple(p["new_shape"]),
    "expand": lambda p: tuple(p["new_shape"]),
    "repeat": lambda p: tuple(n * r for n, r in zip(p["shape"], p["repeats"])),
    "gather": _gather_out,
    "batch_gather": _batch_gather_out,
    "scale": lambda p: tuple(p["shape"]),
    "where": lambda p: tuple(p["shape"]),
}
for _op in UNARY:
    OUT_SHAPE[_op] = OUT_SHAPE["scale"]
for _op in BINARY:
    OUT_SHAPE[_op] = lambda p: np.broadcast_shapes(tuple(p["shape"]), tuple(p["y_shape"]))
for _op in REDUCE:
    OUT_SHAPE[_op] = _reduced

_INDEX_BYTES = {
    "gather": lambda p: p["n_index"] * I64,
    "batch_gather": lambda p: math.prod(p["index_shape"]) * I64,
}


def _dense_traffic(op, p, grad):
    x = math.prod(p["shape"]) * F32
    out = math.prod(OUT_SHAPE[op](p)) * F32
    index = _INDEX_BYTES.get(op, lambda p: 0)(p)
    if op in _INDEX_BYTES:  # a gather reads only the rows it gathers
        return (out + index, x) if grad else (out + index, out)
    if op in BINARY:  # a broadcast operand is read once
        return x + math.prod(p["y_shape"]) * F32, out
    if op == "where":  # a bool condition, x and y
        return x // F32 + 2 * x, out
    return (out, x) if grad else (x, out)


STRUCT_OPS = ("coo_transpose", "csr_transpose", "csr_row_slice", "csr_index_select",
              "csr_vstack")

BUILD = {
    "coo_reshape": _coo_build,
    "csr_reshape": _csr_build,
    **{op: _struct_build for op in STRUCT_OPS},
    "reshape": lambda p, rng: {"x": _random(p["shape"], rng)},
    "expand": lambda p, rng: {"x": _random(p["shape"], rng)},
    "repeat": lambda p, rng: {"x": _random(p["shape"], rng)},
    "gather": lambda p, rng: {"x": _random(p["shape"], rng),
                              "index": _index(p["shape"][p["axis"]], p["n_index"], rng)},
    "batch_gather": lambda p, rng: {
        "x": _random(p["shape"], rng),
        "index": _index(p["shape"][len(p["index_shape"]) - 1], p["index_shape"], rng)},
    "matmul": lambda p, rng: {"x": _random((p["m"], p["k"]), rng),
                              "y": _random((p["k"], p["n"]), rng)},
    "scale": lambda p, rng: {"x": _random(p["shape"], rng)},
    "where": lambda p, rng: {"cond": rng.random(p["shape"]) < 0.5,
                             "x": _positive(p["shape"], rng), "y": _positive(p["shape"], rng)},
}
for _op in UNARY + REDUCE:
    BUILD[_op] = lambda p, rng: {"x": _positive(p["shape"], rng)}
for _op in BINARY:
    BUILD[_op] = lambda p, rng: {"x": _positive(p["shape"], rng),
                                 "y": _positive(p["y_shape"], rng)}

TRAFFIC = {"coo_reshape": _coo_traffic, "csr_reshape": _csr_traffic,
           "matmul": lambda p: ((p["m"] * p["k"] + p["k"] * p["n"]) * F32, p["m"] * p["n"] * F32),
           **{op: _struct_traffic for op in STRUCT_OPS}}
for _op in SPARSE_ARITH:
    BUILD[_op] = _arith_build
    TRAFFIC[_op] = lambda p, _op=_op: _arith_traffic(_op, p)

DESCRIBE = {
    "coo_reshape": _coo_describe,
    "csr_reshape": _csr_describe,
    **{op: _struct_describe for op in STRUCT_OPS},
    "reshape": lambda p: f"reshape {list(p['shape'])} -> {list(p['new_shape'])} f32",
    "expand": lambda p: f"expand {list(p['shape'])} -> {list(p['new_shape'])} f32",
    "repeat": lambda p: f"repeat {list(p['shape'])} x {tuple(p['repeats'])} f32",
    "gather": lambda p: (f"gather axis={p['axis']} {list(p['shape'])} f32, "
                         f"{p['n_index']} indices"),
    "batch_gather": lambda p: (f"batch_gather {list(p['shape'])} f32, "
                               f"index {list(p['index_shape'])}"),
    "matmul": lambda p: f"matmul [{p['m']}, {p['k']}] @ [{p['k']}, {p['n']}] f32",
    "scale": lambda p: f"x * 2.0 (a Python scalar), {list(p['shape'])} f32",
    "where": lambda p: f"where(cond, x, y) {list(p['shape'])} f32",
}
for _op in UNARY:
    DESCRIBE[_op] = lambda p, _op=_op: f"{_op} {list(p['shape'])} f32"
for _op in BINARY:
    DESCRIBE[_op] = lambda p, _op=_op: f"{_op} {list(p['shape'])}, {list(p['y_shape'])} f32"
for _op in REDUCE:
    DESCRIBE[_op] = lambda p, _op=_op: (f"{_op} {list(p['shape'])} f32 over "
                                        + ("every axis" if p["axis"] is None
                                           else f"axis {p['axis']}"))
DESCRIBE.update({op: (lambda p, op=op: _arith_describe(op, p)) for op in SPARSE_ARITH})


# ------------------------------------------------------------------ the set
#: GPU sizes of the largest COO reshapes: nnz 1e8 (2.4 GB of 3-D indices in, 1.6 GB
#: of 2-D out), by the tag of the case whose ``full`` size they replace.
COO_GPU = {("3d-2d", "1e7"): {"shape": (10**4, 10**4, 10**4), "new_shape": (10**8, 10**4),
                              "nnz": 10**8},
           ("2d-3d", "1e7"): {"shape": (65536, 65536), "new_shape": (4096, 1024, 1024),
                              "nnz": 10**8}}


def _coo_workloads():
    cases = [("3d-2d", (1000, 1000, 1000), (1000000, 1000), (20, 30, 40), (600, 40)),
             ("2d-3d", (4096, 4096), (256, 256, 256), (64, 64), (16, 16, 16))]
    out = []
    for label, shape, new, qshape, qnew in cases:
        for nnz, qnnz, tag in ((10**6, 300, "1e6"), (10**7, 1000, "1e7")):
            for dense in ((), (4,)):
                suffix = "/dense4" if dense else ""
                gpu = COO_GPU.get((label, tag)) if not dense else None
                out.append(Workload(
                    f"coo_reshape/{label}/nnz{tag}{suffix}", "coo_reshape",
                    {"shape": shape, "new_shape": new, "nnz": nnz, "dense": dense},
                    {"shape": qshape, "new_shape": qnew, "nnz": qnnz, "dense": dense},
                    gpu=gpu and {**gpu, "dense": dense}))
    return out


def _csr_workloads():
    return [
        Workload("csr_reshape/2d/nnz1e7", "csr_reshape",
                 {"batch": 0, "shape": (20000, 20000), "new_shape": (40000, 10000),
                  "nnz": 10**7},
                 {"batch": 0, "shape": (200, 200), "new_shape": (400, 100), "nnz": 2000},
                 gpu={"batch": 0, "shape": (100000, 100000), "new_shape": (200000, 50000),
                      "nnz": 10**8}),
        Workload("csr_reshape/3d/nnz5e6", "csr_reshape",
                 {"batch": 8, "shape": (8, 4000, 4000), "new_shape": (8, 8000, 2000),
                  "nnz": 5 * 10**6},
                 {"batch": 2, "shape": (2, 40, 40), "new_shape": (2, 80, 20), "nnz": 400},
                 gpu={"batch": 8, "shape": (8, 40000, 40000), "new_shape": (8, 80000, 20000),
                      "nnz": 10**8}),
    ]


def _dense_workloads():
    """Full, quick and GPU sizes; the GPU outputs (and out_grads) are 1.5-4 GiB of f32."""
    sizes = {
        "expand": ({"shape": (4096, 1, 1024), "new_shape": (4096, 64, 1024)},
                   {"shape": (64, 1, 32), "new_shape": (64, 8, 32)},
                   {"shape": (16384, 1, 1024), "new_shape": (16384, 64, 1024)}),
        "repeat": ({"shape": (256, 256, 64), "repeats": (2, 3, 4)},
                   {"shape": (16, 16, 8), "repeats": (2, 3, 4)},
                   {"shape": (512, 512, 64), "repeats": (2, 3, 4)}),
        "gather": ({"shape": (1024, 4096, 64), "axis": 1, "n_index": 2048},
                   {"shape": (16, 64, 8), "axis": 1, "n_index": 32},
                   {"shape": (2048, 4096, 64), "axis": 1, "n_index": 4096}),
        "batch_gather": ({"shape": (64, 4096, 128), "index_shape": (64, 512)},
                         {"shape": (8, 64, 16), "index_shape": (8, 16)},
                         {"shape": (256, 8192, 256), "index_shape": (256, 4096)}),
    }
    return [Workload(op + grad, op + grad, full, quick, gpu=gpu)
            for op, (full, quick, gpu) in sizes.items() for grad in ("", "_grad")]


# ------------------------------------------------------------------ sparse matmul
def _csr_parts(p, rng, shape, nnz):
    """crows, cols, values of a random CSR matrix (batched when ``shape`` is 3-D)."""
    q = {"batch": shape[0] if len(shape) == 3 else 0, "shape": shape, "nnz": nnz,
         "new_shape": shape}
    built = _csr_build(q, rng)
    return built["crows"], built["cols"], built["values"]


def _matmul_build(p, rng):
    shape = tuple(p["shape"])
    crows, cols, values = _csr_parts(p, rng, shape, p["nnz"])
    inp = {"crows": crows, "cols": cols, "values": values, "shape": shape}
    if p["kind"] == "spgemm":
        inp["b_crows"], inp["b_cols"], inp["b_values"] = _csr_parts(p, rng, shape, p["nnz"])
    elif p["kind"] == "sddmm":
        inp["x"] = _random(shape[:-1] + (p["n"],), rng)
        inp["y"] = _random(shape[:-2] + (p["n"], shape[-1]), rng)
    elif p["kind"] == "spmv":
        inp["y"] = _random(shape[:-2] + (shape[-1],), rng)
    else:
        inp["y"] = _random(shape[:-2] + (shape[-1], p["n"]), rng)
    return inp


def _matmul_traffic(p):
    """Read the CSR operand(s) and the dense ones, write the result; SpGEMM's output is
    estimated as one entry per product (nnz * nnz / inner dim), since few collide."""
    shape, nnz = tuple(p["shape"]), p["nnz"]
    batch, (m, k) = (shape[0] if len(shape) == 3 else 1), shape[-2:]
    csr = nnz * (I64 + F32) + batch * (m + 1) * I64
    n = p.get("n", 1)
    if p["kind"] == "spgemm":
        return 2 * csr, (nnz * nnz // k) * (I64 + F32)
    if p["kind"] == "sddmm":
        return csr + batch * (m + k) * n * F32, nnz * F32
    return csr + batch * k * n * F32, batch * m * n * F32


def _matmul_describe(p):
    shape = "x".join(map(str, p["shape"]))
    other = {"spmm": f"@ dense [.., {p.get('n')}]", "spmv": "@ dense vector",
             "spgemm": "@ CSR of the same nnz", "sddmm": f"mask, k={p.get('n')}"}[p["kind"]]
    return f"{p['kind']}: CSR {shape} nnz {p['nnz']:.0e} f32 {other}"


def _matmul_workloads():
    cases = [("spmm/nnz1e6", {"kind": "spmm", "shape": (20000, 20000), "nnz": 10**6, "n": 64}),
             ("spmm/nnz1e7", {"kind": "spmm", "shape": (20000, 20000), "nnz": 10**7, "n": 64}),
             ("spmm/batched", {"kind": "spmm", "shape": (8, 4000, 4000), "nnz": 5 * 10**6,
                               "n": 32}),
             ("spgemm/nnz1e6", {"kind": "spgemm", "shape": (100000, 100000), "nnz": 10**6}),
             ("sddmm/nnz1e6", {"kind": "sddmm", "shape": (20000, 20000), "nnz": 10**6,
                               "n": 64}),
             ("spmv/nnz1e7", {"kind": "spmv", "shape": (20000, 20000), "nnz": 10**7})]
    out = []
    for name, full in cases:
        quick = dict(full, nnz=300, shape=tuple(min(s, 8) if len(full["shape"]) == 3 and i == 0
                                               else 60 for i, s in enumerate(full["shape"])))
        out.append(Workload(name, full["kind"], full, quick))
    return out


for _kind in ("spmm", "spgemm", "sddmm", "spmv"):
    BUILD[_kind], TRAFFIC[_kind], DESCRIBE[_kind] = (_matmul_build, _matmul_traffic,
                                                     _matmul_describe)





def _arith_workloads():
    """2-D COO and CSR at nnz 1e6 and 1e7 (scipy's ground), 3-D COO (pydata's)."""
    out = []
    for op in SPARSE_ARITH:
        for fmt in ("coo", "csr"):
            for nnz, tag in ((10**6, "1e6"), (10**7, "1e7")):
                out.append(Workload(
                    f"{op}/{fmt}2d/nnz{tag}", op,
                    {"fmt": fmt, "shape": (1 << 16, 1 << 16), "nnz": nnz},
                    {"fmt": fmt, "shape": (64, 64), "nnz": 200}))
        out.append(Workload(f"{op}/coo3d/nnz1e6", op,
                            {"fmt": "coo", "shape": (1024, 1024, 1024), "nnz": 10**6},
                            {"fmt": "coo", "shape": (16, 16, 16), "nnz": 200}))
    return out


def _dense_compute_workloads():
    """Issue 19's large rows: every elementwise op and reduction on 16 MiB of float32
    (``dense/<op>``; reductions over axis 1 and over everything), a broadcast add, a
    1024^2 matmul."""
    quick = (64, 32)
    out = [Workload(f"dense/{op}", op, {"shape": LARGE}, {"shape": quick}, grouped=True)
           for op in UNARY]
    out += [Workload(f"dense/{op}", op, {"shape": LARGE, "y_shape": LARGE},
                     {"shape": quick, "y_shape": quick}, grouped=True) for op in BINARY]
    out.append(Workload("dense/where", "where", {"shape": LARGE}, {"shape": quick},
                        grouped=True))
    out += [Workload(f"dense/{op}/{tag}", op, {"shape": LARGE, "axis": axis},
                     {"shape": quick, "axis": axis}, grouped=True)
            for op in REDUCE for axis, tag in ((1, "axis1"), (None, "all"))]
    return out + [
        Workload("add/broadcast", "add", {"shape": (8192, 1024), "y_shape": (1024,)},
                 {"shape": (64, 32), "y_shape": (32,)}),
        Workload("matmul/1024", "matmul", {"m": 1024, "k": 1024, "n": 1024},
                 {"m": 32, "k": 16, "n": 8}),
    ]


def _struct_workloads():
    """Transpose, row slice, row index_select and vstack at nnz 1e6 and 1e7."""
    big, small = (20000, 20000), (200, 200)
    cases = {
        "coo_transpose": ({"shape": (1000, 1000, 1000), "perm": (2, 0, 1)},
                          {"shape": (20, 30, 40), "perm": (2, 0, 1)}),
        "csr_transpose": ({"shape": big}, {"shape": small}),
        "csr_row_slice": ({"shape": big, "start": 5000, "stop": 15000},
                          {"shape": small, "start": 50, "stop": 150}),
        "csr_index_select": ({"shape": big, "n_index": 10000},
                             {"shape": small, "n_index": 100}),
        "csr_vstack": ({"shape": big, "parts": 4}, {"shape": small, "parts": 4}),
    }
    return [Workload(f"{op}/nnz{tag}", op, {**full, "op": op, "nnz": nnz},
                     {**quick, "op": op, "nnz": qnnz})
            for op, (full, quick) in cases.items()
            for nnz, qnnz, tag in ((10**6, 300, "1e6"), (10**7, 1000, "1e7"))]


#: Calls per timed sample of a tiny workload.
TINY_CALLS = 2000


def _tiny_workloads():
    """Issue 12's ops (reshape, expand, repeat, gather, COO reshape), issue 19's
    (``x * 2.0``, matmul, every elementwise op and reduction) on 10 elements, and
    issue 16's sparse add, multiply, sum and abs on 10 stored entries (COO and CSR)."""
    params = {
        "reshape": {"shape": (2, 5), "new_shape": (5, 2)},
        "expand": {"shape": (10, 1), "new_shape": (10, 3)},
        "repeat": {"shape": (10,), "repeats": (2,)},
        "gather": {"shape": (10,), "axis": 0, "n_index": 3},
        "coo_reshape": {"shape": (10, 10), "new_shape": (100,), "nnz": 10, "dense": ()},
        "scale": {"shape": (10,)},
        "matmul": {"m": 2, "k": 5, "n": 2},
        "where": {"shape": (10,)},
        **{op: {"shape": (10,)} for op in UNARY},
        **{op: {"shape": (10,), "y_shape": (10,)} for op in BINARY},
        **{op: {"shape": (2, 5), "axis": 1} for op in REDUCE},
    }
    sparse = {f"{op}_{fmt}": (op, {"fmt": fmt, "shape": (4, 5), "nnz": 10})
              for op in SPARSE_ARITH for fmt in ("coo", "csr")}
    return [Workload(f"tiny/{op}", op, p, p, TINY_CALLS, grouped=True)
            for op, p in params.items()] + \
        [Workload(f"tiny/{name}", op, p, p, TINY_CALLS, grouped=True)
         for name, (op, p) in sparse.items()]


WORKLOADS = (_coo_workloads() + _csr_workloads() + _struct_workloads() + _dense_workloads()
             + _dense_compute_workloads() + _tiny_workloads() + _arith_workloads()
             + _matmul_workloads())
BY_NAME = {w.name: w for w in WORKLOADS}
