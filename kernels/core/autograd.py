"""Reverse-mode autograd over grad nodes generated from the backward YAML.

A forward op that sees an input needing a gradient records a :class:`GradNode`
holding the op spec, its tensor inputs, what the backward needs (tensors, or
only their metadata for ``no_need_buffer``) and its attributes.  The node's
``spec.backward_fn`` is generated code that calls the backward op.
"""
import functools
import inspect
import sys
import threading
import types

import numpy as np

from .xp import xp_of

_state = threading.local()
#: Serialises leaf accumulation: backward passes on many threads may reach one leaf.
_LEAF_LOCK = threading.Lock()
#: Serialises taking and giving back a graph's nodes (:func:`_lease`, :func:`_release`).
_GRAPH_LOCK = threading.Lock()


def grad_enabled():
    """True unless inside :func:`no_grad`."""
    return getattr(_state, "enabled", True)


class no_grad:
    """Context manager and decorator: ops inside record nothing for autograd.

    As ``torch.no_grad``, one object may be entered again, nested in itself
    and used on many threads: grad mode is per thread, and each ``with``
    restores the mode its own entry found.  ``@no_grad()`` and ``@no_grad``
    decorate a function.

    Examples
    --------
    >>> quiet = no_grad()
    >>> with quiet:
    ...     with quiet:
    ...         grad_enabled()
    False
    >>> with quiet:
    ...     pass
    >>> grad_enabled()
    True
    """

    __slots__ = ()

    def __new__(cls, func=None):
        if func is None:
            return object.__new__(cls)
        if not callable(func):
            raise TypeError(f"no_grad: takes no argument, or a function to decorate; got "
                            f"{type(func).__name__}")
        return object.__new__(cls)(func)

    def __enter__(self) -> None:
        stack = getattr(_state, "stack", None)
        if stack is None:
            stack = _state.stack = []
        stack.append(grad_enabled())
        _state.enabled = False

    def __exit__(self, *exc) -> bool:
        stack = getattr(_state, "stack", None)
        if not stack:
            raise RuntimeError("no_grad: __exit__ without a matching __enter__ on this thread")
        _state.enabled = stack.pop()
        return False

    def __call__(self, func):
        """Decorate ``func``: each call runs inside this context; for a generator
        function, each step of the generator does (as ``torch.no_grad``), and so
        does each step of a coroutine (``async def``) or an async generator, so
        that tasks that run between its steps keep their own mode."""
        if not callable(func):
            raise TypeError(f"no_grad: can decorate only a function, got {type(func).__name__}")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def steps(*args, **kwargs):
                return (yield from _stepped(func(*args, **kwargs)))
            return steps
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def awaited(*args, **kwargs):
                return await _stepped_awaitable(func(*args, **kwargs).__await__())
            return awaited
        if inspect.isasyncgenfunction(func):
            return _async_steps(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


def _stepped(gen):
    """Run generator ``gen`` one step at a time with grad mode off, restoring the caller's
    mode after each step (not through the shared stack: a step may leave a ``with
    no_grad()`` of the generator's own open across a yield)."""
    step, arg = gen.send, None
    while True:
        try:
            out = _off(step, arg)
        except StopIteration as stop:
            return stop.value
        try:
            step, arg = gen.send, (yield out)
        except GeneratorExit:
            _off(lambda _: gen.close(), None)
            raise
        except BaseException as exc:        # noqa: BLE001 (thrown into gen, as torch does)
            step, arg = gen.throw, exc


@types.coroutine
def _stepped_awaitable(coro):
    """Await ``coro`` (a coroutine's ``__await__()`` iterator, or an async generator's
    ``asend``/``athrow``/``aclose`` awaitable) one step at a time with grad mode off, as
    :func:`_stepped`."""
    return (yield from _stepped(coro))


def _async_steps(func):
    """Async generator function ``func`` with each of its steps run with grad mode off."""
    @functools.wraps(func)
    async def steps(*args, **kwargs):
        agen = func(*args, **kwargs)
        step = _unhooked_first_step(agen)
        while True:
            try:
                item = await _stepped_awaitable(step)
            except StopAsyncIteration:
                return
            try:
                sent = yield item
            except GeneratorExit:
                await _stepped_awaitable(agen.aclose())
                raise
            except BaseException as exc:    # noqa: BLE001 (thrown into agen, as above)
                step = agen.athrow(exc)
            else:
                step = agen.asend(sent)
    return steps


def _unhooked_first_step(agen):
    """``agen.asend(None)`` with the event loop's async-generator hooks off: the loop then
    does not finalize ``agen`` itself (at shutdown it would close it a second time while
    the wrapper's own ``aclose`` is still running); the wrapper, which the loop does
    know, owns its lifetime."""
    hooks = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(firstiter=None, finalizer=None)
    try:
        return agen.asend(None)
    finally:
        sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=hooks.finalizer)


