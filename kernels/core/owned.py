"""Ownership of host arrays: tensors hold data that no caller can change.

A tensor's numpy buffer is *locked*: read-only, and no view of it can be made
writable again (numpy lets a view become writable only while some array it
derives from is writable).  :func:`lock` locks an array phisparse made (a
kernel output, a copy); :func:`owned` takes a caller's array, sharing it only
when it is already a locked tensor buffer and copying it otherwise.  cupy
arrays have no read-only flag: a caller's cupy array is always copied.
"""
import weakref

import numpy as np

#: id(owner) -> owner, for every base array whose memory a tensor holds locked.
_LOCKED = weakref.WeakValueDictionary()


def _owner(array):
    """The ndarray at the end of ``array``'s base chain (numpy collapses views)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def lock(array):
    """Make an array phisparse owns read-only for good; return the array to keep.

    The array and its base are marked read-only.  A base that must stay
    writable (a pooled block, see :mod:`kernels.funcs.pool`) is hidden behind
    a read-only buffer, so ``np.asarray(tensor).flags.writeable = True`` fails.
    Non-numpy arrays (cupy, scalars) are returned as they are.
    """
    if not isinstance(array, np.ndarray):
        return array
    if array.flags.writeable:
        array.flags.writeable = False
    owner = _owner(array)
    if owner.flags.writeable:
        array = np.asarray(memoryview(array).toreadonly())
        owner = array
    _LOCKED[id(owner)] = owner
    return array


def is_locked(array):
    """True if ``array`` is a numpy view of memory that a tensor holds locked."""
    if not isinstance(array, np.ndarray) or array.flags.writeable:
        return False
    owner = _owner(array)
    return _LOCKED.get(id(owner)) is owner and not owner.flags.writeable


def owned(array):
    """``array`` as a tensor may keep it: shared if locked, else a locked copy.

    Examples
    --------
    >>> a = np.arange(3.0)
    >>> b = owned(a)
    >>> a[0] = 5.0
    >>> float(b[0]), b.flags.writeable, is_locked(b), owned(b) is b
    (0.0, False, True, True)
    """
    if isinstance(array, np.ndarray):
        if not array.dtype.isnative:       # byte-swapped input: convert to native order
            return lock(array.astype(array.dtype.newbyteorder("=")))
        return array if is_locked(array) else lock(array.copy())
    if type(array).__module__.startswith("cupy"):
        return array.copy()
    return array
