"""The autograd engine: accumulation, diamonds, freeing, no_grad, leaves."""
import numpy as np
import pytest

import dense


def _leaf(shape=(2, 3), seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return a, dense.to_tensor(a, stop_gradient=False)


def test_default_grad_is_ones_and_leaf_gets_it():
    a, x = _leaf()
    dense.sum(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(a))


def test_repeated_use_of_one_input_accumulates():
    _, x = _leaf()
    y = dense.sum(x, axis=[0])            # uses x
    z = dense.sum(dense.reshape(x, [6]))  # uses x again
    dense.sum(dense.reshape(y, [3])).backward()
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_diamond_sums_both_paths():
    _, x = _leaf()
    a = dense.reshape(x, [6])
    b = dense.reshape(a, [3, 2])
    c = dense.reshape(a, [2, 3])
    # loss = sum(b) + sum(c) via one graph: reshape both to 1-D and sum each
    s1, s2 = dense.sum(b), dense.sum(c)
    s1.backward(retain_graph=True)
    s2.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_diamond_single_backward_with_weighted_grad():
    a_np, x = _leaf((4,))
    a = dense.reshape(x, [2, 2])
    b = dense.reshape(a, [4])        # path 1
    c = dense.sum(a, axis=[1])       # path 2 (shape [2])
    out = dense.sum(dense.reshape(b, [2, 2]), axis=[0])  # [2]
    w = np.array([3.0, 5.0])
    out.backward(dense.to_tensor(w), retain_graph=True)
    c.backward(dense.to_tensor(np.array([7.0, 11.0])))
    expect = np.array([3.0, 5.0, 3.0, 5.0]) + np.array([7.0, 7.0, 11.0, 11.0])
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_graph_is_freed_unless_retained():
    _, x = _leaf()
    s = dense.sum(dense.reshape(x, [6]))
    s.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        s.backward()


def test_retain_graph_allows_second_backward():
    _, x = _leaf()
    s = dense.sum(x)
    s.backward(retain_graph=True)
    s.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_non_leaf_grad_stays_none():
    _, x = _leaf()
    y = dense.reshape(x, [6])
    dense.sum(y).backward()
    assert y.grad is None and not y.is_leaf and x.is_leaf


def test_no_grad_records_nothing():
    _, x = _leaf()
    with dense.no_grad():
        y = dense.sum(x)
    assert y.stop_gradient and y.is_leaf
    with pytest.raises(RuntimeError, match="stop_gradient"):
        y.backward()


def test_stop_gradient_inputs_get_nothing():
    x = dense.to_tensor(np.ones((2, 2)))
    y = dense.sum(x)
    assert y.stop_gradient
    assert x.grad is None


def test_backward_on_leaf_itself():
    _, x = _leaf()
    x.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))


def test_grad_tensor_shape_mismatch_raises():
    _, x = _leaf()
    y = dense.reshape(x, [6])
    with pytest.raises(ValueError, match="shape"):
        y.backward(dense.to_tensor(np.ones(5)))


def test_detach_cuts_the_graph():
    _, x = _leaf()
    d = dense.reshape(x, [6]).detach()
    assert d.stop_gradient and d.is_leaf


def test_backward_follows_the_stop_gradient_flags_of_forward_time():
    """A backward reads only what was fixed when the ops ran: an input untracked then gets
    no gradient though it is tracked now (torch leaves its grad None), and one tracked
    then still gets its gradient, as do the leaves behind an intermediate switched off."""
    x = dense.to_tensor(np.array([1.0, 2.0]))
    w = dense.to_tensor(np.array([3.0, 4.0]), stop_gradient=False)
    y = dense.sum(x * w)
    x.stop_gradient = False
    y.backward()
    assert x.grad is None
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])
    x = dense.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    h = x * 2.0
    z = dense.sum(h ** 2)
    x.stop_gradient = True
    h.stop_gradient = True
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 16.0])       # d/dx (2x)^2 = 8x


def test_concat_follows_forward_time_flags_element_by_element():
    a = dense.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    b = dense.to_tensor(np.array([3.0]))
    y = dense.sum(dense.concat([a, b]) * dense.to_tensor(np.array([1.0, 2.0, 3.0])))
    b.stop_gradient = False
    y.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 2.0])
    assert b.grad is None


# ---------------------------------------------------------------- one graph, many backward()s
def test_backward_on_one_graph_from_threads_runs_once():
    """Threads calling backward() on one graph: exactly one runs (x.grad = 111 exactly),
    the others raise RuntimeError before adding anything (the nodes are taken under a
    lock before any gradient is computed; before, 68% of trials summed 211, 311, ...)."""
    import sys
    import threading
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(40):
            x = dense.to_tensor(np.ones(2), stop_gradient=False)
            y = dense.sum(x * 1.0) + dense.sum(x * 10.0) + dense.sum(x * 100.0)
            errors = []

            def run():
                try:
                    y.backward()
                except RuntimeError as exc:
                    errors.append(exc)
            threads = [threading.Thread(target=run) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            np.testing.assert_array_equal(x.grad.numpy(), [111.0, 111.0])
            assert len(errors) == 2
    finally:
        sys.setswitchinterval(interval)


def test_a_freed_graph_raises_before_any_gradient_is_added():
    x = dense.to_tensor([1.0, 1.0], stop_gradient=False)
    h = x * 2.0
    dense.sum(h).backward()
    y = dense.sum(h) + dense.sum(x * 3.0)      # one branch through the freed multiply
    with pytest.raises(RuntimeError, match="freed by an earlier backward"):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])    # nothing from x * 3