def _off(fn, arg):
    """``fn(arg)`` with grad mode off; the mode found is restored after."""
    found = grad_enabled()
    _state.enabled = False
    try:
        return fn(arg)
    finally:
        _state.enabled = found


class GradNode:
    """One recorded op application."""

    __slots__ = ("spec", "inputs", "tracked", "saved", "attrs", "freed", "users")

    def __init__(self, spec, inputs, saved, attrs, tracked=None):
        self.spec = spec
        self.inputs = inputs
        #: Which inputs needed a gradient when the op ran (a tuple for a ``Tensor[]``
        #: input): the backward follows these, whatever stop_gradient says later.
        self.tracked = tracked if tracked is not None else tuple(
            [tuple(map(_tracked, t)) if type(t) is list else _tracked(t) for t in inputs])
        self.saved = saved
        self.attrs = attrs
        self.freed = False
        #: Backward passes running through the node: n > 0 that keep the graph, -1 one
        #: that frees it (it runs alone); see :func:`_lease`.
        self.users = 0

    def apply(self, out_grads):
        """Run the generated backward: return {input name: gradient or None}."""
        if self.freed:
            raise self.freed_error()
        return self.spec.backward_fn(self, *out_grads)

    def freed_error(self):
        return RuntimeError(
            f"backward: the graph through '{self.spec.name}' was freed by an earlier "
            "backward(); pass retain_graph=True to the first backward() to keep it")

    def grad_mask(self, positions):
        """For the tensor inputs at ``positions``: does each need a gradient?

        As fixed when the op ran, as :func:`_route` decides where gradients go;
        the generated backward of an ``optional_grads`` op passes it on.
        """
        tracked = self.tracked
        return tuple(tracked[i] is True for i in positions)

    def free(self):
        """Drop what the node holds (saved tensors, attributes, edges to its inputs).

        A held output (a logged loss) then keeps only this empty node alive,
        not the graph's tensors.
        """
        self.saved = None
        self.attrs = None
        self.inputs = self.tracked = ()
        self.freed = True


def _tracked(t):
    return t is not None and hasattr(t, "_grad_fn") and not t.stop_gradient


def _collect(root_node):
    """Nodes reachable from ``root_node`` and how many edges point at each."""
    deps, stack, seen = {root_node: 0}, [root_node], {root_node}
    while stack:
        node = stack.pop()
        for t, tracked in _flat_tracked(node):
            parent = t._grad_fn if tracked else None
            if parent is None:
                continue
            deps[parent] = deps.get(parent, 0) + 1
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return deps


def accumulate_leaf(t, g):
    """Add ``g`` to leaf ``t``'s ``.grad`` atomically (threads may share leaves)."""
    with _LEAF_LOCK:
        old = t._grad
        if old is not None and is_zero_addend(g):
            return
        object.__setattr__(t, "_grad", g if old is None or is_zero_addend(old)
                           else old._add_grad(g))


def _flat_tracked(node):
    """(input tensor, whether it needed a gradient at forward time), ``Tensor[]`` lists
    spliced in."""
    for t, tracked in zip(node.inputs, node.tracked):
        if isinstance(t, list):
            yield from zip(t, tracked)
        else:
            yield t, tracked


def _pairs(node, in_grads):
    """(input tensor, its gradient or None, whether it needed one at forward time), a
    ``Tensor[]`` input element by element."""
    for arg, t, tracked in zip(node.spec.tensor_args, node.inputs, node.tracked):
        g = in_grads.get(arg.name)
        if isinstance(t, list):
            yield from zip(t, g if g is not None else [None] * len(t), tracked)
        else:
            yield t, g, tracked


def _accumulate(buf, key, grad):
    old = buf.get(key)
    if old is None or is_zero_addend(old):
        buf[key] = grad
    elif not is_zero_addend(grad):
        buf[key] = old._add_grad(grad)


