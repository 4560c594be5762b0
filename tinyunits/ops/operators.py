"""Tensor as a Python value: its operators and methods (`a + b`, `a @ b`, `t += 1`,
`t.sum()`, `t[i]`) and conversions (`len(t)`, `float(t)`, `if t:`, `t == u`), attached
from this side, as DeZero's setup_variable does.

tensor.py knows no op: it is the graph and the backward walk. Attaching here keeps the
imports one way, tensor <- function <- ops, and `a + b` is still ops.add(a, b). Each
conversion answers as NumPy and PyTorch do, or refuses with an error that says what
to write instead (Python's fallbacks would answer wrongly without a word).
"""
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
    return transpose(self, axes[0] if len(axes) == 1 else (axes or None))


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
    "sum": sum, "mean": mean, "max": max, "exp": exp, "log": log, "abs": abs, "relu": relu,
    "tanh": tanh, "sigmoid": sigmoid, "reshape": _reshape, "transpose": _transpose,
    "T": property(_transpose),
    "__len__": _len, "__iter__": _iter, "__contains__": _contains, "__array__": _array,
    "__bool__": _bool, "__float__": _float, "__int__": _int, "__format__": _format,
    "__eq__": _compare("=="), "__ne__": _compare("!="), "__lt__": _compare("<"),
    "__le__": _compare("<="), "__gt__": _compare(">"), "__ge__": _compare(">="),
}
for name, method in OPERATORS.items():
    setattr(Tensor, name, method)
