"""Parse op YAML into frozen records and check them against the code base.

Every mistake raises :class:`CodegenError` naming the file and line.
"""
import math
import re
from dataclasses import dataclass

import yaml

from ..core.meta import LAYOUTS
from ..core.opspec import Arg, KernelSig
from ..core.resolve import ROOTS, is_name
from .loader import CodegenError, Located
from .sbp import parse_sbp

ATTR_TYPES = ("IntArray", "int", "float", "bool", "str", "Scalar", "DataType")
TENSOR_TYPES = ("Tensor", "Tensor[]")
OP_KEYS = {"op", "args", "output", "infer_meta", "kernel", "backward", "invoke", "doc",
           "module", "sbp", "override"}
BACKWARD_KEYS = {"backward_op", "forward", "args", "output", "infer_meta", "kernel",
                 "invoke", "no_need_buffer", "module", "override", "optional_grads"}
FILES = (("ops.yaml", "dense", False), ("backward.yaml", "dense", True),
         ("sparse_ops.yaml", "sparse", False), ("sparse_backward.yaml", "sparse", True))
_ARG_RE = re.compile(r"^(Tensor\[\]|Tensor|IntArray|int|float|bool|str|Scalar|DataType)\s+"
                     r"([A-Za-z_]\w*)\s*(?:=\s*(.+))?$")
_OUT_RE = re.compile(r"^(Tensor(?:\[\])?)\(\s*([A-Za-z_]\w*)\s*\)$")
_KERNEL_RE = re.compile(r"^([A-Za-z_]\w*)\s*(?:\{([^}]*)\})?$")
_FORWARD_RE = re.compile(r"^([A-Za-z_]\w*)\s*(\(.*\))\s*->\s*(.+)$")


def check_name(text, what, loc, dotted=False):
    """Return ``text`` or raise a file:line CodegenError if it is not a valid (dotted) name."""
    parts = text.split(".") if dotted else [text]
    if not all(is_name(p) for p in parts):
        raise loc.error(f"{what} '{text}' is not a valid {'dotted ' if dotted else ''}name: "
                        "ASCII letters, digits and '_', starting with a letter, and no Python "
                        "keyword")
    return text


@dataclass(frozen=True)
class InferMetaDef:
    func: str
    params: tuple


@dataclass(frozen=True)
class OutputDef:
    """One declared output: ``Tensor(name)``, or ``Tensor[](name)`` (``is_list``)."""

    name: str
    is_list: bool


@dataclass(frozen=True)
class KernelDef:
    """A ``kernel:`` field: its signatures and the arguments picking layout and dtype."""

    sigs: tuple
    layout_arg: str | None
    data_type_arg: str | None


@dataclass(frozen=True)
class ForwardDef:
    """A backward op's ``forward:`` field: the forward op's name, args and outputs."""

    name: str
    args: tuple
    outputs: tuple


@dataclass(frozen=True)
class OpDef:
    """One YAML entry, forward (``op``) or backward (``backward_op``)."""

    name: str
    namespace: str
    is_backward: bool
    args: tuple
    outputs: tuple
    file: str
    line: int
    infer_meta: InferMetaDef | None = None
    kernels: tuple = ()
    layout_arg: str | None = None
    data_type_arg: str | None = None
    module: str | None = None
    backward: str | None = None
    forward: ForwardDef | None = None
    invoke: str | None = None
    no_need_buffer: tuple = ()
    doc: str = ""
    sbp: object = None
    list_outputs: tuple = ()   # outputs declared Tensor[] (the gradients of Tensor[] inputs)
    override: bool = False     # may replace an op of the same name defined elsewhere
    optional_grads: bool = False  # a backward kernel taking grad_mask (yaml/README.md)

    @property
    def tensor_args(self):
        return tuple(a for a in self.args if a.is_tensor)

    @property
    def attr_args(self):
        return tuple(a for a in self.args if not a.is_tensor)

    @property
    def where(self):
        return f"{self.file}:{self.line}"


# ------------------------------------------------------------------ fields
def _str(loc, what):
    if not isinstance(loc.value, str) or not loc.value.strip():
        raise loc.error(f"{what} must be a non-empty string")
    return loc.value.strip()


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _is_dtype_name(value):
    from ..core.dtypes import ALL
    return isinstance(value, str) and value in [d.name for d in ALL]


def _default(text, kind, loc):
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        raise loc.error(f"default '{text}' is not a literal") from None
    if value == "None":
        value = None
    ok = {"IntArray": lambda v: isinstance(v, list) and all(type(i) is int for i in v)
          or type(v) is int,
          "int": lambda v: type(v) is int, "float": lambda v: isinstance(v, (int, float))
          and not isinstance(v, bool), "bool": lambda v: isinstance(v, bool),
          "str": lambda v: isinstance(v, str),
          "Scalar": lambda v: isinstance(v, (int, float, complex)),
          "DataType": _is_dtype_name}[kind]
    if value is not None and not ok(value):
        raise loc.error(f"default '{text}' does not fit type {kind}")
    if isinstance(value, float) and not math.isfinite(value):
        raise loc.error(f"default '{text}' is not a finite number")
    return tuple(value) if isinstance(value, list) else value


