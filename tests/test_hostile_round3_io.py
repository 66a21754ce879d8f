"""Regression tests of the third hostile-input round: tensor input and output.

to_tensor of data too big for memory or of unsupported numpy scalars,
from_dlpack of a producer that breaks the protocol, placement of a bad
communicator, and a global tensor's buffer methods and numel.
"""
import numpy as np
import pytest

import dense
import sparse


class _Huge:
    """A sequence whose len() is 2**62: numpy runs out of memory listing it."""

    def __len__(self):
        return 2 ** 62

    def __getitem__(self, i):
        return 1.0


@pytest.mark.parametrize("data", [range(2 ** 62), _Huge()], ids=["range", "len"])
def test_to_tensor_too_big_names_the_op(data):
    with pytest.raises(MemoryError, match=r"^to_tensor: data \(\w+ of length 4611686018427387904\) "
                                          r"does not fit in memory"):
        dense.to_tensor(data)


@pytest.mark.parametrize("data", [[np.uint32(2), np.uint32(3)], (np.uint16(1),),
                                  [np.uint64(2 ** 63)]])
def test_to_tensor_unsigned_scalars_name_their_dtype(data):
    name = np.asarray(data).dtype.name
    with pytest.raises(TypeError, match=f"^to_tensor: dtype {name} is not supported"):
        dense.to_tensor(data)


def test_to_tensor_big_python_ints_still_named():
    for data in ([2 ** 63], [2 ** 70, 1], 2 ** 63):
        with pytest.raises(ValueError, match="^to_tensor: data holds a Python int out of the "
                                             "range of int64"):
            dense.to_tensor(data)


class _Producer:
    def __init__(self, capsule, device=(1, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("capsule", [5, None, "capsule"])
def test_from_dlpack_without_a_capsule_names_the_op(capsule):
    with pytest.raises(TypeError, match="^from_dlpack: numpy cannot import this _Producer: "
                                        ".*PyCapsule"):
        dense.from_dlpack(_Producer(capsule))


@pytest.mark.parametrize("device", [5, None, "ab", ()])
def test_from_dlpack_bad_device_names_the_op(device):
    with pytest.raises(TypeError, match=r"^from_dlpack: _Producer.__dlpack_device__\(\) gave "
                                        r".*; expected a \(device type, device id\) pair"):
        dense.from_dlpack(_Producer(5, device))


@pytest.mark.parametrize("comm", ["comm", 5, object()])
def test_placement_bad_comm(comm):
    with pytest.raises(TypeError, match=f"^placement: comm must be an mpi4py communicator "
                                        f".*of type {type(comm).__name__}"):
        dense.placement(None, comm)


def _global_dense():
    return dense.to_tensor([1.0, 2.0]).to_global(placement=dense.placement(),
                                                 sbp=dense.sbp.split(0))


def test_global_tensors_do_not_offer_one_buffer():
    """A global tensor spreads over ranks: it has no DLPack export or data pointer of its
    own (no such attribute, so that consumers fall back to ``__array__``)."""
    g = _global_dense()
    for name in ("__dlpack__", "__dlpack_device__", "data_ptr"):
        assert not hasattr(g, name)
        assert hasattr(g.to_local(), name)
    np.testing.assert_array_equal(np.asarray(g), [1.0, 2.0])


def test_global_numel_is_logical():
    assert _global_dense().numel() == 2
    g = dense.zeros([3, 4]).to_global(placement=dense.placement(), sbp=dense.sbp.split(1))
    assert g.numel() == 12 == g.size
    s = sparse.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0], [3, 4])
    assert s.to_global(placement=dense.placement(), sbp=dense.sbp.split(0)).numel() == 12
    assert s.numel() == 12 and s.to_sparse_csr().numel() == 12 and s.nnz() == 2


def test_python_ints_beyond_int64_that_numpy_makes_float_are_refused():
    """numpy makes [2**63, 1] float64 (losing the ints' low bits), [2**63] uint64: both
    raise, unless a dtype is asked for."""
    for data in ([2**63, 1], [[1, 2], [3, 2**63]]):
        with pytest.raises(ValueError, match=r"^to_tensor: data holds a Python int out of "
                                             r"the range of int64 .* \(numpy makes it "):
            dense.to_tensor(data)
    assert dense.to_tensor([2**63, 1], dtype="float64").numpy().tolist() == [2.0**63, 1.0]
    assert dense.to_tensor([2**63, 1.0]).dtype == np.float64       # a float: numpy's float64
    assert dense.to_tensor([1, 2.5]).dtype == np.float64
