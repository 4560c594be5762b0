"""Argument validation at the door, with one form of message for the whole library:

    "<Callable>: <argument> must be <expected>, got <what arrived>"

Every public constructor and entry point checks its arguments with these before
it does any work, so a bad argument never surfaces as a ZeroDivisionError or an
IndexError from deep inside NumPy. They run once per call on Python numbers,
never per element, and never read a device array.
"""
from __future__ import annotations

import math
import numbers
import re


def fail(where: str, name: str, expected: str, got, error=ValueError):
    """Raise `error` in the library's one form (repr of what arrived, shortened)."""
    shown = repr(got)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise error(f"{where}: {name} must be {expected}, got {shown}")


def printable(text: str, newlines: bool = False) -> str:
    """text with every character that is not printable (a control character, as in a
    terminal's escape sequences; a lone surrogate, which UTF-8 cannot write; a newline
    unless `newlines`) written as Python escapes it: safe to print, draw or quote."""
    return "".join(ch if ch.isprintable() or (newlines and ch == "\n") else repr(ch)[1:-1]
                   for ch in text)


def is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def integer(where, name, value, low=1):
    """An int >= low (bool is refused: True is not a size)."""
    if not is_int(value):
        fail(where, name, f"an int >= {low}", value, TypeError)
    if value < low:
        fail(where, name, f"an int >= {low}", value)
    return int(value)


def conv_arguments(where, in_channels, out_channels, kernel_size, stride, padding):
    """The checked sizes of a convolution (Conv2d, DACConv2d)."""
    return (integer(where, "in_channels", in_channels),
            integer(where, "out_channels", out_channels),
            integer(where, "kernel_size", kernel_size),
            integer(where, "stride", stride),
            integer(where, "padding", padding, low=0))


def number(where, name, value, low=None, high=None, low_open=False, high_open=False):
    """A finite real number in [low, high] (an end is open where asked)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        fail(where, name, "a real number", value, TypeError)
    value = float(value)
    if not math.isfinite(value):
        fail(where, name, "finite", value)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        span = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        fail(where, name, f"a finite number in {span}", value)
    return value


def flag(where, name, value):
    if not isinstance(value, bool):
        fail(where, name, "True or False", value, TypeError)
    return value


def one_of(where, name, value, choices):
    if not isinstance(value, str) or value not in choices:
        fail(where, name, f"one of {sorted(choices)}", value)
    return value


def callables(where, **named):
    """Each named value is callable, or None (an optional function left out)."""
    for name, value in named.items():
        if value is not None and not callable(value):
            fail(where, name, "callable", value, TypeError)


def unknown_keywords(where, given, allowed):
    """TypeError naming the first keyword that is not in `allowed` (a typo like momentun)."""
    for key in given:
        if key not in allowed:
            raise TypeError(f"{where}: unknown argument {key!r}; expected one of "
                            f"{sorted(allowed)}")


# how the library's own messages begin: "<Callable>: " (as fail writes them), with the
# callable's arguments where it shows them ("MaxPool2d(2): ")
_NAMED = re.compile(r"[A-Za-z_][\w.]*(\([^)]*\))?: ")


def from_op(op, arrays, err):
    """`err`, raised inside the forward of op (a Function's name) on `arrays`, in the
    library's form: NumPy's own messages (a broadcast, a reshape, a concatenation that
    does not fit) name neither the op nor the shapes that met there. An error that
    already names its callable is returned unchanged."""
    if _NAMED.match(str(err)):
        return err
    got = ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)
    message = f"{op}: {str(err).strip()}; got inputs {got}"
    try:
        return type(err)(message)
    except TypeError:  # an exception class that wants other arguments (UFuncTypeError)
        return next(e for e in (IndexError, ValueError, TypeError) if isinstance(err, e))(message)
