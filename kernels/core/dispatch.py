"""Dispatch: infer-meta, kernel selection, wrapping, autograd recording.

A call takes one short path (JAX's canonicalise-then-bind, PyTorch's
structured kernels): the attributes are converted, the infer-meta checks
everything and may return canonical attributes (:class:`Canonical`) that
replace the caller's, then a cached binding maps the inputs' (layouts,
places, dtype) to the kernel and the output tensor classes.  A call that
repeats its inputs' metadata and attributes reuses all of that from a per-op
memo (:func:`_prepared`), keyed by the attributes as given.  The kernel
trusts what it gets.  A grad node is recorded only when grad mode is on and
an input needs a gradient.  Global tensors go to the runtime that
:mod:`kernels.core.dist` installs (:func:`kernels.core.tensor.install_global`).
"""
import importlib
import inspect
import numbers
import operator

import numpy as np

from . import autograd, kernel_check, registry
from .dtypes import ALL, canonical_dtype, is_differentiable, is_int
from .meta import Canonical, MetaTensor, reported
from .registry import GENERATION
from .size import check_output_dims, check_output_size
from .tensor import LOCAL_CLASSES, TensorBase, global_runtime, layout_class, set_attribute
from .xp import to_place

_OPS = {}
_SCALARS = (numbers.Number, np.bool_)
_LOADED = set()
_INPUTS = (TensorBase, MetaTensor)
#: Calls remembered per op by :func:`_prepared` (the oldest are forgotten at once).
MEMO_SIZE = 256


def _table_of(spec):
    """The generated module that made ``spec`` (where its infer-meta or invoke lives)."""
    return getattr(spec.infer_meta or spec.invoke, "__module__", None)


def register_ops(specs, override=()):
    """Add generated OpSpecs to the global op table.

    An op whose name another op table already registered raises ValueError
    unless its name is in ``override`` (YAML ``override : true``); a table
    registering its own ops again (a reload) is allowed.
    """
    for spec in specs:
        old = _OPS.get(spec.qualname)
        if old is not None and spec.name not in override and _table_of(old) != _table_of(spec):
            raise ValueError(f"register_ops: op '{spec.qualname}' is already defined by "
                             f"{_table_of(old)}; rename the op or set 'override : true' "
                             "in its YAML entry")
    for spec in specs:
        _OPS[spec.qualname] = spec


def get_op(namespace, name):
    """The OpSpec of ``namespace.name`` (e.g. 'dense', 'reshape')."""
    try:
        return _OPS[f"{namespace}.{name}"]
    except KeyError:
        raise KeyError(f"no op '{namespace}.{name}' is registered") from None


autograd.set_op_lookup(get_op)


def call(namespace, name, *args, **kwargs):
    """Run op ``namespace.name``; arguments by YAML position or by name."""
    spec = get_op(namespace, name)
    values = _arguments(spec, args, kwargs)
    n = len(spec.tensor_args)
    return run(spec, values[:n], values[n:], metas_ok=True)


def call_masked(grad_mask, namespace, name, *args):
    """:func:`call` of a backward op declared ``optional_grads`` (yaml/README.md).

    ``grad_mask`` holds one bool per gradient output: the kernel computes
    only the gradients marked True and returns None for the others (Paddle's
    phi backward kernels skip a null gradient output; PyTorch passes
    ``output_mask``).  All True is a plain call; all False runs nothing.
    """
    spec = get_op(namespace, name)
    if all(grad_mask):
        return call(namespace, name, *args)
    if not any(grad_mask):
        return (None,) * len(spec.outputs)
    values = _arguments(spec, args, {})
    n = len(spec.tensor_args)
    return run(spec, values[:n], values[n:], metas_ok=True, grad_mask=tuple(grad_mask))


def _arguments(spec, args, kwargs):
    """``spec``'s argument values in YAML order: positional, then by name, then defaults."""
    values = list(args)
    if len(values) > len(spec.args):
        raise TypeError(f"{spec.name}: takes at most {len(spec.args)} arguments "
                        f"({', '.join(a.name for a in spec.args)}), got {len(values)}")
    for a in spec.args[len(values):]:
        if a.name in kwargs:
            values.append(kwargs.pop(a.name))
        elif a.has_default:
            values.append(a.default)
        else:
            raise TypeError(f"{spec.name}: missing argument '{a.name}'")
    if kwargs:
        raise TypeError(f"{spec.name}: unexpected arguments {sorted(kwargs)}")
    return values


# ---------------------------------------------------------------- arguments
def _as_input(value, spec, arg):
    if arg.is_list:
        return _as_list(value, spec, arg)
    return _as_one(value, spec, arg)


