"""Runtime records of ops, built by the generated op table from the YAML."""
from dataclasses import dataclass, field


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
    """Everything dispatch needs to run one op (forward or backward)."""

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
    doc: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def tensor_args(self):
        return tuple(a for a in self.args if a.is_tensor)

    @property
    def attr_args(self):
        return tuple(a for a in self.args if not a.is_tensor)

    @property
    def qualname(self):
        return f"{self.namespace}.{self.name}"
