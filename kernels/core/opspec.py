"""Runtime records of ops, built by the generated op table from the YAML."""
from dataclasses import dataclass, field


#: The Python type an attribute's value has when it needs no conversion
#: (``tuple`` for an IntArray: a tuple or list of ints, or one int).
PLAIN_TYPES = {"int": int, "bool": bool, "float": float, "str": str, "IntArray": tuple}
#: The name of an index argument: integer positions (gather, index_select), for which
#: a Python scalar is refused, since its weak dtype would be the other inputs'.
INDEX_ARG = "index"
#: The name of a Tensor argument that holds a bool condition (``where``): a Python bool
#: given for it is a bool 0-d array, never a weak scalar promoted to the others' dtype.
CONDITION_ARG = "condition"


@dataclass(frozen=True)
class Arg:
    """One argument: a Tensor input or a typed attribute with an optional default."""

    name: str
    type: str
    has_default: bool = False
    default: object = None

    @property
    def is_tensor(self):
        """A Tensor input, single (``Tensor``) or a list (``Tensor[]``)."""
        return self.type in ("Tensor", "Tensor[]")

    @property
    def is_list(self):
        """A ``Tensor[]`` input: a list of tensors."""
        return self.type == "Tensor[]"


@dataclass(frozen=True)
class KernelSig:
    """A kernel name with the layouts of its tensor inputs and outputs."""

    func: str
    in_layouts: tuple
    out_layouts: tuple


@dataclass(frozen=True)
class OpSpec:
    """Everything dispatch needs to run one op (forward or backward).

    ``infer_meta`` returns the output ``MetaTensor`` (a tuple for several
    outputs), or a :class:`kernels.core.meta.Canonical` holding those and the
    attributes it resolved, which the kernel then receives instead of the
    caller's.  ``sbp`` is the op's signature table for global tensors
    (:class:`kernels.core.dist.rules.SbpTable`; None: all-broadcast only).
    ``bindings`` and ``memo`` are dispatch's per-op caches (kernel
    choices; infer-meta results of repeated calls);
    ``general`` marks ops (``Tensor[]`` arguments, no tensor inputs) that take
    dispatch's general path; ``direct`` ops (neither general nor ``invoke:``)
    may take its short path.  ``index_args`` are the positions among the
    tensor inputs of index arguments (a ``Tensor index``), which take no
    Python scalar; ``condition_args`` those of bool conditions (a ``Tensor
    condition``), which take a Python bool as a bool and no other Python scalar.
    """

    name: str
    namespace: str
    args: tuple
    outputs: tuple
    kernels: tuple = ()
    infer_meta: object = None
    layout_arg: str | None = None
    data_type_arg: str | None = None
    module: str | None = None
    backward: str | None = None
    backward_fn: object = None
    saved: tuple = ()
    saved_meta: tuple = ()
    invoke: object = None
    sbp: object = None
    #: True for a node whose backward runs a collective (boxing): it runs on every rank.
    collective: bool = False
    tensor_args: tuple = field(init=False, repr=False, compare=False)
    attr_args: tuple = field(init=False, repr=False, compare=False)
    attr_index: dict = field(init=False, repr=False, compare=False)
    layout_index: int = field(init=False, repr=False, compare=False)
    data_type_index: int = field(init=False, repr=False, compare=False)
    general: bool = field(init=False, repr=False, compare=False)
    direct: bool = field(init=False, repr=False, compare=False)
    index_args: tuple = field(init=False, repr=False, compare=False)
    condition_args: tuple = field(init=False, repr=False, compare=False)
    attr_plain: tuple = field(init=False, repr=False, compare=False)
    bindings: dict = field(init=False, repr=False, compare=False, default_factory=dict)
    memo: dict = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self):
        tensors = tuple(a for a in self.args if a.is_tensor)
        attrs = tuple(a for a in self.args if not a.is_tensor)
        names = [a.name for a in tensors]
        derived = {"tensor_args": tensors, "attr_args": attrs,
                   "attr_index": {a.name: i for i, a in enumerate(attrs)},
                   "layout_index": names.index(self.layout_arg)
                   if self.layout_arg in names else 0,
                   "data_type_index": names.index(self.data_type_arg)
                   if self.data_type_arg in names else 0,
                   "general": not tensors or any(a.is_list for a in tensors),
                   "attr_plain": tuple(PLAIN_TYPES.get(a.type) for a in attrs),
                   "index_args": tuple(i for i, a in enumerate(tensors)
                                       if a.name == INDEX_ARG),
                   "condition_args": tuple(i for i, a in enumerate(tensors)
                                           if a.name == CONDITION_ARG)}
        derived["direct"] = not derived["general"] and self.invoke is None
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def qualname(self):
        return f"{self.namespace}.{self.name}"
