"""Global tensors with SBP (OneFlow's consistent view) on MPI through mpi4py.

- :mod:`.sbp`: the sbp values ``split(axis)``, ``broadcast``, ``partial_sum``;
- :mod:`.comm`: placements and the MPI collectives (mpi4py imported lazily);
- :mod:`.boxing`: each change of sbp as one collective or a local step;
- :mod:`.rules`: the signature tables generated from the YAML ``sbp:`` field;
- :mod:`.runtime`: ``to_global`` and running ops on global tensors;
- :mod:`.tensor`: :class:`GlobalTensor`.
"""
from . import sbp
from .comm import Placement, placement
from .runtime import run, to_global
from .tensor import GlobalTensor

__all__ = ["sbp", "placement", "Placement", "GlobalTensor", "run", "to_global"]
