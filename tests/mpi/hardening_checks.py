"""Rank script: the global-tensor items of the hardening issue, on any number of ranks.

- A dense partial_sum input to ``to_sparse_coo`` gets the gradient one
  process gives (the addends' patterns differ from x's).
- An out-of-range index value in one rank's shard raises the same IndexError
  on every rank, naming that rank and its global window; the job goes on.

Run as ``mpiexec -n N python -m mpi4py tests/mpi/hardening_checks.py``.
"""
import numpy as np

import dense
import sparse
from kernels.core.dist.comm import world

RANK, SIZE = world().rank, world().size
PLACE = dense.placement()
P, S, B = dense.sbp.partial_sum, dense.sbp.split, dense.sbp.broadcast


def partial_sum_to_sparse_grad():
    # logical x = [1, 0]: rank 0 holds [1, 1], rank 1 [0, -1], any others zeros
    addends = [np.array([1.0, 1.0]), np.array([0.0, -1.0])] + [np.zeros(2)] * (SIZE - 2)
    mine = addends[RANK] if SIZE > 1 else np.array([1.0, 0.0])
    t = dense.to_tensor(mine, stop_gradient=False)
    s = t.to_global(placement=PLACE, sbp=P).to_sparse_coo(1)
    assert np.array_equal(s.to_dense().numpy(), [1.0, 0.0])
    g = sparse.sparse_coo_tensor([[0, 1]], [3.0, 5.0], [2])    # a pattern wider than x's
    ref = dense.to_tensor(np.array([1.0, 0.0]), stop_gradient=False)
    ref.to_sparse_coo(1).backward(g)                          # one process
    s.backward(g)
    assert np.array_equal(t.grad.numpy(), ref.grad.numpy()), (RANK, t.grad.numpy())


def index_error_on_one_rank_is_everyones():
    n = 2 * SIZE
    logical = np.arange(n) % 4
    logical[-1] = 9                                  # out of range, on the last rank's shard
    x = dense.to_tensor(np.arange(4.0)).to_global(placement=PLACE, sbp=B)
    shard = np.array_split(logical, SIZE)[RANK]
    index = dense.to_tensor(shard).to_global(placement=PLACE, sbp=S(0))
    try:
        dense.gather(x, index)
    except IndexError as exc:
        message = str(exc)
    else:
        raise AssertionError(f"rank {RANK}: no IndexError")
    assert message.startswith("gather:") and "9" in message, message
    if SIZE > 1:
        assert f"rank {SIZE - 1}" in message and f"[{n - 2}, {n})" in message, message
    everyone = world().mpi.allgather(message) if SIZE > 1 else [message]
    assert len(set(everyone)) == 1, everyone
    # the job goes on: a collective after the error completes on every rank
    assert dense.sum(x).numpy() == 6.0


def _everyone_raises(kind, text, fn):
    """fn() raises ``kind`` with ``text`` in it on every rank, the same message, and a
    collective after it completes."""
    try:
        fn()
    except kind as exc:
        message = str(exc)
    else:
        raise AssertionError(f"rank {RANK}: no {kind.__name__}")
    assert text in message, message
    everyone = world().mpi.allgather(message) if SIZE > 1 else [message]
    assert len(set(everyone)) == 1, everyone
    assert dense.sum(dense.to_tensor(np.ones(2)).to_global(placement=PLACE, sbp=B)).numpy() == 2