#: The attribute marking a gradient known to be all zeros: a broadcast tensor's
#: gradient is read as partial_sum, rank 0 holding it and the other ranks zero
#: addends (:mod:`kernels.core.dist`).  A node whose output gradients are all
#: such addends gives zero addends to its inputs without running its backward:
#: a backward is linear in its output gradient, so they are exactly zero, where
#: running it would make 0 * inf = nan (the derivative of sqrt at 0) that the
#: all-reduce then spreads to every rank.
ZERO_ADDEND = "_zero_addend"


def is_zero_addend(t):
    return getattr(t, ZERO_ADDEND, False)


def mark_zero_addend(t):
    """Mark tensor ``t`` (all zeros) as a zero addend; returns it."""
    object.__setattr__(t, ZERO_ADDEND, True)
    return t


def _skips(node, outs):
    """True if ``node``'s output gradients are all zero addends (or None) and its backward
    runs no collective (boxing's does: every rank must take part)."""
    given = False
    for g in outs:                      # per node of every backward: kept to a plain loop
        if g is not None:
            if not g._zero_addend:
                return False
            given = True
    spec = node.spec
    return (given and not node.freed and not spec.collective
            and _gradient_inputs(spec.namespace, spec.backward) is not None)


#: ``(namespace, name) -> OpSpec`` of the op registry, set by :mod:`kernels.core.dispatch`
#: (which imports this module) when it loads.
_lookup_op = [None]


def set_op_lookup(get_op):
    """Give autograd the op registry's lookup (``get_op(namespace, name)``)."""
    _lookup_op[0] = get_op


@functools.lru_cache(maxsize=None)
def _gradient_inputs(namespace, backward):
    """The inputs an op's backward op (YAML) gives gradients to; None for other nodes."""
    if backward is None:
        return None
    grad_spec = _lookup_op[0](namespace, backward)
    return frozenset(o.removesuffix("_grad") for o in grad_spec.outputs)


def _zero_grads(node):
    """Zero addends for each input of ``node`` that needs a gradient and has one."""
    grads, has = {}, _gradient_inputs(node.spec.namespace, node.spec.backward)
    for arg, t, tracked in zip(node.spec.tensor_args, node.inputs, node.tracked):
        if arg.name not in has:
            continue
        if isinstance(t, list):
            grads[arg.name] = [zero_addend_like(e) if f else None for e, f in zip(t, tracked)]
        elif tracked:
            grads[arg.name] = zero_addend_like(t)
    return grads


def zero_addend_like(t):
    """A read-only all-zero gradient of tensor ``t``'s shape, dtype and layout, marked."""
    data = t._data()
    if t.layout == "dense":
        xp = xp_of(data)
        return mark_zero_addend(type(t)._from_kernel(
            xp.broadcast_to(xp.zeros((), data.dtype), data.shape), t.meta))
    xp = xp_of(data.values)
    zeros = xp.broadcast_to(xp.zeros((), data.values.dtype), data.values.shape)
    return mark_zero_addend(t._with_values(zeros))


def run_backward(root, grad_tensor=None, retain_graph=False, finish=None):
    """Propagate gradients from ``root`` to every leaf that needs them.

    ``finish(failure, failed_op)`` (a global tensor's backward, a collective): called on
    every rank once the walk is over with this rank's error (raised by the backward of op
    ``failed_op``) or None, it returns the error every rank of the placement raises (or
    None), before the graph is freed or kept.
    """
    if root.stop_gradient:
        raise RuntimeError("backward: the tensor has stop_gradient=True, so nothing "
                           "upstream needs a gradient; set stop_gradient=False on an input")
    if retain_graph is None:                # torch's default, and Paddle's bindings take it
        retain_graph = False
    if not isinstance(retain_graph, (bool, np.bool_)):
        raise TypeError(f"backward: retain_graph must be a bool or None, got {retain_graph!r} "
                        f"of type {type(retain_graph).__name__}")
    with no_grad():
        seed = _seed(root, grad_tensor)
        if grad_tensor is not None and seed is not grad_tensor and is_zero_addend(grad_tensor):
            mark_zero_addend(seed)                  # zeros read at the root: zeros
        if root._grad_fn is None:
            root._accumulate_leaf(seed)
            return
        deps = _collect(root._grad_fn)
        _lease(deps, retain_graph)
        done = False
        try:
            shared = finish is not None or (
                _agreement[0] is not None and any(n.spec.collective for n in deps))
            failure, failed_op = _propagate(root, seed, deps, shared)
            if finish is not None:
                failure = finish(failure, failed_op)
            if failure is not None:
                raise failure
            done = True
        finally:
            _release(deps, retain_graph, done)