def _as_list(value, spec, arg):
    """A ``Tensor[]`` argument: a non-empty list or tuple of tensors or arrays."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{spec.name}: argument '{arg.name}' must be a list of Tensors, "
                        f"got {type(value).__name__}")
    if not value:
        raise ValueError(f"{spec.name}: argument '{arg.name}' must hold at least one "
                         "Tensor, got an empty list")
    for v in value:
        if isinstance(v, _SCALARS):
            raise TypeError(f"{spec.name}: argument '{arg.name}' must hold Tensors or arrays, "
                            f"got the scalar {v!r}")
    return [_as_one(v, spec, arg) for v in value]


def _weak_scalars(spec, ins):
    """Scalars given for Tensor arguments as 0-d arrays, typed as numpy types them (NEP 50).

    A Python scalar is weak: its array takes the dtype numpy's promotion gives
    it next to the other tensor inputs (``float32 * 2.0`` stays float32); a
    numpy scalar keeps its own dtype.  The array lives where the first tensor input does.
    """
    if len(ins) == 2:
        pair = _scalar_pair(spec, ins)
        if pair is not ins:
            return pair
    for i in spec.index_args:
        if type(ins[i]) in _PY_SCALARS:
            _index_scalar(spec, i, ins[i])
    if spec.condition_args:
        ins = _condition_scalars(spec, ins)
    scalar = [_is_scalar(t) for t in ins]
    if not any(scalar):
        return ins
    metas = [_meta(t) for t in _flat([t for t, s in zip(ins, scalar) if not s])]
    dtypes = tuple(m.dtype for m in metas)
    place = metas[0].place if metas else "cpu"
    return [_scalar_tensor(t, dtypes, place, spec) if s else t for t, s in zip(ins, scalar)]


def _scalar_pair(spec, ins):
    """Two inputs, one a Python scalar beside a local tensor (the common ``x * 2.0`` and
    ``1 - x``): the scalar's 0-d Tensor in its place; other pairs as they are.  The
    0-d Tensor is remembered by the id of the tensor's metadata (``MetaTensor._id``)."""
    a, b = ins
    if type(b) in _PY_SCALARS and type(a) in LOCAL_CLASSES:
        if spec.index_args:
            _index_scalar(spec, 1, b)
        m = a._meta or a.meta
        key = (type(b), b, repr(b) if b == 0 else None, m._id)     # inline: a per-call path
        made = _SCALAR_TENSORS.get(key)
        return [a, made if made is not None else
                _scalar_tensor(b, (m.dtype,), m.place, spec, key)]
    if type(a) in _PY_SCALARS and type(b) in LOCAL_CLASSES:
        m = b._meta or b.meta
        key = (type(a), a, repr(a) if a == 0 else None, m._id)
        made = _SCALAR_TENSORS.get(key)
        return [made if made is not None else
                _scalar_tensor(a, (m.dtype,), m.place, spec, key), b]
    return ins


def _index_scalar(spec, i, value):
    """Raise TypeError if tensor input ``i`` is an index argument (given ``value``, a Python
    scalar): a weak scalar would take the other inputs' dtype, and ``True`` would be 1."""
    if i in spec.index_args:
        arg = spec.tensor_args[i].name
        raise TypeError(f"{spec.name}: argument '{arg}' must be a Tensor or array of int32 or "
                        f"int64 indices, got the Python {type(value).__name__} {value!r}")


def _condition_scalars(spec, ins):
    """``ins`` with a Python bool given for a condition argument as a bool 0-d array (numpy's
    ``where(True, x, y)``); any other Python scalar there raises TypeError."""
    ins = list(ins)
    for i in spec.condition_args:
        if type(ins[i]) is bool:
            others = [_meta(t) for t in _flat(ins) if not _is_scalar(t)]
            place = others[0].place if others else "cpu"
            ins[i] = layout_class("dense")(to_place(np.asarray(ins[i]), place))
        elif type(ins[i]) in _PY_SCALARS:
            arg = spec.tensor_args[i].name
            raise TypeError(f"{spec.name}: argument '{arg}' must be a bool Tensor, array or "
                            f"Python bool, got the Python {type(ins[i]).__name__} {ins[i]!r}")
    return ins


def _zero(t):
    """What tells a scalar's zeros apart (``0.0`` and ``-0.0`` are equal): their repr."""
    return repr(t) if t == 0 else None


def _is_scalar(t):
    return type(t) in _PY_SCALARS or isinstance(t, _SCALARS)


_PY_SCALARS = frozenset({float, int, bool, complex})
#: (scalar's type, value, its repr when it equals 0 (the sign of a zero), the other
#: inputs' dtypes and place, or the one other input's metadata) -> its 0-d Tensor:
#: tensors are immutable, so a loop's ``x * 2.0`` builds the scalar's tensor once.
_SCALAR_TENSORS = {}