def to_global_arguments_that_differ_or_fail_on_one_rank():
    """A different sbp per rank, or a check that fails on one rank's arguments only, raises
    the same error on every rank (it hung or tore MPI down)."""
    x = dense.to_tensor(np.ones((2, 2)))
    if SIZE > 1:
        _everyone_raises(ValueError, "every rank must give the same sbp", lambda: x.to_global(
            placement=PLACE, sbp=B if RANK == 0 else S(0)))
        _everyone_raises(ValueError, "every rank must give the same sbp", lambda: x.to_global(
            placement=PLACE, sbp=S(0) if RANK == 0 else S(1)))
    _everyone_raises(ValueError, "out of range", lambda: x.to_global(
        placement=PLACE, sbp=S(2) if RANK == 0 else S(1)))
    _everyone_raises(TypeError, "sbp must be", lambda: x.to_global(
        placement=PLACE, sbp="B" if RANK == 0 else B))
    _everyone_raises(TypeError, "needs an sbp", lambda: x.to_global(
        placement=PLACE, sbp=None if RANK == SIZE - 1 else S(0)))
    if SIZE > 1:
        hybrid = sparse.sparse_coo_tensor([[0]], np.ones((1, 2)), [2, 2]) if RANK == 0 else \
            sparse.sparse_coo_tensor([[0], [1]], [1.0], [2, 2])
        _everyone_raises(ValueError, "with 1 sparse dims", lambda: hybrid.to_global(
            placement=PLACE, sbp=B))
    coo = sparse.sparse_coo_tensor([[0]], np.ones((1, 2)), [2, 2])
    _everyone_raises(ValueError, "split only along a sparse dim", lambda: coo.to_global(
        placement=PLACE, sbp=S(1) if RANK == 0 else S(0)))


def backward_seed_of_another_logical_shape():
    """A grad_tensor of the wrong logical shape (the same on every rank) raises the same
    ValueError on every rank, naming the logical shapes (one rank raised on its shard);
    a numpy array seed is taken as broadcast (it raised AttributeError)."""
    w = dense.to_tensor(np.ones((4, 3)), stop_gradient=False)
    y = w.to_global(placement=PLACE, sbp=B).to_global(sbp=S(0)) * 2.0
    seed = dense.to_tensor(np.ones((3, 3))).to_global(placement=PLACE, sbp=B).to_global(
        sbp=S(0))
    _everyone_raises(ValueError, "grad_tensor has shape [3, 3], expected [4, 3]",
                     lambda: y.backward(seed))
    y.backward(np.full((4, 3), 3.0))           # a numpy array is taken as broadcast
    assert np.array_equal(w.grad.numpy(), np.full((4, 3), 6.0)), w.grad.numpy()


def floating_point_trap_on_one_rank_is_everyones():
    """Under np.seterr(divide='raise') a zero in the last rank's shard only: every rank
    raises the FloatingPointError (the others went on, paired the next collectives wrongly
    and hung), and the job goes on; an error every rank raises (one rank) is its own."""
    n = 2 * SIZE
    x = dense.to_tensor(np.array_split(np.ones(n), SIZE)[RANK]).to_global(placement=PLACE,
                                                                          sbp=S(0))
    yv = np.ones(n)
    yv[-1] = 0.0
    y = dense.to_tensor(np.array_split(yv, SIZE)[RANK]).to_global(placement=PLACE, sbp=S(0))
    with np.errstate(divide="raise"):
        _everyone_raises(FloatingPointError, f"on rank {SIZE - 1} of the placement"
                         if SIZE > 1 else "divide by zero", lambda: x / y)
    assert dense.sum(x).numpy() == n


def backward_trap_on_one_rank_is_everyones():
    """sqrt's gradient divides by zero on the last rank's shard only (np.seterr raise): that
    rank stopped its pass while the others waited at the next collective node; now every
    rank raises there, naming the op and the rank, and the job goes on."""
    n = 2 * SIZE
    v = np.ones(n)
    v[-1] = 0.0
    leaf = dense.to_tensor(np.array_split(v, SIZE)[RANK], stop_gradient=False)
    x = leaf.to_global(placement=PLACE, sbp=S(0))
    loss = dense.sum(dense.sqrt(x))
    text = (f"on rank {SIZE - 1} of the placement, the gradient of 'sqrt': divide by zero"
            if SIZE > 1 else "divide by zero")
    with np.errstate(divide="raise"):
        _everyone_raises(FloatingPointError, text, loss.backward)
    y = leaf.to_global(placement=PLACE, sbp=S(0))
    dense.sum(y * 2.0).backward()                   # a later pass runs on every rank
    assert np.array_equal(leaf.grad.numpy(), np.full(leaf.shape, 2.0)), leaf.grad.numpy()


