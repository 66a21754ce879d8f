"""Environment knobs (``PHISPARSE_*``), parsed and checked once with a clear message."""
import os
import re

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