def _scalar_tensor(t, dtypes, place, spec, key=None):
    """The 0-d Tensor standing for scalar ``t`` next to inputs of ``dtypes``, remembered
    under ``key`` (by default the scalar, its type, the dtypes and the place).

    A Python int beyond the integer dtype it would take raises TypeError, except
    in a comparison: every value of the inputs then lies on one side of it, so
    it compares as ``±inf`` (numpy 2 compares such ints exactly); and in a
    true division, which numpy computes in float64 for integer inputs anyway,
    so the int takes part as a float64.  These stand-ins are not remembered,
    since other arithmetic with the same int must raise.
    """
    if key is None:
        key = (type(t), t, _zero(t), dtypes, place)
    made = _SCALAR_TENSORS.get(key)
    if made is not None:
        return made
    try:
        array = _scalar_array(t, dtypes, spec)
    except OverflowError as exc:
        stand_in = _int_stand_in(t, dtypes, spec.name)
        if stand_in is not None:
            return layout_class("dense")(to_place(stand_in, place))
        raise TypeError(f"{spec.name}: scalar {t!r} does not fit the dtype numpy's promotion "
                        f"gives it beside the inputs' dtypes {[d.name for d in dtypes]}"
                        f"{_range(dtypes)}: {exc}") from None
    made = layout_class("dense")(to_place(array, place))
    if len(_SCALAR_TENSORS) >= MEMO_SIZE:
        _SCALAR_TENSORS.clear()
    _SCALAR_TENSORS[key] = made
    return made


def _int_stand_in(t, dtypes, op):
    """What a Python int ``t`` beyond the integer or bool ``dtypes`` stands for in ``op``,
    as numpy 2 computes it: ``±inf`` in a comparison, a float64 in a true division; else
    None (the int must raise)."""
    kinds = {np.dtype(d).kind for d in dtypes}
    if type(t) is not int or not kinds <= set("biu"):
        return None
    if op in _COMPARISONS and "b" not in kinds:          # numpy: bool < 2**70 overflows
        return np.asarray(np.inf if t > 0 else -np.inf)
    if op == "divide" and abs(t) < 2.0 ** 1023:
        return np.asarray(float(t))
    return None


#: Ops that compare a Python int beyond the inputs' integer dtype exactly, as numpy 2 does.
_COMPARISONS = frozenset({"equal", "not_equal", "less_than", "less_equal", "greater_than",
                          "greater_equal"})


def _scalar_array(t, dtypes, spec):
    """Scalar ``t`` as the 0-d array numpy's promotion (NEP 50) gives it beside ``dtypes``:
    a Python scalar is weak, a numpy scalar keeps its dtype (OverflowError if it does not fit)."""
    dt = np.result_type(*dtypes, t) if isinstance(t, (int, float, complex)) \
        else np.asarray(t).dtype
    canonical_dtype(dt, spec.name, f"scalar {t!r} of dtype")
    return np.asarray(t, dtype=dt)


def _range(dtypes):
    """' (int8 holds [-128, 127])' for integer inputs, else ''."""
    dt = np.result_type(*dtypes) if dtypes else None
    if dt is None or dt.kind not in "iu":
        return ""
    info = np.iinfo(dt)
    return f" ({dt.name} holds [{info.min}, {info.max}])"


def _flat(items):
    """Tensor inputs with ``Tensor[]`` lists spliced in."""
    return [t for item in items for t in (item if isinstance(item, list) else (item,))]


def _as_one(value, spec, arg):
    if type(value) in _PY_SCALARS or isinstance(value, (TensorBase, MetaTensor)):
        return value
    if isinstance(value, _SCALARS) and not isinstance(value, np.timedelta64):
        return value  # a scalar: made a 0-d array by _weak_scalars (its dtype checked there)
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("cupy"):
        if _is_index_arg(spec, arg) and value.dtype.newbyteorder("=") not in ALL:
            # (an index of a dtype phisparse has is checked by the op, after its axes)
            raise TypeError(f"{spec.name}: {arg.name} dtype {value.dtype.name} is not "
                            "supported; expected int32 or int64")
        canonical_dtype(value.dtype, spec.name, f"{arg.name} dtype")
        return layout_class("dense")._wrap_array(value)
    what = "a Tensor or a numpy array of int32 or int64 indices" if _is_index_arg(spec, arg) \
        else "a Tensor, a numpy array or a scalar"
    where = "each element of " if arg.is_list else ""
    hint = "; dense.to_tensor(...) makes a Tensor of a list" \
        if isinstance(value, (list, tuple)) else ""
    raise TypeError(f"{spec.name}: {where}argument '{arg.name}' must be {what}, got "
                    f"{type(value).__name__}{hint}")