def format_and_op_methods_of_global_tensors():
    """f"{loss:.4f}" of a 0-d global tensor formats its value (it raised numpy's message
    naming GlobalTensor); the dense op methods run on global tensors as the functions do."""
    whole = np.arange(2.0 * SIZE)
    g = dense.to_tensor(np.array_split(whole, SIZE)[RANK]).to_global(placement=PLACE,
                                                                     sbp=S(0))
    loss = dense.mean(g)
    assert f"{loss:.3f}" == f"{whole.mean():.3f}", f"{loss:.3f}"
    assert g.max().numpy() == 2 * SIZE - 1 and g.argmax().numpy() == 2 * SIZE - 1
    assert np.array_equal(g.unsqueeze(0).numpy(), whole[None])


def partial_sums_cast_by_a_reduction_are_summed_first():
    """sum(dtype=int64) of a partial_sum COO whose addends 0.6 and 0.7 share a coordinate
    is 1, as one process gives (each addend was truncated to 0); an int32 partial_sum
    summed into int64 wraps in int32 first, as its logical value does."""
    import sparse
    mine = np.arange(2) % SIZE == RANK
    x = sparse.sparse_coo_tensor(np.array([[1, 1]])[:, mine], np.array([0.6, 0.7])[mine], [3])
    g = x.to_global(placement=PLACE, sbp=P)
    assert np.array_equal(sparse.sum(g, dtype="int64").to_dense().numpy(), [1])
    assert np.array_equal(sparse.sum(g, axis=[0], dtype="int64").to_dense().numpy(), [1])
    big = np.array([2**31 - 1, 1], np.int32)
    addend = big[RANK] if RANK < 2 else np.int32(0)
    t = dense.to_tensor(np.array([addend if SIZE > 1 else -2**31], np.int32))
    total = dense.sum(t.to_global(placement=PLACE, sbp=P))
    assert total.dtype == np.int64 and total.numpy() == -2**31, total.numpy()


