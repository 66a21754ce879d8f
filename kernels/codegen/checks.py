"""Cross-checks between YAML entries and the code they name."""
import ast
import importlib
import inspect

from ..core import registry
from ..core.resolve import is_name, resolve_function
from .loader import CodegenError, parse_invoke
from .model import roots_of
from .sbp import check_sbp


def _err(op, message):
    return CodegenError(f"{op.where}: {op.name}: {message}")


def check_all(defs):
    """Raise CodegenError for the first inconsistency among ``defs``."""
    table, roots = {}, roots_of(defs)
    for op in defs:
        key = (op.namespace, op.name)
        if key in table:
            raise _err(op, f"defined twice (first at {table[key].where})")
        table[key] = op
    for op in defs:
        _check_functions(op, roots)
        if op.backward:
            _check_backward_link(op, table)
        if op.is_backward:
            _check_backward_entry(op, table)
        if op.optional_grads:
            _check_optional_grads(op)
        if op.invoke:
            _check_invoke(op, table, roots)
        if op.sbp:
            check_sbp(op)
    for op in defs:                     # last: every other error of an entry comes first
        for sig in op.kernels:
            for fn in registry.functions(sig.func):
                _check_kernel_takes(op, sig.func, fn)


def _check_functions(op, roots):
    if op.infer_meta:
        _check_infer_meta(op, resolve_function(op.infer_meta.func, roots=roots), roots)
    if not op.module:
        return
    try:
        importlib.import_module(op.module)
    except ImportError as exc:
        raise _err(op, f"module '{op.module}' cannot be imported: {exc}") from None
    for sig in op.kernels:
        if not registry.has_kernel(sig.func):
            raise _err(op, f"kernel '{sig.func}' is not registered by module '{op.module}'")


def _check_kernel_takes(op, name, fn):
    """Kernel ``fn`` takes what dispatch passes it: the op's Tensors and attributes in YAML
    order, positionally (and ``grad_mask=`` for an ``optional_grads`` backward)."""
    try:            # its own signature, or a wrapper's (a partial with update_wrapper)
        sigs = [inspect.signature(fn), inspect.signature(fn, follow_wrapped=False)]
    except (TypeError, ValueError):     # no signature to read (a builtin): the call says
        return
    names = [a.name for a in op.args]
    extra = {"grad_mask": None} if getattr(op, "optional_grads", False) else {}
    if not any(_binds(sig, names, extra) for sig in sigs):
        raise _err(op, f"kernel '{name}{sigs[0]}' (registered by {fn.__module__}) cannot take "
                       f"the op's {len(names)} arguments {names}"
                       f"{' and grad_mask=' if extra else ''}, passed positionally")


def _check_infer_meta(op, fn, roots):
    """The shape rule exists and takes the arguments ``param:`` passes it, positionally."""
    if fn is None:
        raise _err(op, f"infer_meta function '{op.infer_meta.func}' does not exist in "
                       f"kernels.infermeta (or is not a public function of {list(roots)})")
    params = op.infer_meta.params
    try:            # its own signature, or a decorator's (functools.wraps hides that one)
        sigs = [inspect.signature(fn), inspect.signature(fn, follow_wrapped=False)]
    except (TypeError, ValueError):     # no signature to read (a builtin): the call says
        return
    if not any(_binds(sig, params) for sig in sigs):
        raise _err(op, f"infer_meta function '{op.infer_meta.func}{sigs[0]}' cannot take "
                       f"the {len(params)} arguments that param passes it {list(params)}")


def _binds(sig, params, keywords=None):
    try:
        sig.bind(*params, **(keywords or {}))
    except TypeError:
        return False
    return True


def _check_backward_link(op, table):
    target = table.get((op.namespace, op.backward))
    if target is None or not target.is_backward:
        raise _err(op, f"backward '{op.backward}' names no backward_op in the "
                       f"{op.namespace} backward YAML")
    if target.forward.name != op.name:
        raise _err(target, f"its forward is '{target.forward.name}' but op '{op.name}' "
                           "names it as backward")


