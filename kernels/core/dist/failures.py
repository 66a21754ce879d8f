"""Errors that one rank's kernel raises, shared with every rank of a placement.

A forward kernel's error (:func:`kernels.core.dist.runtime.run`) and a backward pass's
(:func:`kernels.core.autograd.run_backward`, at each collective node and at the end of
a global tensor's ``backward()``) go through one small all-reduce of who failed; the
lowest failing rank's error is then broadcast as its class and text, and rebuilt on the
others, so that no rank waits in a collective that another left.
"""
import pickle

from .. import autograd
from . import comm


def agree_in_backward(node, failure, failed_op=None):
    """Before collective ``node``'s backward: the error every rank of its placement holds
    from now on (see :func:`shared_failure`); one small all-reduce."""
    return shared_failure(node.attrs["placement"].group, failure, failed_op)


autograd.set_failure_agreement(agree_in_backward)


def shared_failure(group, failure, failed_op=None):
    """The error of a backward pass that every rank of ``group`` holds after one small
    all-reduce (every rank must call it): None where no rank has one; each rank's own
    where every rank has one; else the lowest failing rank's, rebuilt on the others
    (its class, or the nearest built-in one) and chained to a rank's own error.  An
    error raised by this rank's backward of op ``failed_op`` is named so; one shared
    earlier keeps its message."""
    bad, anyone_ok = failing_rank(group, failure)
    if bad is None or not anyone_ok:
        return failure
    own = failed_op is not None and group.rank == bad
    label = f"backward: on rank {bad} of the placement, the gradient of '{failed_op}': "
    kind, text = shared_error(group, bad, failure, label if own else "")
    error = rebuilt(kind, text)
    error.__cause__ = failure
    return error


def failing_rank(group, failure):
    """(the lowest rank of ``group`` whose ``failure`` is not None, or None if none failed;
    whether some rank did not fail): one small all-reduce, every rank must call it."""
    failed = failure is not None
    got = comm.allreduce_ints(group, [-(group.rank if failed else group.size),
                                      0 if failed else 1], "max")
    bad, anyone_ok = -int(got[0]), int(got[1])
    return (None if bad == group.size else bad), bool(anyone_ok)


def raise_shared(error, failure):
    """Raise the shared ``error``, chained to this rank's own ``failure`` where it failed."""
    if failure is not None:
        raise error from failure
    raise error from None


def shared_error(group, bad, failure, label=""):
    """(class or None, text) of rank ``bad``'s error, on every rank (a broadcast of
    bytes: a class that cannot be pickled or imported here arrives as None); rank
    ``bad`` puts its ``label`` in front of the text."""
    payload = None
    if group.rank == bad:
        text = failure.args[0] if isinstance(failure, KeyError) and failure.args else None
        try:
            text = label + (str(failure) if text is None else str(text))
        except Exception:               # noqa: BLE001 (a __str__ that raises)
            text = label + type(failure).__qualname__
        try:
            payload = pickle.dumps((type(failure), text))
        except Exception:               # noqa: BLE001 (a local or unpicklable class)
            payload = pickle.dumps((None, f"{text} ({type(failure).__qualname__})"))
    payload = group.mpi.bcast(payload, root=bad)
    try:
        return pickle.loads(payload)
    except Exception:                   # noqa: BLE001 (a class this rank cannot import)
        return None, "an error whose class this rank cannot import"


def rebuilt(kind, message):
    """``kind(message)``, else the first class of its MRO that takes one message (numpy's
    casting errors are TypeErrors that need more arguments), else RuntimeError."""
    for cls in (kind.__mro__ if isinstance(kind, type) else ()):
        try:
            return cls(message)
        except Exception:               # noqa: BLE001 (a constructor with other arguments)
            continue
    return RuntimeError(message)