def _is_index_arg(spec, arg):
    return any(spec.tensor_args[i] is arg for i in spec.index_args)


def _int_item(v):
    """A one-element integer dense Tensor in a list of ints stands for its value (Paddle)."""
    if isinstance(v, TensorBase) and v.layout == "dense" and v.dtype.kind in "iu" \
            and v._data().size == 1:
        return v.numpy().reshape(()).item()
    return v


def _int_list(value, spec, arg):
    if type(value) in (list, tuple) and all(type(v) is int for v in value):
        return tuple(value)
    if isinstance(value, TensorBase):
        if value.layout != "dense":
            raise TypeError(f"{spec.name}: argument '{arg.name}' must be a list of ints or a "
                            f"1-D integer array, got a {value.layout} tensor")
        value = value.numpy()
    if isinstance(value, np.ndarray):
        if value.ndim > 1 or not (value.dtype.kind in "iu" or value.size == 0):
            raise TypeError(f"{spec.name}: argument '{arg.name}' must be a 1-D integer "
                            f"array, got dtype {value.dtype} and ndim {value.ndim}")
        value = value.tolist()
    if is_int(value):
        return (int(value),)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{spec.name}: argument '{arg.name}' must be a list of ints, "
                        f"got {type(value).__name__}")
    value = [_int_item(v) for v in value]
    for v in value:
        if not is_int(v):
            raise TypeError(f"{spec.name}: argument '{arg.name}' must hold ints, got "
                            f"{v!r} of type {type(v).__name__} in {list(value)}")
    return tuple(int(v) for v in value)


def _scalar(value, spec, arg):
    """A ``Scalar``: a bool, int, float or complex, Python or numpy, kept as given; a
    one-element dense Tensor stands for its value as a Python number (Paddle's
    ``clip(x, min=t)``, ``full(shape, t)``), taking no gradient (a global one's is
    read by a collective, so every rank of its placement must make the call).  Other numbers
    (Fraction, Decimal, numpy's longdouble, timedelta64) have no dtype here."""
    if type(value) in _PY_SCALARS or _numpy_scalar(value) \
            or isinstance(value, _PY_NUMBERS) and not isinstance(value, np.generic):
        return value
    if isinstance(value, TensorBase) and value.layout == "dense" \
            and all(d == 1 for d in value.shape):      # a global one's: a collective
        return value.numpy().reshape(()).item()
    raise TypeError(f"{spec.name}: argument '{arg.name}' must be a scalar (bool, int, "
                    f"float or complex: Python, numpy of a dtype tensors take, or a "
                    f"one-element Tensor), got {value!r} of type {type(value).__name__}")


_PY_NUMBERS = tuple(_PY_SCALARS)     # for isinstance (subclasses of int, float ...)


def _numpy_scalar(value):
    """A numpy scalar of a supported dtype (:data:`kernels.core.dtypes.ALL`: not uint16/32/64,
    longdouble or clongdouble, not timedelta64, which numpy counts as an integer)."""
    return isinstance(value, np.generic) and value.dtype in ALL


