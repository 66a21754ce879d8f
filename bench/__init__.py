"""Benchmarks of phisparse against its peers: ``python -m bench``.

Every (workload, peer) pair is timed in its own subprocess, in the peer's own
interpreter (see ``bench/PEERS.md`` for the recipe that installs them), next to
a memory-bandwidth floor measured in the same run.  Results go to
``bench/results/`` (ignored by git): a JSON file, a markdown table and a chart.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
US = "phisparse"