def parse_args(loc):
    """'(Tensor x, IntArray shape, int axis = 0)' -> tuple of Arg."""
    text = _str(loc, "args")
    if not (text.startswith("(") and text.endswith(")")):
        raise loc.error(f"args '{text}' must be wrapped in parentheses")
    args, seen_attr = [], False
    for part in _split_top(text[1:-1]):
        m = _ARG_RE.match(part)
        if not m:
            raise loc.error(f"argument '{part}' is not 'TYPE name [= default]' with TYPE "
                            f"one of {', '.join(TENSOR_TYPES + ATTR_TYPES)}")
        kind, name, default = m.groups()
        check_name(name, "argument", loc)
        if kind in TENSOR_TYPES and seen_attr:
            raise loc.error(f"Tensor argument '{name}' comes after an attribute; "
                            "Tensors come first")
        if kind in TENSOR_TYPES and default is not None:
            raise loc.error(f"Tensor argument '{name}' cannot have a default")
        seen_attr |= kind not in TENSOR_TYPES
        if any(a.name == name for a in args):
            raise loc.error(f"argument '{name}' is repeated")
        has = default is not None
        args.append(Arg(name, kind, has, _default(default, kind, loc) if has else None))
    return tuple(args)


def parse_outputs(loc, allow_list=False):
    """'Tensor(out), Tensor(mask)' -> ('out', 'mask').

    ``Tensor[](xs_grad)`` (a list of tensors) is allowed where ``allow_list``
    is set: in a backward op, as the gradient of a ``Tensor[]`` input.
    """
    return tuple(o.name for o in _typed_outputs(loc, allow_list))


def _typed_outputs(loc, allow_list):
    outs = []
    for part in _split_top(_str(loc, "output")):
        m = _OUT_RE.match(part)
        if not m or (m.group(1) == "Tensor[]" and not allow_list):
            what = "'Tensor(name)' or 'Tensor[](name)'" if allow_list else "'Tensor(name)'"
            raise loc.error(f"output '{part}' is not {what}")
        outs.append(OutputDef(check_name(m.group(2), "output", loc), m.group(1) == "Tensor[]"))
    return outs


def _kernel_sig(part, n_in, n_out, loc):
    m = _KERNEL_RE.match(part)
    if not m:
        raise loc.error(f"kernel '{part}' is not 'name' or 'name{{in, ... -> out, ...}}'")
    name, layouts = m.groups()
    check_name(name, "kernel", loc)
    if layouts is None:
        return KernelSig(name, ("dense",) * n_in, ("dense",) * n_out)
    if "->" not in layouts:
        raise loc.error(f"kernel '{part}' has no '->' between input and output layouts")
    ins, outs = (tuple(x.strip() for x in side.split(",") if x.strip())
                 for side in layouts.split("->"))
    for lay in ins + outs:
        if lay not in LAYOUTS:
            raise loc.error(f"kernel '{name}': unknown layout '{lay}'; expected one of "
                            f"{list(LAYOUTS)}")
    if len(ins) != n_in or len(outs) != n_out:
        raise loc.error(f"kernel '{name}' lists {len(ins)} input and {len(outs)} output "
                        f"layouts; the op has {n_in} Tensor inputs and {n_out} outputs")
    return KernelSig(name, ins, outs)


def _mapping(loc, what, allowed, required):
    if not isinstance(loc.value, dict):
        raise loc.error(f"{what} must be a mapping")
    for key, v in loc.value.items():
        if key not in allowed:
            raise v.error(f"{what}: unknown key '{key}'; allowed: {sorted(allowed)}")
    for key in required:
        if key not in loc.value:
            raise loc.error(f"{what}: missing key '{key}'")
    return loc.value


def _names(loc, what):
    value = loc.value
    items = value if isinstance(value, list) else _split_top(str(value or ""))
    return tuple(_str(i, what) if isinstance(i, Located) else i for i in items)


def parse_kernel(loc, args, outputs):
    fields = _mapping(loc, "kernel", {"func", "layout", "data_type"}, ["func"])
    n_in = sum(a.is_tensor for a in args)
    sigs = tuple(_kernel_sig(p, n_in, len(outputs), fields["func"])
                 for p in _split_top(_str(fields["func"], "kernel.func")))
    tensor_names = [a.name for a in args if a.is_tensor]
    picked = {}
    for key in ("layout", "data_type"):
        if key in fields:
            name = _str(fields[key], f"kernel.{key}")
            if name not in tensor_names:
                raise fields[key].error(f"kernel.{key} '{name}' is not a Tensor argument; "
                                        f"expected one of {tensor_names}")
            picked[key] = name
    first = tensor_names[0] if tensor_names else None
    return KernelDef(sigs, picked.get("layout", first), picked.get("data_type", first))


