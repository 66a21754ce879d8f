"""The ``sbp:`` field of a forward op: SBP signature rules for global tensors.

Format (rule expressions are Python expressions over the names listed in
:mod:`kernels.core.dist.rules`)::

    sbp :
      rules :                     # one line per rule
        - S(i) -> S(i + len(shape) - x.ndim) if x.shape[i] == out.shape[i + len(shape) - x.ndim]
        - P -> P
      physical : shard_out_shape  # optional: a function, resolved as infer_meta's is

A rule lists one pattern per Tensor argument (``S(var)``, ``B`` or ``P``; a
variable repeated means the same axis), ``->``, one sbp per output, and an
optional ``if`` condition.  A ``Tensor[]`` argument takes one pattern, which
each of its elements must have; in expressions it is the list of the
elements' metadata, so its dims are read off an element (``xs[0].ndim``).
``B, ..., B -> B`` needs no rule.  ``physical`` names a Python function
(bare names live in :mod:`kernels.infermeta`) that returns the attributes a
shard's kernel gets (see :class:`kernels.core.dist.rules.Shards`); an op
with a ``Tensor[]`` argument has none.
"""
import ast
import re
from dataclasses import dataclass
from typing import NamedTuple

from ..core.resolve import resolve_function
from .loader import CodegenError

BUILTINS = ("len", "min", "max", "abs", "tuple", "sum")
ATTRS = ("shape", "ndim", "dtype", "size", "sparse_dim", "layout", "axis", "kind")
_NODES = (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp,
          ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Constant,
          ast.Tuple, ast.List, ast.Load, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


@dataclass(frozen=True)
class SplitPattern:
    """``S(var)`` among a rule's inputs: split on the axis the variable names."""

    var: str

    def literal(self):
        """The runtime's form of the pattern, ``('S', var)`` (see
        :class:`kernels.core.dist.rules.SbpRule`)."""
        return ("S", self.var)


class RuleText(NamedTuple):
    """A rule line cut at its top-level ``->`` and ``if``."""

    ins: str
    outs: str
    cond: str | None


@dataclass(frozen=True)
class RuleDef:
    ins: tuple          # "B", "P" or a SplitPattern
    outs: tuple         # expression texts
    cond: str | None
    text: str
    where: str


@dataclass(frozen=True)
class SbpDef:
    rules: tuple
    physical: str | None = None     # a function name, as infer_meta's func
    where: str = ""


def _err(loc, message):
    return CodegenError(f"{loc.file}:{loc.line}: sbp: {message}")


def _expr(text, where):
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise CodegenError(f"{where}: sbp: '{text}' is not an expression: {exc.msg}") from None


def _split_rule(text):
    """'IN -> OUT if COND' -> RuleText (cond None without 'if'); the 'if' is the first at
    depth 0."""
    if "->" not in text:
        return None
    ins, rest = text.split("->", 1)
    depth = 0
    for k, ch in enumerate(rest):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and re.match(r"\sif\s", rest[k:k + 4]):
            return RuleText(ins.strip(), rest[:k].strip(), rest[k + 4:].strip())
    return RuleText(ins.strip(), rest.strip(), None)


def _pattern(node, where, text):
    if isinstance(node, ast.Name) and node.id in ("B", "P"):
        return node.id
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "S"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)):
        return SplitPattern(node.args[0].id)
    raise CodegenError(f"{where}: sbp: rule '{text}': input pattern '{ast.unparse(node)}' "
                       "must be S(name), B or P")


def _elts(node):
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def parse_rule(loc):
    """One rule line -> RuleDef."""
    text = loc.value.strip() if isinstance(loc.value, str) else ""
    where = f"{loc.file}:{loc.line}"
    parts = _split_rule(text)
    if not parts or not (parts.ins and parts.outs):
        raise _err(loc, f"rule '{text}' must read 'IN, ... -> OUT, ... [if CONDITION]'")
    ins = tuple(_pattern(n, where, text) for n in _elts(_expr(parts.ins, where)))
    outs = _elts(_expr(parts.outs, where))
    for node in outs:
        ok = (isinstance(node, ast.Name) and node.id in ("B", "P")) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "S" and len(node.args) == 1)
        if not ok:
            raise _err(loc, f"rule '{text}': output '{ast.unparse(node)}' must be "
                            "S(expression), B or P")
    cond = parts.cond
    if cond is not None:
        _expr(cond, where)
    return RuleDef(ins, tuple(ast.unparse(n) for n in outs), cond, text, where)


def parse_sbp(loc):
    """The ``sbp:`` mapping -> SbpDef (syntax only; names are checked later)."""
    if not isinstance(loc.value, dict):
        raise _err(loc, "must be a mapping with 'rules' (and an optional 'physical')")
    fields = loc.value
    for key, v in fields.items():
        if key not in ("rules", "physical"):
            raise _err(v, f"unknown key '{key}'; allowed: rules, physical (conditions go "
                          "inline in the rules; physical attributes come from a function)")
    if "rules" not in fields or not isinstance(fields["rules"].value, list):
        raise _err(loc, "'rules' must be a list of rule lines")
    physical = fields.get("physical")
    if physical is not None and (not isinstance(physical.value, str)
                                 or not physical.value.strip()):
        raise _err(physical, "physical must name a function (e.g. shard_out_shape)")
    return SbpDef(tuple(parse_rule(r) for r in fields["rules"].value),
                  physical.value.strip() if physical is not None else None,
                  f"{loc.file}:{loc.line}")