def partial_sum_products_and_transposes_merge_like_one_process():
    """x @ y with x split on its columns and y on its rows is a partial_sum whose shards
    store each coordinate once, unsorted (not flagged coalesced): boxed, the addends of a
    coordinate are summed, so square(x @ y) squares the product (97 where one process
    gives 25), with one process's gradients; transpose(x + y) of partial_sum x, y too."""
    import sparse
    xi, xv = np.array([[0, 0], [0, 1]]), np.array([-1.0, -3.0])
    yi, yv = np.array([[0, 1], [4, 4]]), np.array([-4.0, 3.0])

    def local(i, v, shape, sbp, keep):
        return sparse.sparse_coo_tensor(i[:, keep], v[keep], shape, stop_gradient=False)
    k = np.arange(2)
    xs = [local(xi, xv, [1, 2], None, k == 0), local(xi, xv, [1, 2], None, k == 1)]
    one_x = sparse.sparse_coo_tensor(xi, xv, [1, 2], stop_gradient=False)
    one_y = sparse.sparse_coo_tensor(yi, yv, [2, 5], stop_gradient=False)
    dense.sum(sparse.square(sparse.matmul(one_x, one_y)).to_dense()).backward()
    if SIZE == 2:
        x = xs[RANK]                                    # x's column RANK
        x = sparse.sparse_coo_tensor(x.indices().numpy() - [[0], [RANK]],
                                     x.values().numpy(), [1, 1], stop_gradient=False)
        y = sparse.sparse_coo_tensor(yi[:, k == RANK] - [[RANK], [0]], yv[k == RANK], [1, 5],
                                     stop_gradient=False)
        z = sparse.matmul(x.to_global(placement=PLACE, sbp=S(1)),
                          y.to_global(placement=PLACE, sbp=S(0)))
        assert z.sbp == P, z.sbp
        one_z = sparse.matmul(one_x.detach(), one_y.detach())
        for name, f in [("reshape", lambda t: sparse.reshape(t, [5])),
                        ("slice", lambda t: sparse.slice(t, [1], [2], [5])),
                        ("index_select", lambda t: sparse.index_select(
                            t, np.array([4, 4, 0]), 1)),
                        ("concat", lambda t: sparse.concat([t, t], 0))]:
            got = sparse.square(f(z)).to_dense().numpy()     # the structure ops keep the
            want = sparse.square(f(one_z)).to_dense().numpy()   # mark: addends merged
            assert np.array_equal(got, want), (name, got, want)
        sq = sparse.square(z)
        assert np.array_equal(sq.to_dense().numpy(), [[0, 0, 0, 0, 25.0]]), sq.to_dense().numpy()
        dense.sum(sq.to_dense()).backward()
        assert np.allclose(x.grad.values().numpy(), one_x.grad.values().numpy()[RANK]), \
            x.grad.values().numpy()
        assert np.allclose(y.grad.values().numpy(), one_y.grad.values().numpy()[RANK])
    a = sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 2])
    b = sparse.sparse_coo_tensor([[0, 1], [1, 0]], [-2.0, 1.0], [2, 2])
    mine = dense.to_tensor(np.zeros((2, 2))).to_sparse_coo(2)
    ga = (a if RANK == 0 else mine).to_global(placement=PLACE, sbp=P)
    gb = (b if RANK == min(1, SIZE - 1) else mine).to_global(placement=PLACE, sbp=P)
    got = sparse.square(sparse.transpose(ga + gb, [1, 0])).to_dense().numpy()
    want = sparse.square(sparse.transpose(a + b, [1, 0])).to_dense().numpy()
    assert np.array_equal(got, want), (got, want)


def a_broadcast_coo_leafs_gradient_is_positional():
    """g.grad of a broadcast COO leaf has one value per entry of the leaf, in its order, as
    one process's x.grad (it stored every entry once per rank: rank 0's, then zeros)."""
    import sparse
    idx, val = np.array([[0, 1, 3, 1], [1, 0, 2, 0]]), np.array([1.0, 2.0, 3.0, -1.0])
    seed = dense.to_tensor(np.arange(12.0).reshape(4, 3))
    x = sparse.sparse_coo_tensor(idx, val, [4, 3], stop_gradient=False)
    sparse.square(x).to_dense().backward(seed)
    g = sparse.sparse_coo_tensor(idx, val, [4, 3]).to_global(placement=PLACE, sbp=B)
    g.stop_gradient = False
    sparse.square(g).to_dense().backward(seed)
    got = g.grad
    assert got.sbp == B and got.nnz() == 4, (got.sbp, got.nnz())
    local = got.to_local()
    assert np.array_equal(local.indices().numpy(), idx)
    assert np.array_equal(local.values().numpy(), x.grad.values().numpy()), \
        local.values().numpy()


def backward_errors_reach_every_rank_in_any_graph():
    """Three graphs where a backward error on one rank left the others waiting, or the next
    collective paired with a stale one: an error adding two gradients (not in a kernel);
    a global root whose graph has no collective node (then ``g.grad`` of a broadcast leaf
    is read on every rank alike); and, on 3 ranks or more, a branch on a sub-placement
    walked before a node of the whole placement.  Every rank raises, and a collective
    after it gives the right value."""
    v = dense.to_tensor(np.ones(2 * SIZE), stop_gradient=False)
    h = v.to_global(placement=PLACE, sbp=B).to_global(sbp=S(0))
    big = np.ones(2 * SIZE)
    big[-2:] = 1e308                                    # the last rank's half
    c = dense.to_tensor(np.array_split(big, SIZE)[RANK]).to_global(placement=PLACE, sbp=S(0))
    loss = dense.sum(h * c) + dense.sum(h * c)          # h's two gradients add up to inf
    with np.errstate(over="raise"):
        _everyone_raises(FloatingPointError, "overflow", loss.backward)
    g = dense.to_tensor(np.array([0.0, 1.0, 4.0])).to_global(placement=PLACE, sbp=B).detach()
    g.stop_gradient = False
    root = dense.sum(dense.sqrt(g))                     # no collective node in its graph
    with np.errstate(divide="raise" if RANK == 0 else "ignore"):
        _everyone_raises(FloatingPointError, "divide by zero", root.backward)
    assert g.grad is None or g.grad.shape == [3]        # a collective every rank joins
    if SIZE >= 3:
        _sub_placement_branch_first()


