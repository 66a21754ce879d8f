"""Environment knobs (``PHISPARSE_*``), parsed and checked once with a clear message."""
import numbers
import os
import re

import numpy as np

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_CACHE = {}


def env_count(name, default, minimum=0, units=False, auto=False):
    """The integer value of environment variable ``name``, or ``default()`` if unset.

    Each distinct value is parsed once.  ``units`` also accepts a K/M/G/T suffix (powers
    of 1024, as in ``4G``); ``auto`` accepts ``auto`` for the default.

    Raises
    ------
    ValueError
        Naming the variable, its value and what it accepts, at every use while
        the value stays invalid.

    Examples
    --------
    >>> os.environ["PHISPARSE_EXAMPLE"] = "4G"
    >>> env_count("PHISPARSE_EXAMPLE", lambda: 0, units=True)
    4294967296
    """
    text = os.environ.get(name, "").strip()
    key = (name, text)
    if key not in _CACHE:
        _CACHE[key] = _parse(name, text, default, minimum, units, auto)
    value = _CACHE[key]
    if isinstance(value, ValueError):
        raise value
    return value


def _parse(name, text, default, minimum, units, auto):
    if not text or (auto and text.lower() == "auto"):
        return default()
    m = re.fullmatch(r"(\d+)\s*([KMGT]?)(?:I?B)?" if units else r"(\d+)()", text.upper())
    if m is None or int(m.group(1)) * _UNITS[m.group(2)] < minimum:
        accepts = f"a whole number >= {minimum}" + (" with an optional K, M, G or T suffix"
                                                    if units else "")
        return ValueError(f"{name}={text!r} is not valid; expected {accepts}"
                          + (" or 'auto'" if auto else ""))
    return int(m.group(1)) * _UNITS[m.group(2)]


def checked_count(op, arg, value, minimum):
    """``value`` as an int if it is an integer (not a bool) of at least ``minimum``:
    TypeError or ValueError naming ``op`` and ``arg`` otherwise (a setter's argument).

    Examples
    --------
    >>> checked_count("set_num_threads", "n", 4, 1)
    4
    >>> checked_count("set_num_threads", "n", "abc", 1)
    Traceback (most recent call last):
    ...
    TypeError: set_num_threads: n must be an int or None, got 'abc' of type str
    """
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {arg} must be an int or None, got {value!r} of type "
                        f"{type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{op}: {arg} must be at least {minimum}, got {value}")
    return int(value)


def previous_value(read, given):
    """``read()`` (a knob's value in force, read from its variable at first), for a setter
    to return; None where the variable holds a bad value and ``given`` (not None) is
    about to override it: only a setter that rereads the variable raises its error."""
    try:
        return read()
    except ValueError:
        if given is None:
            raise
        return None
