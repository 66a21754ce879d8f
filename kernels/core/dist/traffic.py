"""What this rank's collectives moved: bytes sent and received, and messages.

Every collective of :mod:`.comm` adds to one process-wide :class:`Traffic`;
tests and the scale model in the README read it through :func:`measure`.
Bytes are what this rank sends to and receives from other ranks (its own
block is a local copy and not counted).  For the all-to-all exchanges they
are the blocks handed to MPI; for all-gather, all-reduce and reduce-scatter
they are the volume of the ring and recursive-doubling algorithms MPICH
uses, ``(P - 1) / P`` of the data per pass (all-reduce makes two passes).
Messages are the point-to-point transfers a rank takes part in, as those
algorithms make them (``2 log2 P`` for the tree collectives).
"""
import contextlib
import threading
from dataclasses import dataclass, field


@dataclass
class Traffic:
    """Totals since the last reset, and per collective name."""

    sent: int = 0
    received: int = 0
    messages: int = 0
    calls: dict = field(default_factory=dict)


_LOCK = threading.Lock()
_TOTAL = Traffic()


def count(name, sent, received, messages):
    """Add one collective's bytes and messages to the running totals."""
    with _LOCK:
        _TOTAL.sent += int(sent)
        _TOTAL.received += int(received)
        _TOTAL.messages += int(messages)
        _TOTAL.calls[name] = _TOTAL.calls.get(name, 0) + 1


@contextlib.contextmanager
def measure():
    """``with measure() as t:`` -- ``t`` holds what the block's collectives moved."""
    out = Traffic()
    with _LOCK:
        before = Traffic(_TOTAL.sent, _TOTAL.received, _TOTAL.messages, dict(_TOTAL.calls))
    yield out
    with _LOCK:
        out.sent = _TOTAL.sent - before.sent
        out.received = _TOTAL.received - before.received
        out.messages = _TOTAL.messages - before.messages
        out.calls = {k: v - before.calls.get(k, 0) for k, v in _TOTAL.calls.items()
                     if v != before.calls.get(k, 0)}