def parse_infer_meta(loc, args):
    fields = _mapping(loc, "infer_meta", {"func", "param"}, ["func"])
    names = [a.name for a in args]
    params = _names(fields["param"], "infer_meta.param") if "param" in fields else tuple(names)
    for p in params:
        if p not in names:
            raise fields["param"].error(f"infer_meta.param '{p}' is not an argument; "
                                        f"expected one of {names}")
    func = check_name(_str(fields["func"], "infer_meta.func"), "infer_meta.func",
                      fields["func"], dotted=True)
    return InferMetaDef(func, params)


def parse_forward(loc):
    """'reshape (Tensor x, IntArray shape) -> Tensor(out)' -> ForwardDef."""
    m = _FORWARD_RE.match(_str(loc, "forward"))
    if not m:
        raise loc.error("forward must read 'name (args) -> Tensor(out)'")
    name, args, outs = m.groups()
    check_name(name, "forward op", loc)
    return ForwardDef(name, parse_args(Located(args, loc.file, loc.line)),
                      parse_outputs(Located(outs, loc.file, loc.line)))


# ------------------------------------------------------------------ entries
def parse_entry(entry, namespace, is_backward):
    """One YAML mapping -> OpDef (structure only; cross-checks come later)."""
    fields = entry.value
    head, allowed = ("backward_op", BACKWARD_KEYS) if is_backward else ("op", OP_KEYS)
    _mapping(entry, f"'{head}' entry", allowed, [head, "args", "output"])
    name = check_name(_str(fields[head], head), f"{head} name", fields[head])
    args, outputs = parse_args(fields["args"]), parse_outputs(fields["output"], is_backward)
    kw = {"list_outputs": tuple(o.name for o in _typed_outputs(fields["output"], True)
                                if o.is_list)}
    if "override" in fields:
        kw["override"] = _flag(fields["override"], "override")
    has_kernel, has_invoke = "kernel" in fields, "invoke" in fields
    if has_kernel == has_invoke:
        raise entry.error(f"{head} '{name}': give exactly one of 'kernel' or 'invoke'")
    if has_kernel:
        for key in ("infer_meta", "module"):
            if key not in fields:
                raise entry.error(f"{head} '{name}': missing key '{key}' (needed with kernel)")
        kernel = parse_kernel(fields["kernel"], args, outputs)
        kw.update(kernels=kernel.sigs, layout_arg=kernel.layout_arg,
                  data_type_arg=kernel.data_type_arg)
        kw["infer_meta"] = parse_infer_meta(fields["infer_meta"], args)
        kw["module"] = check_name(_str(fields["module"], "module"), "module", fields["module"],
                                  dotted=True)
    else:
        kw["invoke"] = _str(fields["invoke"], "invoke")
    if is_backward:
        kw["forward"] = parse_forward(fields["forward"]) if "forward" in fields else None
        if kw["forward"] is None:
            raise entry.error(f"backward_op '{name}': missing key 'forward'")
        if "optional_grads" in fields:
            kw["optional_grads"] = _flag(fields["optional_grads"], "optional_grads")
        if "no_need_buffer" in fields:
            kw["no_need_buffer"] = _names(fields["no_need_buffer"], "no_need_buffer")
    else:
        if "backward" in fields:
            kw["backward"] = check_name(_str(fields["backward"], "backward"), "backward",
                                        fields["backward"])
        if "doc" not in fields:
            raise entry.error(f"op '{name}': missing key 'doc' (the API docstring)")
        kw["doc"] = _doc(fields["doc"])
        if "sbp" in fields:
            kw["sbp"] = parse_sbp(fields["sbp"])
    return OpDef(name=name, namespace=namespace, is_backward=is_backward, args=args,
                 outputs=outputs, file=entry.file, line=entry.line, **kw)


def _flag(loc, what):
    """A ``true`` / ``false`` field."""
    if loc.value not in ("true", "false"):
        raise loc.error(f"{what} must be true or false")
    return loc.value == "true"


def _doc(loc):
    """The docstring text: it goes into a raw triple-quoted string, so no quotes closing it."""
    text = _str(loc, "doc")
    if '"""' in text:
        raise loc.error('doc may not contain triple quotes (""")')
    bad = sorted({repr(c) for c in text if ord(c) < 32 and c not in "\n\t"})
    if bad:
        raise loc.error(f"doc holds control characters {', '.join(bad)}")
    return text


def roots_of(defs):
    """The packages whose functions ``defs`` may name: phisparse's and each op module's."""
    return tuple(dict.fromkeys(ROOTS + tuple(d.module.split(".")[0] for d in defs
                                             if d.module)))
