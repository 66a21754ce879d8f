"""``family : unary`` / ``family : binary``: one YAML entry per elementwise op.

The entry names an op of :mod:`kernels.funcs.elementwise` and gives its API
(``args``) and ``doc``; everything else follows from the table, so every
member is built the same way:

- the forward op: kernel ``<name>`` from ``kernels.dense.elementwise``,
  shape rule ``unary_infer_meta`` / ``binary_infer_meta`` (numpy broadcasting
  and promotion), backward ``<name>_grad`` when the table has a derivative;
  in the sparse YAML (unary only: value-wise ops) kernels ``<name>_coo`` and
  ``<name>_csr`` from ``kernels.sparse`` and shape rule
  ``sparse_unary_infer_meta``;
- the backward op ``<name>_grad(x[, y], out, out_grad, params...)``; a binary
  one sums each gradient back to its input's shape and is ``optional_grads``
  (it computes only the gradients of inputs that need one);
- SBP rules: ``S(i) -> S(i)`` (and ``P -> P`` for linear unary ops); for
  binary ops a split of an axis both inputs keep, or of an axis the other
  input broadcasts over (which stays B), plus the table's partial-sum rules.
"""
from .loader import Located
from .model import ForwardDef, InferMetaDef, OpDef, parse_args
from ..core.opspec import Arg, KernelSig

FAMILY_KEYS = {"op", "family", "args", "doc"}
MODULE = {"dense": "kernels.dense.elementwise", "sparse": "kernels.sparse"}
# the kernels' name suffixes and layouts: a sparse value-wise op maps each layout to itself
LAYOUTS = {"dense": (("", "dense"),), "sparse": (("_coo", "sparse_coo"), ("_csr", "sparse_csr"))}
SHAPE_RULE = {"dense": "{kind}_infer_meta", "sparse": "sparse_{kind}_infer_meta"}
_TENSORS = {"unary": ("x",), "binary": ("x", "y")}
_BINARY_SPLITS = (
    "S(i), S(j) -> S(i + out.ndim - x.ndim) if i + out.ndim - x.ndim == j + out.ndim - y.ndim"
    " and x.shape[i] == y.shape[j]",
    "S(i), B -> S(i + out.ndim - x.ndim) if x.shape[i] == out.shape[i + out.ndim - x.ndim]"
    " and (i + y.ndim - x.ndim < 0 or y.shape[i + y.ndim - x.ndim] == 1)",
    "B, S(j) -> S(j + out.ndim - y.ndim) if y.shape[j] == out.shape[j + out.ndim - y.ndim]"
    " and (j + x.ndim - y.ndim < 0 or x.shape[j + x.ndim - y.ndim] == 1)",
)


def _text(fields, key, entry):
    loc = fields.get(key)
    if loc is None:
        raise entry.error(f"family entry: missing key '{key}'")
    if not isinstance(loc.value, str) or not loc.value.strip():
        raise loc.error(f"{key} must be a non-empty string")
    return loc.value.strip()


def _table_entry(fields, entry, namespace):
    from ..funcs.elementwise import FAMILIES
    for key, v in fields.items():
        if key not in FAMILY_KEYS:
            raise v.error(f"family entry: unknown key '{key}'; allowed: {sorted(FAMILY_KEYS)} "
                          "(kernel, shape rule, backward and sbp come from the family)")
    kind, name = _text(fields, "family", entry), _text(fields, "op", entry)
    if kind not in FAMILIES:
        raise fields["family"].error(f"family '{kind}' is unknown; expected one of "
                                     f"{sorted(FAMILIES)}")
    if namespace == "sparse" and kind != "unary":
        raise fields["family"].error("sparse family entries are value-wise: family unary only")
    if name not in FAMILIES[kind]:
        raise fields["op"].error(f"op '{name}' is not in the {kind} table of "
                                 f"kernels.funcs.elementwise; it has {sorted(FAMILIES[kind])}")
    return kind, FAMILIES[kind][name]


def _check_args(args, kind, table_entry, loc):
    tensors = tuple(a.name for a in args if a.is_tensor)
    params = tuple(a.name for a in args if not a.is_tensor)
    if tensors != _TENSORS[kind] or params != table_entry.params:
        want = ", ".join([f"Tensor {t}" for t in _TENSORS[kind]] + list(table_entry.params))
        raise loc.error(f"args of the {kind} op '{table_entry.name}' must be ({want}) in this "
                        f"order, as its table entry takes them")


def _sbp(kind, table_entry, loc):
    from .sbp import parse_sbp
    if kind == "unary":
        rules = ("S(i) -> S(i)",) + (("P -> P",) if table_entry.linear else ())
    else:
        rules = _BINARY_SPLITS + table_entry.partial
    lines = [Located(r, loc.file, loc.line) for r in rules]
    return parse_sbp(Located({"rules": Located(lines, loc.file, loc.line)}, loc.file, loc.line))


def expand_family(entry, namespace):
    """A ``family`` YAML entry -> [forward OpDef] or [forward OpDef, backward OpDef]."""
    fields = entry.value
    kind, table_entry = _table_entry(fields, entry, namespace)
    if "args" not in fields:
        raise entry.error("family entry: missing key 'args'")
    args = parse_args(fields["args"])
    _check_args(args, kind, table_entry, fields["args"])
    common = dict(namespace=namespace, file=entry.file, line=entry.line,
                  module=MODULE[namespace], layout_arg="x")
    forward = _forward_def(kind, table_entry, args, entry, common)
    return [forward] if forward.backward is None else [forward, _backward_def(
        kind, table_entry, args, common)]


def _forward_def(kind, table_entry, args, entry, common):
    name, tensors = table_entry.name, _TENSORS[kind]
    params = tuple(a.name for a in args if not a.is_tensor)
    return OpDef(
        name=name, is_backward=False, args=args, outputs=("out",), data_type_arg="x",
        infer_meta=InferMetaDef(SHAPE_RULE[common["namespace"]].format(kind=kind),
                                (repr(name),) + tensors + params),
        kernels=tuple(KernelSig(name + sfx, (lay,) * len(tensors), (lay,))
                      for sfx, lay in LAYOUTS[common["namespace"]]),
        backward=name + "_grad" if table_entry.grad is not None else None,
        doc=_text(entry.value, "doc", entry), sbp=_sbp(kind, table_entry, entry), **common)


def _backward_def(kind, table_entry, args, common):
    """``<name>_grad(x[, y], out, out_grad, params...) -> x_grad[, y_grad]``."""
    tensors = _TENSORS[kind]
    params = tuple(a for a in args if not a.is_tensor)
    bargs = tuple(a for a in args if a.is_tensor) + (Arg("out", "Tensor"),
                                                     Arg("out_grad", "Tensor")) + params
    grad_meta = (InferMetaDef("unchanged_infer_meta", ("x",)) if kind == "unary"
                 else InferMetaDef("binary_grad_infer_meta", ("x", "y")))
    return OpDef(
        name=table_entry.name + "_grad", is_backward=True, args=bargs,
        outputs=tuple(t + "_grad" for t in tensors), data_type_arg="out_grad",
        forward=ForwardDef(table_entry.name, args, ("out",)), infer_meta=grad_meta,
        kernels=tuple(KernelSig(table_entry.name + sfx + "_grad", (lay,) * (len(tensors) + 2),
                                (lay,) * len(tensors))
                      for sfx, lay in LAYOUTS[common["namespace"]]),
        optional_grads=kind == "binary", **common)