# ------------------------------------------------------------------ checks
def _scope(op):
    base = {a.name for a in op.args} | set(op.outputs) | {"out"}
    return base | set(BUILTINS) | {"S", "B", "P"} | _helpers()


def _helpers():
    from ..core.dist.rules import HELPERS
    return set(HELPERS)


def check_expr(text, where, names, lists=()):
    """Raise unless ``text`` uses only allowed syntax, names and functions, and reads
    the ``Tensor[]`` arguments ``lists`` through an element."""
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise CodegenError(f"{where}: sbp: '{text}': {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call):
            path = _dotted(node.func, names)
            if path and resolve_function(path) is None:
                raise CodegenError(f"{where}: sbp: '{text}' calls '{path}', which does not "
                                   "exist")
            if path:
                node.func = ast.Constant(None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in names:
            raise CodegenError(f"{where}: sbp: '{text}' uses '{node.id}'; known names: "
                               f"{sorted(names)}")
        if isinstance(node, ast.Attribute) and node.attr not in ATTRS:
            raise CodegenError(f"{where}: sbp: '{text}' reads '.{node.attr}'; allowed: "
                               f"{list(ATTRS)}")
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in lists):
            name = node.value.id
            raise CodegenError(f"{where}: sbp: '{text}' reads '{name}.{node.attr}', but "
                               f"'{name}' is a Tensor[] (a list of tensors); read an "
                               f"element, e.g. '{name}[0].{node.attr}'")


def _dotted(func, names):
    """'pkg.mod.fn' for a call through a module path, else None."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not parts or not isinstance(func, ast.Name) or func.id in names:
        return None
    return ".".join([func.id] + parts[::-1])


def check_sbp(op):
    """Cross-check an op's sbp field against its arguments, outputs and functions."""
    sbp = op.sbp
    base = _scope(op)
    n_in, n_out = len(op.tensor_args), len(op.outputs)
    lists = {a.name for a in op.tensor_args if a.is_list}
    for rule in sbp.rules:
        if len(rule.ins) != n_in or len(rule.outs) != n_out:
            hint = (f" (a Tensor[] argument, {sorted(lists)}, takes one pattern that each "
                    "element must have)" if lists else "")
            raise CodegenError(f"{rule.where}: sbp: rule '{rule.text}' has {len(rule.ins)} "
                               f"inputs and {len(rule.outs)} outputs; the op has {n_in} "
                               f"Tensor arguments and {n_out} outputs{hint}")
        scope = base | {p.var for p in rule.ins if isinstance(p, SplitPattern)}
        for text in rule.outs + ((rule.cond,) if rule.cond else ()):
            check_expr(text, rule.where, scope, lists)
    if sbp.physical and lists:
        raise CodegenError(f"{sbp.where}: sbp: physical is not supported on an op with a "
                           f"Tensor[] argument ({sorted(lists)}); its shards run with the "
                           "logical attributes")
    if sbp.physical and resolve_function(sbp.physical) is None:
        raise CodegenError(f"{sbp.where}: sbp: physical function '{sbp.physical}' does not "
                           "exist in kernels.infermeta (name it there, or give a dotted path)")


# ------------------------------------------------------------------ emit
class _Rewrite(ast.NodeTransformer):
    def __init__(self, env_names):
        self.env = env_names

    def visit_Call(self, node):
        path = _dotted(node.func, self.env | {"S"})
        self.generic_visit(node)
        if path:
            node.func = ast.Name(f"_resolve({path!r})")
        return node

    def visit_Name(self, node):
        if node.id in ("S", "B", "P") or node.id in _helpers():
            return ast.Name(f"_r.{node.id}")
        if node.id in BUILTINS:
            return node
        return ast.Attribute(ast.Name("e"), node.id)


def _body(text):
    return ast.unparse(_Rewrite(set()).visit(ast.parse(text, mode="eval")).body)


def _lambda(text):
    return f"lambda e: {_body(text)}"


def _lambdas(texts):
    return "lambda e: (" + ", ".join(_body(t) for t in texts) + ",)"


def sbp_source(op, ident, shared=None):
    """Python source defining ``_sbp_<ident>``, the op's rules.SbpTable.

    Each distinct rule is defined once, as ``_rule_<n>``, and ``shared`` (rule source
    -> name, kept across the ops of one module; default: none yet) says which exist:
    a rule that several ops spell alike (the binary family's splits) is one object,
    not a copy per op.
    """
    sbp, shared = op.sbp, {} if shared is None else shared
    defs, names = [], []
    for r in sbp.rules:
        cond = _lambda(r.cond) if r.cond else "None"
        ins = tuple(p.literal() if isinstance(p, SplitPattern) else p for p in r.ins)
        src = (f"_r.SbpRule({ins!r}, {_lambdas(r.outs)},\n"
               f"                      {cond},\n"
               f"                      {r.text!r})")
        if src not in shared:
            shared[src] = f"_rule_{len(shared)}"
            defs.append(f"{shared[src]} = {src}\n")
        names.append(shared[src])
    physical = "None"
    if sbp.physical:
        physical = (f"_im.{sbp.physical}" if "." not in sbp.physical
                    else f"_resolve({sbp.physical!r})")
    return ("".join(defs) + f"_sbp_{ident} = _r.SbpTable(rules=({', '.join(names)},),\n"
            f"                         physical={physical})\n")


__all__ = ["SbpDef", "RuleDef", "SplitPattern", "parse_sbp", "check_sbp", "sbp_source"]
