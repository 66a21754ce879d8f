"""Give each rank's stderr a file of its own when PHISPARSE_RANK_STDERR names a folder.

mpiexec forwards the ranks' stderr through its proxies, and when one rank
aborts the job, a traceback still on its way can be cut off (seen with four
busy processes on two cores).  A file holds whatever the rank wrote before the
abort, so tests/test_global_mpi.py reads the files once the job has ended.
Import this first: the rank comes from the launcher's PMI_RANK, before MPI starts.
"""
import os

_folder = os.environ.get("PHISPARSE_RANK_STDERR")
if _folder:
    _fd = os.open(os.path.join(_folder, f"rank{os.environ.get('PMI_RANK', '0')}.err"),
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(_fd, 2)
    os.close(_fd)
