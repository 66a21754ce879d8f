"""Rank script: rank 1 raises right after ``import dense``, before any placement.

The others go on into a collective.  phisparse joins the MPI world when it
is imported under a launcher, so its abort hook already ends the job.
tests/test_global_mpi.py runs it without ``python -m mpi4py``.
"""
import rank_stderr  # noqa: F401  (first: this rank's stderr to a file)
import os

import numpy as np

import dense

if os.environ.get("PMI_RANK") == "1":
    raise RuntimeError("rank 1 fails on purpose before any placement")
x = dense.to_tensor(np.ones(4)).to_global(placement=dense.placement(), sbp=dense.sbp.broadcast)
x.to_global(sbp=dense.sbp.partial_sum).numpy()   # the others block in collectives
