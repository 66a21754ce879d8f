"""Rank script: rank 1 calls ``sys.exit(3)`` while the others wait in a collective.

Under ``python -m mpi4py`` a non-zero exit code aborts the job (mpi4py turns
SystemExit's code into MPI_Abort); ``sys.exit(0)`` does not, and hangs the
job in every launch mode (README, "Failures").  tests/test_hardening_mpi.py
runs it.
"""
import sys

import numpy as np

import dense
from kernels.core.dist.comm import world

x = dense.to_tensor(np.ones(4)).to_global(placement=dense.placement(), sbp=dense.sbp.broadcast)
if world().rank == 1:
    sys.exit(3)
x.to_global(sbp=dense.sbp.partial_sum).numpy()   # the others block in an all-reduce
