"""PyTorch's arguments that tinyunits does not implement (inplace=, amsgrad=, dilation=,
reduction=, ...): accepted at PyTorch's default, where they change nothing, so that code
written for PyTorch runs unchanged where it means the same; any other value is refused
with a TypeError that names the callable and the argument, instead of being ignored."""
from .. import validate


def _is_default(value, default) -> bool:
    if value is default:
        return True
    plain = (bool, int, float, str)
    return (type(value) in plain and type(default) in plain
            and isinstance(value, bool) == isinstance(default, bool) and value == default)


def defaults_only(where: str, **given) -> None:
    """given: name=(value, PyTorch's default); a value other than the default raises."""
    for name, (value, default) in given.items():
        if not _is_default(value, default):
            shown = repr(value) if len(repr(value)) <= 40 else type(value).__name__
            raise TypeError(f"{where}: PyTorch's argument {name}={shown} is not implemented "
                            f"in tinyunits (only its default, {name}={default!r})")


def square(value):
    """PyTorch's (n, n) for a size that is the same along both axes, as the one n
    tinyunits takes (anything else is left for the caller's check to refuse)."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == value[1]:
        return value[0]
    return value


def square_window(where: str, kernel_size, stride) -> int:
    """k for PyTorch's kernel_size (k or (k, k)) and stride (None or the kernel size):
    tinyunits pools non-overlapping square windows only."""
    k = validate.integer(where, "kernel_size", square(kernel_size))
    if stride is not None and stride not in (k, (k, k), [k, k]):
        validate.fail(where, "stride", f"None or the kernel_size, {k} (tinyunits pools "
                      "non-overlapping windows)", stride, TypeError)
    return k
