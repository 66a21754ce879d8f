"""Rank script: rank 1 raises while the others wait in a collective.

The job must end non-zero within seconds (the abort hook, or ``python -m
mpi4py``), not hang.  tests/test_global_mpi.py runs it.
"""
import rank_stderr  # noqa: F401  (first: this rank's stderr to a file)
import numpy as np

import dense
from kernels.core.dist.comm import world

x = dense.to_tensor(np.ones(4)).to_global(placement=dense.placement(), sbp=dense.sbp.split(0)
                                          if world().size == 1 else dense.sbp.broadcast)
if world().rank == 1:
    raise RuntimeError("rank 1 fails on purpose")
x.to_global(sbp=dense.sbp.partial_sum).numpy()   # the others block in an all-reduce
