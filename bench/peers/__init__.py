"""The peers: which interpreter runs each one and which module implements it.

Each peer module (``bench/peers/<name>_peer.py``) is imported only inside a
worker subprocess running the peer's own interpreter, and provides:

- ``version()``: the library version;
- ``BACKENDS``: the backends it runs on ('cpu', 'gpu');
- ``IMPLS``: ``{op: {label: factory}}``, where ``factory(inputs, backend)``
  returns a :class:`bench.measure.Case` (inputs as built by
  :mod:`bench.workloads`);
- optionally ``unsupported(op, params, backend)``: why it cannot run a workload
  on that backend ('cpu', 'gpu'), or None;
- optionally ``backend_missing(backend)``: why it cannot run on a backend at
  all here (torch without a CUDA device), or None;
- optionally ``SKIP_ERRORS``: exception types a call raises where the library
  has no kernel for the backend; the job is then skipped with the message.

The interpreter of peer ``name`` is ``$PHISPARSE_BENCH_<NAME>`` (upper case,
'-' as '_'), else ``<peers dir>/<venv>/bin/python`` for the heavy peers, where
the peers dir is ``$PHISPARSE_BENCH_PEERS_DIR`` or the folder ``peers`` beside
this checkout, else the interpreter running the benchmark.
"""
import dataclasses
import os
import sys
from pathlib import Path

from .. import ROOT

RECIPE = "bench/PEERS.md"


@dataclasses.dataclass(frozen=True)
class PeerSpec:
    """Where a peer runs.

    Attributes
    ----------
    name : str
    module : str
        Module under ``bench.peers``.
    venv : str or None
        Default virtual environment under the peers dir; None: the runner's python.
    from_checkout : bool
        Import with this checkout first on ``sys.path`` (phisparse benchmarks
        the code here); other peers run with it removed, so pydata's
        ``sparse`` is never shadowed by ours.
    """

    name: str
    module: str
    venv: str = None
    from_checkout: bool = False

    @property
    def env_var(self):
        """The environment variable that overrides the interpreter."""
        return "PHISPARSE_BENCH_" + self.name.upper().replace("-", "_")

    def interpreter(self):
        """The path of the python that runs this peer."""
        given = os.environ.get(self.env_var)
        if given:
            return given
        if self.venv is None:
            return sys.executable
        return str(peers_dir() / self.venv / "bin" / "python")


def peers_dir():
    """The folder holding the peers' virtual environments."""
    return Path(os.environ.get("PHISPARSE_BENCH_PEERS_DIR") or ROOT.parent / "peers")


PEERS = {p.name: p for p in [
    PeerSpec("phisparse", "phisparse_peer", from_checkout=True),
    PeerSpec("numpy", "numpy_peer"),
    PeerSpec("scipy", "scipy_peer"),
    PeerSpec("pydata-sparse", "pydata_peer", venv="venv-pydata"),
    PeerSpec("torch", "torch_peer", venv="venv-torch"),
    PeerSpec("paddle", "paddle_peer", venv="venv-paddle"),
    PeerSpec("tensorflow", "tf_peer", venv="venv-tf"),
]}
