"""Tensor's operators and methods (`a + b`, `a @ b`, `t += 1`, `t.sum()`, `t[i]`), attached
from this side, as DeZero's setup_variable does.

tensor.py knows no op: it is the graph and the backward walk. Attaching here keeps the
imports one way, tensor <- function <- ops, and `a + b` is still ops.add(a, b).
"""
from ..function import as_tensors
from ..tensor import Config, Tensor
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
        if Config.enable_grad and (self.requires_grad
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
}
for name, method in OPERATORS.items():
    setattr(Tensor, name, method)