def _float_attr(value, spec, arg):
    """A ``float`` attribute as a Python float: a real Python number or a numpy scalar of a
    dtype tensors take (not uint16/32/64 or longdouble, which ``to_tensor`` refuses too)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) \
            or isinstance(value, np.generic) and value.dtype not in ALL:
        raise TypeError(f"{spec.name}: argument '{arg.name}' must be a float (a real Python "
                        f"number other than a bool, or a real numpy scalar of a dtype tensors "
                        f"take), got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{spec.name}: argument '{arg.name}' is {value!r}, beyond the "
                         "largest float64") from None


def _convert_attr(value, spec, arg):
    if value is None and arg.has_default and arg.default is None:
        return None
    kind = arg.type
    if kind == "Scalar":
        return _scalar(value, spec, arg)
    if kind == "DataType":
        return canonical_dtype(value, op=spec.name, arg=arg.name)
    if kind == "IntArray":
        return _int_list(value, spec, arg)
    if kind == "int":
        if isinstance(value, (np.ndarray, TensorBase)):    # a 0-d integer array, as numpy's
            try:                                            # axis, or a one-element int Tensor
                value = operator.index(value)
            except (TypeError, ValueError):
                pass
        if not is_int(value):
            raise TypeError(f"{spec.name}: argument '{arg.name}' must be an int, got "
                            f"{value!r} of type {type(value).__name__}")
        return int(value)
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{spec.name}: argument '{arg.name}' must be a bool, got {value!r}")
        return bool(value)
    if kind == "float":
        return _float_attr(value, spec, arg)
    if kind == "str" and not isinstance(value, str):
        raise TypeError(f"{spec.name}: argument '{arg.name}' must be a str, got {value!r}")
    return value


def _attrs(spec, values):
    """Attribute values converted to their YAML types (the common cases inline)."""
    plain = spec.attr_plain
    if len(values) < len(plain):
        values = list(values) + [a.default for a in spec.attr_args[len(values):]]
    out = []
    for v, p, a in zip(values, plain, spec.attr_args):
        if type(v) is p:
            if p is not tuple or _all_ints(v):
                out.append(v)
                continue
        elif p is tuple and (type(v) is int or type(v) is list and _all_ints(v)):
            out.append((v,) if type(v) is int else tuple(v))
            continue
        out.append(_convert_attr(v, spec, a))
    return out


def _all_ints(values):
    for v in values:
        if type(v) is not int:
            return False
    return True


# ---------------------------------------------------------------- selection
def _meta(t):
    if isinstance(t, list):
        return [_meta(i) for i in t]
    return t if isinstance(t, MetaTensor) else t.meta


def _layout(spec, arg, m):
    """The layout of one input; the common layout of a ``Tensor[]`` list."""
    if not isinstance(m, list):
        return m.layout
    layouts = sorted({i.layout for i in m})
    if len(layouts) > 1:
        raise TypeError(f"{spec.name}: argument '{arg.name}' mixes layouts {layouts}; "
                        "every tensor of the list must have one layout")
    return layouts[0]


def select_kernel_sig(spec, metas):
    """The YAML kernel entry whose input layouts match the inputs."""
    layouts = tuple(_layout(spec, a, m) for a, m in zip(spec.tensor_args, metas))
    for sig in spec.kernels:
        if sig.in_layouts == layouts:
            return sig
    raise TypeError(f"{spec.name}: no kernel for input layouts {list(layouts)}; "
                    f"{_layout_hint(spec, layouts)}")


#: What turns a tensor into each layout.
_CONVERT = {"dense": "to_dense()", "sparse_coo": "to_sparse_coo()",
            "sparse_csr": "to_sparse_csr()"}


def _layout_hint(spec, layouts):
    """Which argument's layout no kernel takes, the layouts it takes, and how to convert."""
    for i, (arg, layout) in enumerate(zip(spec.tensor_args, layouts)):
        takes = sorted({s.in_layouts[i] for s in spec.kernels})
        if layout not in takes:
            how = " or ".join(_CONVERT[t] for t in takes if t in _CONVERT)
            return (f"argument '{arg.name}' is a {layout} tensor and must be "
                    f"{' or '.join(takes)}" + (f"; convert it with {how}" if how else ""))
    have = ", ".join("{" + ", ".join(s.in_layouts) + "}" for s in spec.kernels)
    return f"this op takes the layout combinations {have}"


def _place(spec, metas):
    places = {m.place for m in _flat(metas)}
    if len(places) > 1:
        raise ValueError(f"{spec.name}: inputs are on different places {sorted(places)}; "
                         "move them to one place first")
    return places.pop() if places else "cpu"


def infer(spec, metas, attrs):
    """Run the op's infer-meta on metadata only; return a tuple of MetaTensors."""
    out = spec.infer_meta(*metas, *attrs)
    if type(out) is Canonical:
        out = out.out
    outs = out if isinstance(out, tuple) else (out,)
    sig = select_kernel_sig(spec, metas)
    place = _place(spec, metas)
    outs = tuple(_placed(m, lay, place) for m, lay in zip(outs, sig.out_layouts))
    _check_outputs(spec, outs, check_output_dims)
    return outs


def _check_outputs(spec, out_metas, check):
    """Run ``check(op, meta)`` on every output (lists of outputs included)."""
    for m in out_metas:
        for one in m if isinstance(m, list) else (m,):
            check(spec.name, one)


def _out_metas(result, out_layouts, place):
    """The infer-meta's outputs as a tuple, with the kernel's layouts and the inputs' place."""
    if type(result) is MetaTensor and result.layout == out_layouts[0] and result.place == place:
        return (result,)
    outs = result if type(result) is tuple else (result,)
    return tuple(_placed(m, lay, place) for m, lay in zip(outs, out_layouts))


def _placed(m, layout, place):
    if isinstance(m, list):
        return [_placed(i, layout, place) for i in m]
    return m.with_(layout=layout, place=place) if m.layout != layout or m.place != place else m


