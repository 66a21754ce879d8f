"""Global tensors with SBP (OneFlow's consistent view) on MPI through mpi4py.

- :mod:`.sbp`: the sbp values ``split(axis)``, ``broadcast``, ``partial_sum``;
- :mod:`.comm`: placements and the MPI collectives (mpi4py imported lazily);
- :mod:`.boxing`: each change of sbp as one collective or a local step;
- :mod:`.rules`: the signature tables generated from the YAML ``sbp:`` field;
- :mod:`.runtime`: ``to_global`` and running ops on global tensors;
- :mod:`.failures`: one rank's error in a forward or backward kernel, shared with every rank;
- :mod:`.tensor`: :class:`GlobalTensor`.
"""
import os

from ..tensor import install_global
from . import runtime, sbp
from .comm import Placement, placement, world
from .runtime import run, to_global
from .tensor import GlobalTensor

install_global(runtime)

#: Variables through which MPI launchers (MPICH/Hydra, Intel MPI, Open MPI,
#: MVAPICH, Slurm) tell each process the world size.
LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE",
                      "SLURM_NTASKS")


def _launched_world_size():
    for name in LAUNCHER_SIZE_VARS:
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            continue
    return 1


# Under a launcher with several ranks, join the world now, so the abort hook
# (an uncaught exception on one rank ends the job) is in place from import
# on, not only from the first placement.
if _launched_world_size() > 1:
    world()

__all__ = ["sbp", "placement", "Placement", "GlobalTensor", "run", "to_global"]
