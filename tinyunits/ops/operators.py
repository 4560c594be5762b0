"""Tensor as a Python value: its operators and methods (`a + b`, `a @ b`, `t += 1`,
`t.sum()`, `t[i]`) and conversions (`len(t)`, `float(t)`, `if t:`, `t == u`), attached
from this side, as DeZero's setup_variable does.

tensor.py knows no op: it is the graph and the backward walk. Attaching here keeps the
imports one way, tensor <- function <- ops, and `a + b` is still ops.add(a, b). Each
conversion answers as NumPy and PyTorch do, or refuses with an error that says what
to write instead (Python's fallbacks would answer wrongly without a word).

Where NumPy and PyTorch give one name two meanings, a method takes PyTorch's or refuses:
`t.transpose(i, j)` swaps two axes (more axes: NumPy's whole order); `t.size` is NumPy's
count of elements, and called, `t.size()` and `t.size(dim)`, PyTorch's shape; `t.max(1)`
and `t.max(dim=1)` refuse (PyTorch's are a pair, values and indices), while NumPy's
`t.max(axis=1)` and PyTorch's `t.amax(1)` give the values. Reductions take NumPy's
`axis`, `keepdims` or PyTorch's `dim`, `keepdim`.
"""
import math

from .. import validate
from ..function import as_tensors
from ..tensor import Tensor, is_grad_enabled
from .arithmetic import Pow, add, div, mul, neg, pow, sub
from .elementwise import abs, exp, log, relu, sigmoid, tanh
from .matmul import matmul
from .reduction import max, mean, sum
from .shape import getitem, reshape, transpose


def _reflected(op):
    """`2 - t` calls t.__rsub__(2): the op with its operands the other way round."""
    return lambda self, other: op(other, self)


def _in_place(symbol, method, op):
    """`t -= o`: in place on t's array where no graph is recorded (a hand-written SGD
    step in no_grad updates the parameter itself, not a copy); inside a graph, a new
    node, as `t = t - o`. A parameter cannot be changed in place while its own graph
    is recorded, as in PyTorch. (Without these Python would rebind t to t - o.)"""
    def apply(self, o):
        if is_grad_enabled() and (self.requires_grad
                                   or (isinstance(o, Tensor) and o.requires_grad)):
            if self.requires_grad and self.creator is None:
                raise RuntimeError(
                    f"{symbol}: a leaf tensor that requires grad (a parameter) cannot be "
                    "changed in place while gradients are recorded; update it inside "
                    "`with tu.no_grad():`")
            return op(self, o)
        if op is pow:
            other = Pow(o).c  # the exponent, checked as ** checks it
        else:
            other = as_tensors(symbol, (self, o))[1]
        try:
            getattr(self._data, method)(other._data if isinstance(other, Tensor) else other)
        except TypeError as err:  # int_tensor += 2.5 would have to truncate
            raise TypeError(f"{symbol}: cannot write the result into this {self.dtype} "
                            f"tensor in place ({err}); write t = t {symbol[:-1]} ... "
                            "instead") from err
        self.mark_changed()
        return self
    return apply


def _reshape(self, *shape):
    return reshape(self, shape[0] if len(shape) == 1 else shape)


def _transpose(self, *axes):
    if len(axes) == 2 and all(validate.is_int(a) and -self.ndim <= a < self.ndim for a in axes):
        # PyTorch's transpose(dim0, dim1) swaps two axes: NumPy would read them as the
        # whole order, so that a matrix's transpose(0, 1) would leave it as it is
        order = list(range(self.ndim))
        i, j = (a % self.ndim for a in axes)
        order[i], order[j] = j, i
        axes = (tuple(order),)
    return transpose(self, axes[0] if len(axes) == 1 else (axes or None))


class _Size(int):
    """t.size: the number of elements, as NumPy's; called, as PyTorch's method: t.size()
    is the shape and t.size(dim) the length of one axis."""

    def __new__(cls, shape):
        size = super().__new__(cls, math.prod(shape))
        size.shape = shape
        return size

    def __call__(self, dim=None):
        if dim is None:
            return self.shape
        if not validate.is_int(dim) or not -len(self.shape) <= dim < len(self.shape):
            validate.fail("size", "dim", f"an int in [-{len(self.shape)}, {len(self.shape)}) "
                          f"for a tensor of shape {self.shape}", dim,
                          ValueError if validate.is_int(dim) else TypeError)
        return self.shape[dim]

    def __reduce__(self):  # copied or pickled (to a worker process): a plain int
        return int, (int(self),)


def _reduction(name, op):
    """t.sum(axis, keepdims) as NumPy names the arguments, or (dim, keepdim) as PyTorch."""
    def reduce(self, axis=None, keepdims=False, *, dim=None, keepdim=False):
        if axis is not None and dim is not None:
            validate.fail(name, "axis and dim", "one of the two (two names of one argument)",
                          (axis, dim), TypeError)
        return op(self, axis if dim is None else dim, keepdims or keepdim)
    return reduce


def _max(self, *dim, axis=None, keepdims=False, **torch_dim):
    # PyTorch's t.max(1) and t.max(dim=1) are a (values, indices) pair: t.max(1)[0] would
    # silently be the first row's maximum here. NumPy's spelling, axis=, gives the values.
    if dim or torch_dim:
        raise TypeError("max: t.max(dim) would be PyTorch's (values, indices) pair, which "
                        "tinyunits does not compute; t.max(axis=...) or t.amax(dim) gives the "
                        "values (as PyTorch's amax: ties share the gradient) and "
                        f"t.data.argmax(axis) the indices, got {dim or torch_dim}")
    return max(self, axis, keepdims)