def meta_binding(spec):
    """A function computing ``spec``'s output metadata from tensors or MetaTensors."""
    signature = inspect.Signature([
        inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          default=a.default if a.has_default else inspect.Parameter.empty)
        for a in spec.args])

    def infer_meta(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{spec.name}.infer_meta: {exc}") from None
        bound.apply_defaults()
        values = bound.arguments
        ins = [_as_input(values[a.name], spec, a) for a in spec.tensor_args]
        metas = [_meta(t) for t in _weak_scalars(spec, ins)]
        attrs = _attrs(spec, [values[a.name] for a in spec.attr_args])
        out = tuple(reported(m) for m in infer(spec, metas, attrs))
        return out[0] if len(out) == 1 else out
    infer_meta.__signature__ = signature
    infer_meta.__name__ = f"{spec.name}_meta"
    infer_meta.__doc__ = f"Output metadata of '{spec.qualname}', computed without data."
    return infer_meta


def _load(spec):
    if spec.module and spec.module not in _LOADED:
        importlib.import_module(spec.module)
        _LOADED.add(spec.module)


def _binding(spec, metas):
    """(kernel, output layouts, place, output classes) for these inputs, cached per op.

    The key is every input's layout and place and the data-type argument's
    dtype; a registration made later (the registry's generation) rebinds.
    """
    if len(metas) == 1:
        m = metas[0]
        key = (m.layout, m.place, m.dtype)
    else:
        key = (tuple([(m.layout, m.place) for m in metas]), metas[spec.data_type_index].dtype)
    found = spec.bindings.get(key)
    if found is not None and found[0] == GENERATION[0]:
        return found[1]
    sig = select_kernel_sig(spec, metas)
    place = _place(spec, metas)
    _load(spec)
    m = metas[spec.layout_index]
    kernel = registry.lookup(sig.func, m.place, m.layout, metas[spec.data_type_index].dtype,
                             op=spec.name)
    bound = (kernel, sig.out_layouts, place, tuple(layout_class(lay) for lay in sig.out_layouts))
    spec.bindings[key] = (GENERATION[0], bound)
    return bound


def _canonical(spec, attrs, canonical):
    """``attrs`` with the infer-meta's canonical values put in place of the caller's."""
    attrs = list(attrs)
    index = spec.attr_index
    for name, value in canonical.items():
        attrs[index[name]] = value
    return attrs


# ---------------------------------------------------------------- running
def run(spec, tensors, attrs, metas_ok=False, grad_mask=None):
    """Run ``spec`` on tensor inputs and attribute values (both in YAML order).

    The common call (local tensors of the layout classes in, or one Python
    scalar beside one, no ``grad_mask``) takes the short path: its inputs'
    metadata and its attributes as given key the per-op memo
    (:func:`_prepared`), so a repeated call converts nothing.
    Arrays, scalars, ``Tensor[]`` arguments, ``invoke:`` ops and global inputs
    take :func:`_run_any`.
    """
    if spec.direct and grad_mask is None:
        if len(tensors) == 2 and (type(tensors[1]) in _PY_SCALARS
                                  or type(tensors[0]) in _PY_SCALARS):
            tensors = _scalar_pair(spec, tensors)          # ``x * 2.0``
        metas, datas = [], []
        for t in tensors:
            if type(t) not in LOCAL_CLASSES:
                break
            m = t._meta
            metas.append(t.meta if m is None else m)
            datas.append(t._data())
        else:
            kernel, kernel_attrs, out_metas, cls, attrs = _prepared(spec, metas, attrs, True)
            try:
                result = kernel(*datas, *kernel_attrs)
            except MemoryError as exc:
                raise _out_of_memory(spec, exc) from None
            if cls is None:
                return _outputs(spec, tensors, attrs, result, out_metas)
            out = cls._from_kernel(result, out_metas[0])
            if spec.backward_fn is not None:
                for t in tensors:
                    if not t._stop_gradient:
                        _record(spec, tensors, (out,), attrs)
                        break
            return out
    return _run_any(spec, tensors, attrs, metas_ok, grad_mask)


def _run_any(spec, tensors, attrs, metas_ok, grad_mask):
    """:func:`run` for any inputs: arrays and scalars are made tensors first.

    A MetaTensor input raises TypeError unless ``metas_ok`` (a backward passes
    them for its no_need_buffer inputs).  ``grad_mask`` (from
    :func:`call_masked`) goes to the kernel as a keyword, and the outputs it
    returns as None stay None.  Global inputs go to the global runtime without
    it (every gradient is computed); a generated backward never sends them,
    since autograd records the local run on the shards.
    """
    tensors = _arrays_follow(tensors)
    ins = tensors
    if spec.general:
        ins = [_as_input(v, spec, a) for v, a in zip(tensors, spec.tensor_args)]
    else:
        for t in tensors:
            if not isinstance(t, _INPUTS):      # an array or a scalar
                ins = [_as_input(v, spec, a) for v, a in zip(tensors, spec.tensor_args)]
                break
    if ins is not tensors:
        ins = _weak_scalars(spec, ins)
    attrs = _attrs(spec, attrs)
    if spec.invoke is not None:
        return spec.invoke(*ins, *attrs)
    if spec.general:
        return _run_general(spec, ins, attrs)
    metas, datas = [], []
    for t in ins:
        if type(t) is MetaTensor:
            if not metas_ok:
                _no_data(spec, ins)
            metas.append(t)
            datas.append(t)
        elif t.is_global:
            return global_runtime(spec.name).run(spec, ins, attrs)
        else:
            metas.append(t.meta)
            datas.append(t._data())
    kernel, kernel_attrs, out_metas, _, attrs = _prepared(spec, metas, attrs, False)
    try:
        if grad_mask is None:
            result = kernel(*datas, *kernel_attrs)
        else:
            result = kernel(*datas, *kernel_attrs, grad_mask=grad_mask)
    except MemoryError as exc:
        raise _out_of_memory(spec, exc) from None
    return _outputs(spec, ins, attrs, result, out_metas)


def _out_of_memory(spec, exc):
    """A kernel's MemoryError (numpy's names no op) as one naming the op.

    The up-front checks bound every output, but a kernel may still need more
    scratch memory than there is: say, a contiguous copy of a tensor made from
    a broadcast view, whose data is stored once (:func:`kernels.core.owned.owned_copy`).
    """
    return MemoryError(f"{spec.name}: out of memory in its kernel ({exc}); the inputs' "
                       "full size may not fit (a tensor made from a broadcast view "
                       "stores its data once, but this kernel needs it whole)")


def _outputs(spec, ins, attrs, result, out_metas):
    """The kernel's ``result`` wrapped as tensors (a tuple for several), recorded for autograd."""
    results = result if len(out_metas) > 1 else (result,)
    outs = tuple(_wrap(r, m) for r, m in zip(results, out_metas))
    if spec.backward_fn is not None:
        _record(spec, ins, outs, attrs)
    return outs[0] if len(outs) == 1 else outs


def _arrays_follow(values):
    """numpy arrays given beside tensors that are all on the GPU go there too, as scalars
    do (an index built on the host); tensors on two places still raise in :func:`_place`."""
    if not any(isinstance(v, (np.ndarray, list, tuple)) for v in values):
        return values
    flat = _flat(values)
    if not any(isinstance(v, np.ndarray) for v in flat) \
            or {t.place for t in flat if isinstance(t, TensorBase)} != {"gpu"}:
        return values
    return [[_to_gpu(u) for u in v] if isinstance(v, (list, tuple)) else _to_gpu(v)
            for v in values]


def _to_gpu(v):
    return to_place(v, "gpu") if isinstance(v, np.ndarray) else v


def _no_data(spec, ins):
    name = next(a.name for a, t in zip(spec.tensor_args, ins) if type(t) is MetaTensor)
    raise TypeError(f"{spec.name}: argument '{name}' is a MetaTensor (metadata without "
                    f"data); pass a Tensor, or call {spec.name}.infer_meta")


class Ints(tuple):
    """A tuple of Python ints, so made by its maker (an ``IntArray`` the library builds,
    such as ``x[key]``'s remembered plan): its own memo key, with no scan of its items."""

    __slots__ = ()


#: Attribute types that are their own memo key (with their type beside them).
_KEY_TYPES = frozenset({int, bool, str, type(None), type, Ints})


def _memo_key(metas, attrs):
    """The memo key of a call: the metas' ``_id`` ints, then each attribute with its type.

    None when an attribute has no exact immutable key: the key must tell
    apart what ``==`` does not (``2`` and ``2.0``, ``0.0`` and ``-0.0``, a
    float inside a shape), and a Tensor or array attribute is never a key.
    The checks run cheapest and commonest first (``isinstance`` against
    ``np.dtype`` costs more than the rest together, so it comes last).
    """
    n = len(metas)                      # one and two inputs spelled out: a per-call path
    if n == 1:
        key = [metas[0]._id]
    elif n == 2:
        key = [metas[0]._id, metas[1]._id]
    else:
        key = [m._id for m in metas]
    if not attrs:
        return tuple(key)
    for v in attrs:
        t = type(v)
        if t in _KEY_TYPES:
            key.append(v)
        elif t is tuple or t is list:
            if not _all_ints(v):
                return None
            key.append(tuple(v))
        elif t is float:
            key.append(v if v else repr(v))     # the sign of a zero
        elif isinstance(v, np.dtype):
            key.append(v)
        else:
            return None
        key.append(t)
    return tuple(key)


def _prepared(spec, metas, attrs, raw):
    """(kernel, kernel attributes, output metas, output class, attributes) of a call.

    The infer-meta is a pure function of the inputs' metadata and the
    attributes, so a call repeating them (a loop) reuses its result and the
    kernel binding, as JAX caches a primitive's abstract evaluation.  ``raw``
    attributes are as the caller gave them and are converted on a miss; the
    converted ones come back last.  The output class is None unless the op
    has one single-tensor output.  A registration made later (the registry's
    generation) clears the reuse.  Errors are raised, never remembered.
    """
    key = _memo_key(metas, attrs)
    hit = spec.memo.get(key) if key is not None else None
    if hit is not None and hit[0] == GENERATION[0]:
        return hit[1]
    if raw:
        attrs = _attrs(spec, attrs)
    result = spec.infer_meta(*metas, *attrs)
    kernel_attrs = attrs
    if type(result) is Canonical:
        result, canonical = result
        kernel_attrs = _canonical(spec, attrs, canonical)
    kernel, out_layouts, place, classes = _binding(spec, metas)
    out_metas = _out_metas(result, out_layouts, place)
    _check_outputs(spec, out_metas, check_output_size)
    if kernel_check.ENABLED:
        kernel = kernel_check.checked(spec, kernel, out_metas)
    single = len(out_metas) == 1 and type(out_metas[0]) is MetaTensor
    prepared = (kernel, kernel_attrs, out_metas, classes[0] if single else None, attrs)
    if key is not None:
        if len(spec.memo) >= MEMO_SIZE:
            spec.memo.clear()
        spec.memo[key] = (GENERATION[0], prepared)
    return prepared


def _run_general(spec, ins, attrs):
    """:func:`run` for ops with ``Tensor[]`` arguments or without tensor inputs."""
    if any(getattr(t, "is_global", False) for t in _flat(ins)):
        return global_runtime(spec.name).run(spec, ins, attrs)
    metas = [_meta(t) for t in ins]
    result = spec.infer_meta(*metas, *attrs)
    kernel_attrs = attrs
    if type(result) is Canonical:
        result, canonical = result
        kernel_attrs = _canonical(spec, attrs, canonical)
    sig = select_kernel_sig(spec, metas)
    out_metas = _out_metas(result, sig.out_layouts, _place(spec, metas))
    _check_outputs(spec, out_metas, check_output_size)
    kernel = _kernel(spec, sig, metas or list(out_metas))
    if kernel_check.ENABLED:
        kernel = kernel_check.checked(spec, kernel, out_metas)
    try:
        result = kernel(*[_datas(t) for t in ins], *kernel_attrs)
    except MemoryError as exc:
        raise _out_of_memory(spec, exc) from None
    results = result if len(out_metas) > 1 else (result,)
    outs = tuple(_wrap(r, m) for r, m in zip(results, out_metas))
    if spec.backward_fn is not None:
        _record(spec, ins, outs, attrs)
    return outs[0] if len(outs) == 1 else outs


def _datas(t):
    if isinstance(t, list):
        return [_datas(i) for i in t]
    return t if isinstance(t, MetaTensor) else t._data()


def _wrap(result, m):
    if result is None:                     # a gradient its grad_mask did not ask for
        return None
    if isinstance(m, list):
        return [_wrap(r, i) for r, i in zip(result, m)]
    return layout_class(m.layout)._from_kernel(result, m)


def _first(m):
    return m[0] if isinstance(m, list) else m


def _kernel(spec, sig, metas):
    """The registered kernel; an op without Tensor inputs (creation) is keyed by its output."""
    _load(spec)
    m, d = metas[spec.layout_index], metas[spec.data_type_index]
    return registry.lookup(sig.func, _first(m).place, _first(m).layout, _first(d).dtype,
                           op=spec.name)


def _record(spec, ins, outs, attrs):
    """Record a grad node when grad mode is on and an input needs a gradient."""
    tracked = None
    if spec.general:
        if not any(isinstance(t, TensorBase) and not t._stop_gradient for t in _flat(ins)):
            return
    else:
        tracked = tuple([not getattr(t, "_stop_gradient", True) for t in ins])
        if True not in tracked:
            return
    if not autograd.grad_enabled():
        return
    named = {a.name: t for a, t in zip(spec.tensor_args, ins)}
    named.update(zip(spec.outputs, outs))
    saved = {k: named[k] for k in spec.saved}
    saved.update({k: _meta(named[k]) for k in spec.saved_meta})
    node = autograd.GradNode(spec, tuple(ins), saved,
                             {a.name: v for a, v in zip(spec.attr_args, attrs)}, tracked)
    for i, out in enumerate(outs):
        if not is_differentiable(out.dtype):
            continue  # an integer or bool result (a cast to int) carries no gradient
        set_attribute(out, "_grad_fn", node)      # tensors refuse plain assignment
        set_attribute(out, "_out_index", i)
        set_attribute(out, "_stop_gradient", False)
