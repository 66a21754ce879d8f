"""The op database: each module here lists OpInfo entries for one op family.

The generic suites (test_opdb_*.py) check every entry: forward against its
numpy reference for every dtype, infer-meta against the kernel output's
metadata, and a float64 finite-difference gradient.  Add an op by adding a
module with an ``OPS`` list; hand-write tests only for errors and corners.
"""
import importlib
import pkgutil
import sys
from dataclasses import dataclass, field

import numpy as np
import pytest

from kernels.core.dtypes import ALL


@dataclass
class Sample:
    """Inputs of one call: tensor args as numpy arrays, then attributes."""

    arrays: tuple
    attrs: dict = field(default_factory=dict)
    grad: bool = True           # include in the gradient check
    name: str = ""

    def __repr__(self):
        shapes = [a.shape for a in self.arrays]
        return f"Sample({self.name or shapes} {self.attrs})"


@dataclass
class OpInfo:
    """One op: how to call it, its numpy reference and its samples.

    ``samples(dtype, rng)`` returns Samples; ``ref(*arrays, **attrs)`` is the
    independent numpy reference; ``grad_args`` are the positions of tensor
    args that receive a gradient.
    """

    name: str
    op: object
    ref: object
    samples: object
    dtypes: tuple = ALL
    grad_args: tuple = (0,)

    def __repr__(self):
        return self.name


def ops_of(package):
    """Every entry of the ``OPS`` lists of the modules of an op database ``package``."""
    ops = []
    for mod in pkgutil.iter_modules(package.__path__):
        ops.extend(importlib.import_module(f"{package.__name__}.{mod.name}").OPS)
    return ops


def all_ops():
    """Every OpInfo from every module of this package."""
    return ops_of(sys.modules[__name__])


def make(shape, dtype, rng, low=-5, high=5):
    """A random array of ``shape`` and ``dtype`` (values in [low, high))."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else low
        return rng.integers(lo, high, size=shape).astype(dtype)
    out = rng.uniform(low, high, size=shape)
    if dtype.kind == "c":
        out = out + 1j * rng.uniform(low, high, size=shape)
    return out.astype(dtype)


def grad_seed(out, rng):
    """A random gradient seed for tensor ``out``: complex where ``out`` is (a real output
    takes a real seed)."""
    w = rng.standard_normal(out.shape)
    return w + 1j * rng.standard_normal(out.shape) if out.dtype.kind == "c" else w


def grad_cases(ops):
    """(op, dtype) pairs whose gradients are checked: float64 and complex128 where the
    op takes them and has inputs with gradients."""
    return [pytest.param(i, d, id=f"{i!r}-{d}") for i in ops for d in
            (np.dtype(np.float64), np.dtype(np.complex128)) if i.grad_args and d in i.dtypes]


def complex_vjp(f, arrays, k, w, eps=1e-6):
    """``dL/dRe + 1j dL/dIm`` with respect to ``arrays[k]`` of ``L = Re(sum(conj(w) *
    f(*arrays)))`` by central differences: the gradient a backward seeded with ``w``
    gives, ``g * conj(f'(z))`` for a holomorphic f (torch's and Paddle's convention)."""
    arrays = list(arrays)
    x = np.asarray(arrays[k]).astype(np.complex128)

    def loss(value):
        return np.real(np.sum(np.conj(w) * np.asarray(f(*arrays[:k], value, *arrays[k + 1:]))))
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for step in (1, 1j):
            plus, minus = x.copy(), x.copy()
            plus[i] += step * eps
            minus[i] -= step * eps
            grad[i] += step * (loss(plus) - loss(minus)) / (2 * eps)
    return grad


def numeric_vjp(f, arrays, k, w, eps=1e-6):
    """Central finite differences of ``sum(f(*arrays) * w)`` with respect to ``arrays[k]``."""
    arrays = list(arrays)
    x = arrays[k]
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        vals = []
        for sign in (1, -1):
            shifted = x.copy()
            shifted[i] += sign * eps
            vals.append(np.sum(np.asarray(f(*arrays[:k], shifted, *arrays[k + 1:])) * w))
        grad[i] = (vals[0] - vals[1]) / (2 * eps)
    return grad
