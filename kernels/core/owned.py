"""Ownership of host arrays: tensors hold data that no caller can change.

A tensor's numpy buffer is *locked*: read-only, and no view of it can be made
writable again (numpy lets a view become writable only while some array it
derives from is writable).  :func:`lock` locks an array phisparse made (a
kernel output, a copy); :func:`share` hands a caller a view of one
(``np.asarray(tensor)``) and remembers it; :func:`owned` takes a caller's
array, sharing it only when it is such a view and copying it otherwise.
cupy arrays have no read-only flag: a caller's cupy array is always copied.
"""
import weakref

import numpy as np

#: id(owner) -> owner, for the locked base arrays whose views :func:`share` gave out.
_SHARED = weakref.WeakValueDictionary()
#: id(block) -> weak reference to the block, for the buffers that must stay writable
#: (:func:`keep_writable`); a plain dict, so that :func:`lock`'s lookup is cheap.
_WRITABLE = {}


def _owner(array):
    """The ndarray at the end of ``array``'s base chain (numpy collapses views)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def lock(array):
    """Make an array phisparse owns read-only for good; return the array to keep.

    The array and its base are marked read-only.  A base that must stay
    writable (a pooled block, :func:`keep_writable`) is hidden behind a
    read-only buffer, so ``np.asarray(tensor).flags.writeable = True`` fails.
    Non-numpy arrays (cupy, scalars) are returned as they are.
    """
    if type(array) is not np.ndarray and not isinstance(array, np.ndarray):
        return array
    array.setflags(False)                # positional: cheaper than the keyword
    owner = array.base                   # _owner's walk, inline on this per-call path
    if not isinstance(owner, np.ndarray):
        return array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner.flags.writeable:
        ref = _WRITABLE.get(id(owner))
        if ref is not None and ref() is owner:
            return np.asarray(memoryview(array).toreadonly())
        owner.setflags(False)
    return array


def keep_writable(block):
    """Mark ``block`` as a buffer :func:`lock` never makes read-only (a pooled block,
    whose other parts are reused once idle); return it."""
    key = id(block)
    _WRITABLE[key] = weakref.ref(block, lambda _: _WRITABLE.pop(key, None))
    return block


def share(array):
    """A read-only view of locked ``array`` for a caller, which :func:`owned` will know."""
    owner = _owner(array)
    if _SHARED.get(id(owner)) is not owner:
        _SHARED[id(owner)] = owner
    return array.view()


def is_locked(array):
    """True if ``array`` is a view that :func:`share` gave out of a locked buffer."""
    if not isinstance(array, np.ndarray) or array.flags.writeable:
        return False
    owner = _owner(array)
    return _SHARED.get(id(owner)) is owner and not owner.flags.writeable


def owned(array):
    """``array`` as a tensor may keep it: shared if locked, else a locked copy.

    Examples
    --------
    >>> a = np.arange(3.0)
    >>> b = owned(a)
    >>> a[0] = 5.0
    >>> float(b[0]), b.flags.writeable
    (0.0, False)
    >>> v = share(b)                     # what np.asarray(tensor) gives
    >>> owned(v) is v
    True
    """
    if isinstance(array, np.ndarray):
        if type(array) is not np.ndarray:  # np.matrix, a masked array: the plain data, as
            array = array.view(np.ndarray)  # np.asarray gives (a matrix's * is no product)
        if array.dtype.isnative and is_locked(array):
            return array
        return owned_copy(array)
    if type(array).__module__.startswith("cupy"):
        return array.copy()
    return array


def owned_copy(array, dtype=None, order="C"):
    """A locked copy of numpy ``array`` (as ``dtype``, native byte order) sharing no memory
    with it.

    A broadcast view (a zero stride on a dim longer than 1, as
    ``np.broadcast_to`` makes) is not materialised: only its unique data is
    copied, and the copy is broadcast again, read-only, to ``array``'s shape,
    so ``np.broadcast_to(np.ones(3), (10**6, 10**6, 3))`` costs 24 bytes, not
    24 TB.  ``order`` applies to that copy.

    Examples
    --------
    >>> a = np.arange(3.0)
    >>> b = owned_copy(np.broadcast_to(a, (10**6, 10**6, 3)))
    >>> a[0] = 5.0
    >>> b.shape, b.strides, float(b[7, 7, 0]), b.flags.writeable
    ((1000000, 1000000, 3), (0, 0, 8), 0.0, False)
    """
    dtype = np.dtype(array.dtype if dtype is None else dtype)
    if not dtype.isnative:                # byte-swapped input: convert to native order
        dtype = dtype.newbyteorder("=")
    unique = unique_data(array)
    if unique is None:
        return lock(np.array(array, dtype=dtype, order=order, copy=True))
    base = lock(np.array(unique, dtype=dtype, order=order, copy=True))
    return lock(np.broadcast_to(base, array.shape))


def unique_data(array):
    """The part of numpy ``array`` holding all its distinct elements, when a zero stride
    repeats them (a broadcast view): ``array`` cut to length 1 along each such dim.
    None when no dim longer than 1 has a zero stride."""
    if 0 not in array.strides:
        return None
    cut = tuple(slice(0, 1) if step == 0 and n > 1 else slice(None)
                for n, step in zip(array.shape, array.strides))
    return None if all(c == slice(None) for c in cut) else array[cut]


# ---------------------------------------------------------------- reading locked arrays
#: Below this many bytes copying a read-only input costs numpy less than making an alias.
READ_ALIAS_BYTES = 1 << 16


class _ReadAlias:
    """Presents a locked array's memory to numpy as writeable (see :func:`readable`)."""
    __slots__ = ("__array_interface__", "array")