def test_retain_graph_and_grad_tensor_are_checked_by_name():
    x = dense.to_tensor([1.0, 2.0], stop_gradient=False)
    y = dense.sum(x * 2.0)
    for bad in ("yes", 1, [0]):
        with pytest.raises(TypeError, match="^backward: retain_graph must be a bool"):
            y.backward(retain_graph=bad)
    with pytest.raises(TypeError, match="^backward: grad_tensor of type str cannot be made"):
        (x * 2.0).backward("abc")
    y.backward(retain_graph=np.True_)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    y.backward(retain_graph=None)           # torch's default, taken as False
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])
    with pytest.raises(RuntimeError, match="freed by an earlier backward"):
        y.backward()


def test_no_grad_decorating_a_generator_covers_each_step_and_only_those():
    """As torch.no_grad: the body runs without recording at every step, sends, throws
    and the return value pass through, and the caller keeps its mode between steps."""
    @dense.no_grad
    def steps():
        x = dense.to_tensor([1.0], stop_gradient=False)
        got = yield (x * 2).stop_gradient
        try:
            yield got, (x * 3).stop_gradient
        except ValueError as exc:
            yield str(exc), (x * 4).stop_gradient
        return "done"

    gen = steps()
    assert next(gen) is True
    assert (dense.to_tensor([1.0], stop_gradient=False) * 2).stop_gradient is False
    assert gen.send(5) == (5, True)
    assert gen.throw(ValueError("boom")) == ("boom", True)
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "done"
    closed = steps()
    next(closed)
    closed.close()
    assert dense.no_grad()(steps).__name__ == "steps"


def test_no_grad_decorating_a_coroutine_covers_its_steps_not_the_tasks_between():
    """An ``async def`` runs with grad off at each step; another task that runs while it
    awaits keeps grad on (mode is per thread, so a plain ``with`` around the await
    would leak into it)."""
    import asyncio
    x = dense.to_tensor([1.0], stop_gradient=False)

    @dense.no_grad()
    async def quiet():
        await asyncio.sleep(0.01)
        return x * 2

    async def loud():
        await asyncio.sleep(0.002)
        return x * 3

    async def both():
        return await asyncio.gather(quiet(), loud())

    a, b = asyncio.run(both())
    assert a.stop_gradient is True and b.stop_gradient is False
    assert (x * 1).stop_gradient is False


def test_no_grad_decorating_an_async_generator_covers_each_step():
    import asyncio
    x = dense.to_tensor([1.0], stop_gradient=False)

    @dense.no_grad
    async def steps():
        got = yield (x * 2).stop_gradient
        try:
            yield got, (x * 3).stop_gradient
        except ValueError as exc:
            yield str(exc), (x * 4).stop_gradient

    async def drive():
        gen = steps()
        out = [await gen.asend(None)]
        out.append((x * 5).stop_gradient)              # the caller's mode between steps
        out.append(await gen.asend(7))
        out.append(await gen.athrow(ValueError("boom")))
        with pytest.raises(StopAsyncIteration):
            await gen.asend(None)
        closed = steps()
        await closed.asend(None)
        await closed.aclose()
        return out

    assert asyncio.run(drive()) == [True, False, (7, True), ("boom", True)]


def test_a_decorated_async_generator_left_early_closes_once():
    """Leaving ``async for`` early: the event loop closes the wrapper at shutdown, which
    closes the generator once; its awaiting ``finally`` runs as undecorated, and the
    loop reports no error (it used to close the inner generator a second time)."""
    import asyncio
    seen = []

    async def body():
        try:
            for i in range(3):
                yield i
        finally:
            seen.append("closing")
            await asyncio.sleep(0)

    async def leave_early(gen_fn, errors):
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: errors.append(ctx))
        async for _ in gen_fn():
            break

    for gen_fn in (body, dense.no_grad(body)):
        seen.clear()
        errors = []
        asyncio.run(leave_early(gen_fn, errors))   # its shutdown closes what was left open
        assert errors == [] and seen[:1] == ["closing"], (gen_fn, errors, seen)


def test_backward_twice_through_a_dense_to_sparse_conversion_says_the_graph_is_freed():
    import sparse  # noqa: F401  (registers the sparse layouts)
    x = dense.to_tensor(np.array([0.0, 2.0]), stop_gradient=False)
    s = x.to_sparse_coo(1)
    s.backward(dense.to_tensor(np.ones(2)))
    with pytest.raises(RuntimeError, match="freed"):
        s.backward(dense.to_tensor(np.ones(2)))


def test_a_generator_left_inside_its_own_no_grad_restores_the_callers_mode():
    @dense.no_grad
    def steps():
        with dense.no_grad():
            yield 1
            yield 2

    gen = steps()
    next(gen)
    assert (dense.to_tensor([1.0], stop_gradient=False) * 2).stop_gradient is False
    next(gen)
    assert (dense.to_tensor([1.0], stop_gradient=False) * 2).stop_gradient is False
    with pytest.raises(StopIteration):
        next(gen)
    assert (dense.to_tensor([1.0], stop_gradient=False) * 2).stop_gradient is False