def _len(self):
    if self.ndim == 0:  # NumPy's own TypeError names neither tensors nor the call
        raise TypeError(f"len: a 0-d tensor has no length (its value is item()), "
                        f"got shape {self.shape}")
    return len(self._data)


def _iter(self):
    # without this, iteration falls back on __getitem__ until an IndexError: a 0-d
    # tensor would iterate as empty, not fail as a NumPy scalar array does
    if self.ndim == 0:
        raise TypeError(f"iter: a 0-d tensor cannot be iterated (its value is item()), "
                        f"got shape {self.shape}")
    return (self[i] for i in range(len(self._data)))


def _contains(self, value):
    # as NumPy's `value in array`: without this, Python compares each row with `==`,
    # which a Tensor refuses, or else `1.0 in tensor([1.0])` would be False
    value = value._data if isinstance(value, Tensor) else value
    return (self._data == value).any().item()


def _array(self, dtype=None, copy=None):
    # without this, NumPy reads a tensor as a nested sequence, one element at a time
    # through __getitem__ (a graph node each: minutes for a large tensor), into an
    # object array of 0-d tensors that nothing downstream can use
    raise TypeError(f"np.asarray: a Tensor converts to NumPy explicitly, with t.numpy() "
                    f"(a host copy) or t.data (its array), got a tensor of shape "
                    f"{self.shape}")


def _bool(self):
    # without this, bool() would fall back on __len__: tensor([0.0]) would be True
    if self.size != 1:
        raise ValueError(f"bool: the truth value of a tensor of shape {self.shape} "
                         f"({self.size} elements) is ambiguous; compare its item() "
                         "or reduce it first")
    return bool(self.item())

# float(loss), int(t), f"{loss:.4f}": a one-element tensor's value, as NumPy's and
# PyTorch's (math.isnan(t) and friends go through __float__)
def _float(self):
    return float(_number(self, "float"))


def _int(self):
    return int(_number(self, "int"))


def _format(self, spec):
    return format(_number(self, "format"), spec) if spec else str(self)


def _number(self, call):
    """The value of a one-element tensor, for float(t), int(t) and f"{t:.4f}"."""
    if self.size != 1:
        raise TypeError(f"{call}: only a one-element tensor converts to a Python number, "
                        f"got a tensor of shape {self.shape} ({self.size} elements)")
    return self._data.item()


def _compare(op):
    """The comparison `op`, which a Tensor refuses (see below) unless Python may fall back."""
    def compare(self, other):
        # Python's default == is identity: tensor([1.]) == tensor([1.]) would be False,
        # and np.mean(pred == y) a silent 0.0 (and < a bare "not supported"). A comparison
        # has no gradient, so rather than answer wrongly a Tensor refuses and names what
        # to compare instead: its arrays, or its value.
        if other is None or not isinstance(other, (Tensor, int, float, complex, list, tuple)) \
                and not hasattr(other, "__array_interface__") and not hasattr(other, "shape"):
            return NotImplemented  # t == None, t == "a": False, as for any object
        identity = op in ("==", "!=")
        raise TypeError(f"{op}: a Tensor does not define {op}"
                        + (" (Python's default compares identity, so equal tensors would be "
                           "unequal)" if identity else "")
                        + f"; compare the arrays, t.data {op} u.data, or a value, t.item() {op} x"
                        + (", and use `is` for identity" if identity else "")
                        + f"; got Tensor of shape {self.shape} and {type(other).__name__}")
    return compare


OPERATORS = {
    "__add__": add, "__radd__": _reflected(add), "__sub__": sub, "__rsub__": _reflected(sub),
    "__mul__": mul, "__rmul__": _reflected(mul), "__truediv__": div,
    "__rtruediv__": _reflected(div), "__matmul__": matmul, "__rmatmul__": _reflected(matmul),
    "__pow__": pow, "__neg__": neg, "__getitem__": getitem,
    "__iadd__": _in_place("+=", "__iadd__", add), "__isub__": _in_place("-=", "__isub__", sub),
    "__imul__": _in_place("*=", "__imul__", mul),
    "__itruediv__": _in_place("/=", "__itruediv__", div),
    "__ipow__": _in_place("**=", "__ipow__", pow),
    "__abs__": abs, "__pos__": lambda self: self,
    "sum": _reduction("sum", sum), "mean": _reduction("mean", mean),
    "amax": _reduction("amax", max), "max": _max, "exp": exp, "log": log, "abs": abs,
    "relu": relu, "tanh": tanh, "sigmoid": sigmoid, "reshape": _reshape,
    "transpose": _transpose, "T": property(_transpose),
    "size": property(lambda self: _Size(self.shape)),
    "__len__": _len, "__iter__": _iter, "__contains__": _contains, "__array__": _array,
    "__bool__": _bool, "__float__": _float, "__int__": _int, "__format__": _format,
    "__eq__": _compare("=="), "__ne__": _compare("!="), "__lt__": _compare("<"),
    "__le__": _compare("<="), "__gt__": _compare(">"), "__ge__": _compare(">="),
}
for name, method in OPERATORS.items():
    setattr(Tensor, name, method)