def readable(array):
    """``array`` as the numpy functions that copy read-only inputs take it as it is.

    numpy's ``argmax``/``argmin`` and ``bincount`` convert their input asking
    for a writeable array (``NPY_ARRAY_DEFAULT``), so a locked tensor buffer
    is copied first: on 4e6 float32 values argmax took 2.8-3.7x as long, and
    ``bincount`` of 4e6 int64 keys 1.4-1.7x (``np.take`` had the same flaw
    until numpy PR #12285).  For a read-only numpy array of
    :data:`READ_ALIAS_BYTES` or more this returns a writeable-flagged alias of
    the same memory, which keeps ``array`` alive; anything else comes back as
    it is.  The alias is for one such read: never write through it or keep it.
    """
    if type(array) is not np.ndarray or array.flags.writeable \
            or array.nbytes < READ_ALIAS_BYTES:
        return array
    face = array.__array_interface__
    face["data"] = (face["data"][0], False)
    alias = _ReadAlias()
    alias.__array_interface__, alias.array = face, array
    return np.asarray(alias)


# ---------------------------------------------------------------- facts about locked arrays
#: (what, ids of the arrays) -> (weak references to the arrays, value): what was derived
#: from locked arrays (:func:`remember`), kept while the first of them lives.
_FACTS = {}


def frozen(array):
    """True for a numpy array whose content can never change: it and every array it is
    a view of are read-only (what :func:`lock` makes of a tensor's buffer)."""
    if not isinstance(array, np.ndarray):
        return False
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    return True


def recall(arrays, what):
    """The value :func:`remember` kept for these very ``arrays`` under ``what``, or None."""
    hit = _FACTS.get((what, *map(id, arrays)))
    if hit is None:
        return None
    for ref, a in zip(hit[0], arrays):          # a loop: any() of a generator costs more
        if ref() is not a:
            return None
    return hit[1]


def remember(arrays, what, value):
    """Keep ``value``, derived from ``arrays`` (say, a CSR's row pointers from a COO's
    index matrix), for :func:`recall` while the first array lives, as scipy caches
    ``has_canonical_format`` on a matrix.  Only frozen arrays qualify (:func:`frozen`):
    what is derived from them stays true.  Returns ``value``."""
    if all(frozen(a) for a in arrays):
        key = (what,) + tuple(map(id, arrays))
        refs = [weakref.ref(arrays[0], lambda _: _FACTS.pop(key, None))]
        refs += [weakref.ref(a) for a in arrays[1:]]
        _FACTS[key] = (refs, value)
    return value