def _sub_placement_branch_first():
    x = dense.to_tensor(np.array_split(np.arange(1.0, 7.0), SIZE)[RANK], stop_gradient=False)
    ga = x.to_global(placement=PLACE, sbp=S(0))
    loss = dense.sum(ga).to_global(sbp=B).to_local()    # boxing on every rank
    if RANK in (0, 1):
        y = dense.to_tensor(np.array([0.0, 4.0]), stop_gradient=False)
        pair = dense.placement(ranks=[0, 1])
        loss = loss + dense.sum(dense.sqrt(y.to_global(placement=pair, sbp=B))).to_local()
    with np.errstate(divide="raise"):
        try:
            loss.backward()
        except FloatingPointError as exc:
            assert "on rank 0 of the placement" in str(exc), str(exc)
        else:
            raise AssertionError(f"rank {RANK}: no FloatingPointError")
    assert dense.sum(ga).numpy() == 21.0                # it paired with a stale all-reduce


def kernel_errors_of_any_class_reach_every_rank():
    """A local exception class (unpicklable) raised by one rank's kernel reaches every
    rank as RuntimeError naming it (its broadcast raised there and the others hung); a
    numpy TypeError subclass that cannot be rebuilt stays a TypeError; an error every
    rank raises is its own, unchanged."""
    import kernels.core.dispatch as d
    x = dense.to_tensor(np.ones(2 * SIZE)).to_global(placement=PLACE, sbp=S(0))
    run = d.run

    def raising(make):
        def patched(spec, ins, attrs, *a, **k):
            if spec.name == "exp" and not getattr(ins[0], "is_global", False):
                error = make()
                if error is not None:
                    raise error
            return run(spec, ins, attrs, *a, **k)
        return patched

    class LocalErr(Exception):
        pass
    cases = [(lambda: LocalErr("boom") if RANK == SIZE - 1 else None,
              RuntimeError if SIZE > 1 else LocalErr, "boom"),
             (lambda: np._core._exceptions._UFuncOutputCastingError(
                 np.add, "same_kind", np.dtype("f8"), np.dtype("i8"), 0)
              if RANK == SIZE - 1 else None, TypeError, "Cannot cast"),
             (lambda: KeyError("same on every rank"), KeyError, "same on every rank")]
    for make, kind, text in cases:
        d.run = raising(make)
        try:
            _everyone_raises(kind, text, lambda: dense.exp(x))
        finally:
            d.run = run