def _seed(root, grad_tensor):
    """The root's gradient; an argument no tensor can be made of raises naming backward."""
    try:
        return root._root_grad(grad_tensor)
    except (TypeError, ValueError) as exc:
        if not str(exc).startswith("to_tensor:"):
            raise
        raise type(exc)(f"backward: grad_tensor of type {type(grad_tensor).__name__} cannot be "
                        f"made a tensor ({exc})") from None


#: ``agree(node, failure, failed_op)``, set by :mod:`kernels.core.dist`: run on every rank
#: before a collective node's backward, it returns the error that every rank of the
#: node's placement now holds (this rank's ``failure``, raised by the backward of op
#: ``failed_op``, or one another rank shared), or None where no rank has one.
_agreement = [None]


def set_failure_agreement(agree):
    """Give autograd the collective check of :data:`_agreement`."""
    _agreement[0] = agree


def _propagate(root, seed, deps, shared):
    """Run the nodes in dependency order; return (the error of a graph with collective
    nodes (global tensors) or of a global root (``shared``), or None; the op whose backward
    raised it on this rank).

    There a backward kernel (or the adding of gradients) that raises on one rank stops
    this rank's local work but not its walk: every rank meets every collective node in
    the same order, and each one's agreement tells the ranks of its placement who
    failed, after which they skip the work too.  The error is raised once the walk is
    over (see ``finish`` of :func:`run_backward`), so that no rank waits at a collective
    the others left.  In a graph without collective nodes errors are raised at once.
    """
    grads = {(root._grad_fn, root._out_index): seed}
    ready = [root._grad_fn]
    failure = failed_op = None
    while ready:
        node = ready.pop()
        n_out = len(node.spec.outputs)
        outs = [grads.pop((node, i), None) for i in range(n_out)]
        if shared and node.spec.collective and _agreement[0] is not None:
            held = _agreement[0](node, failure, failed_op)
            if held is not failure:
                failure, failed_op = held, None
        in_grads = {}
        if failure is None:
            try:
                in_grads = _zero_grads(node) if _skips(node, outs) else node.apply(outs)
            except Exception as exc:        # noqa: BLE001 (returned, then raised everywhere)
                if not shared:
                    raise
                failure, failed_op = exc, node.spec.name
        error = _route(node, in_grads, grads, deps, ready, catch=shared)
        if error is not None and failure is None:
            failure, failed_op = error, node.spec.name
    return failure, failed_op


def _lease(nodes, retain_graph):
    """Take the graph's nodes for one backward pass, before any gradient is computed.

    A node freed by an earlier backward, or being freed by one on another thread,
    raises here, so no ``.grad`` has been added to yet; a pass that frees the graph
    (``retain_graph=False``) takes its nodes alone, and one on another thread
    running through them at the time makes it raise instead.
    """
    with _GRAPH_LOCK:
        for node in nodes:
            if node.freed:
                raise node.freed_error()
            if node.users < 0 or (node.users and not retain_graph):
                raise RuntimeError(
                    f"backward: the graph through '{node.spec.name}' is in use by a "
                    "backward() on another thread that "
                    f"{'frees' if node.users < 0 else 'keeps'} it; only passes with "
                    "retain_graph=True may run through one graph at once")
        for node in nodes:
            node.users = node.users + 1 if retain_graph else -1


def _release(nodes, retain_graph, done):
    """Give the nodes back: a pass that kept the graph leaves them as they were; one that
    freed it frees them, or, if it failed, leaves them unfreed (what it had already added
    to leaves' ``.grad`` stays)."""
    with _GRAPH_LOCK:
        for node in nodes:
            if retain_graph:
                node.users -= 1
            elif done:
                node.free()
            else:
                node.users = 0


def _route(node, in_grads, grads, deps, ready, catch=False):
    """Send each input's gradient to its producer node or accumulate it on the leaf.

    With ``catch``, an error adding gradients is returned, and the walk's bookkeeping
    (which nodes are ready) is done for every input all the same."""
    failure = None
    for t, g, tracked in _pairs(node, in_grads):
        if not tracked:
            continue
        parent = t._grad_fn
        if g is not None and failure is None:
            try:
                if parent is None:
                    t._accumulate_leaf(g)
                else:
                    _accumulate(grads, (parent, t._out_index), g)
            except Exception as exc:        # noqa: BLE001 (returned to the walk)
                if not catch:
                    raise
                failure = exc
        if parent is not None:
            deps[parent] -= 1
            if deps[parent] == 0:
                ready.append(parent)
    return failure