def _check_backward_entry(op, table):
    fname, fargs = op.forward.name, op.forward.args
    fwd = table.get((op.namespace, fname))
    if fwd is None or fwd.is_backward:
        raise _err(op, f"forward op '{fname}' does not exist")
    if [a.name for a in fwd.args] != [a.name for a in fargs]:
        raise _err(op, f"forward args {[a.name for a in fargs]} differ from op '{fname}' "
                       f"args {[a.name for a in fwd.args]}")
    known = {a.name for a in fwd.args} | set(fwd.outputs) | {o + "_grad" for o in fwd.outputs}
    for a in op.args:
        if a.name not in known:
            raise _err(op, f"argument '{a.name}' is neither a forward input, output, "
                           f"output gradient nor attribute; expected one of {sorted(known)}")
    inputs = {a.name: a for a in fwd.tensor_args}
    for out in op.outputs:
        if not out.endswith("_grad") or out[:-5] not in inputs:
            raise _err(op, f"output '{out}' must be '<input>_grad' for a Tensor input "
                           f"of '{fname}' ({sorted(inputs)})")
        if inputs[out[:-5]].is_list != (out in op.list_outputs):
            kind = "Tensor[]" if inputs[out[:-5]].is_list else "Tensor"
            raise _err(op, f"output '{out}' must be declared {kind}({out}), as its input "
                           f"'{out[:-5]}' is a {kind}")
    for name in op.no_need_buffer:
        if name not in set(inputs) | set(fwd.outputs):
            raise _err(op, f"no_need_buffer '{name}' is not a forward Tensor")


def _check_optional_grads(op):
    """``optional_grads``: two or more single gradients, each kernel taking ``grad_mask``."""
    if op.invoke or len(op.outputs) < 2 or op.list_outputs:
        raise _err(op, "optional_grads needs a kernel with two or more Tensor gradient "
                       "outputs (a mask over one gradient, or over an invoke, saves nothing)")
    for sig in op.kernels:
        for fn in registry.functions(sig.func):
            if "grad_mask" not in inspect.signature(fn).parameters:
                raise _err(op, f"optional_grads: kernel '{sig.func}' ({_qualname(fn)}) takes "
                               "no 'grad_mask' argument")


def _qualname(fn):
    fn = getattr(fn, "func", fn)            # a functools.partial
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"


def _check_invoke(op, table, roots):
    names = {name for ns, name in table if ns == op.namespace}
    _walk_invoke(op, parse_invoke(op), (table, names, roots), {a.name for a in op.args})


def _walk_invoke(op, node, known, allowed):
    table, names, roots = known
    if isinstance(node, ast.Call):
        kind, ns, name = callee(node.func, op.namespace, names)
        if kind == "op" and (ns, name) not in table:
            raise _err(op, f"invoke calls op '{ns}.{name}', which does not exist")
        if kind == "helper" and (not all(is_name(p) for p in name.split("."))
                                 or resolve_function(name, roots=roots) is None):
            raise _err(op, f"invoke calls '{name}', which is neither an op nor a public "
                           f"function of kernels.infermeta or the packages {list(roots)}")
        if any(k.arg is None for k in node.keywords):
            raise _err(op, f"invoke may not unpack '**' arguments: '{ast.unparse(node)}'")
        for child in list(node.args) + [k.value for k in node.keywords]:
            _walk_invoke(op, child, known, allowed)
    elif isinstance(node, ast.Name):
        if node.id not in allowed:
            raise _err(op, f"invoke uses '{node.id}', which is not an argument "
                           f"({sorted(allowed)})")
    elif isinstance(node, ast.Attribute):
        if not (isinstance(node.value, ast.Name) and node.value.id in allowed
                and node.attr in ("shape", "ndim", "dtype")):
            raise _err(op, f"invoke may read only .shape, .ndim or .dtype of an argument, "
                           f"not '{ast.unparse(node)}'")
    elif isinstance(node, (ast.List, ast.Tuple)):
        for child in node.elts:
            _walk_invoke(op, child, known, allowed)
    elif not isinstance(node, ast.Constant) and not (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)):
        raise _err(op, f"invoke may only call ops and helpers on arguments and literals; "
                       f"'{ast.unparse(node)}' is not allowed")


def callee(func, namespace, op_names):
    """('op', namespace, name) or ('helper', None, dotted name) for an invoke callee."""
    if isinstance(func, ast.Name):
        if func.id in op_names:
            return "op", namespace, func.id
        return "helper", None, func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in ("dense", "sparse"):
        return "op", func.value.id, func.attr
    return "helper", None, ast.unparse(func)