def placements_and_sbps_checked_alike():
    """A hand-built Sbp is checked when built (rank 0 took Sbp('s', 0) as partial_sum,
    the others failed); a seed on another placement is a ValueError (it was summed once
    a rank); a copied or pickled placement is the same placement; a non-member has no
    rank; a global operand of a sparse constructor is a TypeError (AttributeError)."""
    import copy
    import pickle
    from mpi4py import MPI
    _everyone_raises(TypeError, "Sbp: expected kind", lambda: dense.sbp.Sbp("s", 0))
    _everyone_raises(TypeError, "Sbp: expected kind", lambda: dense.sbp.Sbp("S", 1.5))
    t = dense.to_tensor(np.ones(2), stop_gradient=False)
    g = t.to_global(placement=PLACE, sbp=B)
    other = dense.to_tensor(np.ones(2)).to_global(placement=dense.placement(comm=MPI.COMM_SELF),
                                                 sbp=B)
    if SIZE > 1:
        _everyone_raises(ValueError, "grad_tensor is on", lambda: (g * 2.0).backward(other))
    assert copy.deepcopy(PLACE) is PLACE and pickle.loads(pickle.dumps(PLACE)) == PLACE
    assert np.array_equal((g + copy.deepcopy(g)).numpy(), [2.0, 2.0])
    _everyone_raises(ValueError, "COMM_NULL", lambda: dense.placement(comm=MPI.COMM_NULL))
    if SIZE > 1:                  # two groups by parity: each got the other's sum before
        w = MPI.COMM_WORLD
        half = w.Split(RANK % 2, RANK)
        inter = half.Create_intercomm(0, w, 1 - RANK % 2, tag=7)
        _everyone_raises(TypeError, "intercommunicator",
                         lambda: dense.placement(comm=inter))
        inter.Free()
        half.Free()
    if SIZE > 1:
        first = dense.placement([0])
        if RANK:
            _everyone_raises_locally(ValueError, "not one of its ranks", lambda: first.rank)
    _everyone_raises(TypeError, "values is a global tensor",
                     lambda: sparse.sparse_coo_tensor([[0, 1]], g, [2]))
    one = sparse.sparse_coo_tensor([[0]], [5.0], [1]).to_global(placement=PLACE, sbp=B)
    assert float(one) == 5.0 and int(one) == 5
    _everyone_raises(TypeError, "iteration over a 0-d tensor",
                     lambda: list(dense.to_tensor(3.0).to_global(placement=PLACE, sbp=B)))
    assert np.sum(g) == 2.0
    zero = dense.to_tensor(0.0).to_global(placement=PLACE, sbp=B)
    _everyone_raises_locally(ValueError, "read-only", lambda: np.sum(np.ones(3), out=zero))
    same = dense.placement(list(range(SIZE)), comm=MPI.COMM_WORLD)   # built on WORLD by
    assert pickle.loads(pickle.dumps(same)) == same == PLACE         # name: pickled alike
    x3 = dense.to_tensor(np.array([-1.0, 0.5, 2.0])).to_global(placement=PLACE, sbp=B)
    one = dense.to_tensor(np.array([1.0])).to_global(placement=PLACE, sbp=B)
    assert np.array_equal(dense.clip(x3, min=0.0, max=one).numpy(), [0.0, 0.5, 1.0])
    assert np.array_equal(dense.full_like(x3, one).numpy(), [1.0, 1.0, 1.0])
    csr = dense.to_tensor(np.eye(2)).to_sparse_csr()
    _everyone_raises(TypeError, "add: the local argument 'x' is a sparse_csr tensor",
                     lambda: csr + g)


def _everyone_raises_locally(kind, text, fn):
    try:
        fn()
    except kind as exc:
        assert text in str(exc), str(exc)
    else:
        raise AssertionError(f"rank {RANK}: no {kind.__name__}")


CHECKS = [partial_sum_to_sparse_grad, index_error_on_one_rank_is_everyones,
          to_global_arguments_that_differ_or_fail_on_one_rank,
          backward_seed_of_another_logical_shape, floating_point_trap_on_one_rank_is_everyones,
          kernel_errors_of_any_class_reach_every_rank, placements_and_sbps_checked_alike,
          backward_trap_on_one_rank_is_everyones, format_and_op_methods_of_global_tensors,
          partial_sums_cast_by_a_reduction_are_summed_first,
          partial_sum_products_and_transposes_merge_like_one_process,
          a_broadcast_coo_leafs_gradient_is_positional,
          backward_errors_reach_every_rank_in_any_graph]
for check in CHECKS:
    check()
print(f"rank {RANK}: {len(CHECKS)} passed, 0 failed", flush=True)
