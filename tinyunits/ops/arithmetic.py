"""Arithmetic with broadcasting: add, sub, mul, div, neg, pow.

Each backward returns gradients in the broadcast shape of the output;
Tensor.backward sums them down to each input's own shape (tensor.sum_to).
"""
import numbers

from .. import validate
from ..backend import get_array_module
from ..function import Function


class Add(Function):
    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Sub(Function):
    def forward(self, a, b):
        return a - b

    def backward(self, g):
        return g, -g


class Mul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        # BEGIN SOLUTION engine_mul
        return g * self.b, g * self.a
        # END SOLUTION engine_mul


class Div(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, g):
        # BEGIN SOLUTION engine_div
        gb = g / self.b
        return gb, -gb * self.a / self.b
        # END SOLUTION engine_div


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, g):
        return (-g,)


class Pow(Function):
    """a ** c for a constant exponent c (a Python number: a NumPy float64 exponent
    would make a float32 tensor float64)."""

    def __init__(self, c):
        if not isinstance(c, numbers.Real) or isinstance(c, bool):
            validate.fail("pow", "the exponent", "a real number (a constant; Tensor exponents "
                       "are not supported)", c, TypeError)
        self.c = int(c) if isinstance(c, numbers.Integral) else float(c)

    def forward(self, a):
        if a.dtype.kind in "iu" and isinstance(self.c, int) and self.c < 0:
            # NumPy refuses; CuPy would compute an integer answer without a word
            raise ValueError("Integers to negative integer powers are not allowed")
        self.a = a
        return a ** self.c

    def backward(self, g):
        if self.c == 0:  # d/da a**0 = 0 everywhere, also at 0 (0 * 0**-1 would be NaN)
            return (get_array_module(g).zeros_like(g),)
        return (g * self.c * self.a ** (self.c - 1),)


def add(a, b): return Add()(a, b)
def sub(a, b): return Sub()(a, b)
def mul(a, b): return Mul()(a, b)
def div(a, b): return Div()(a, b)
def neg(a): return Neg()(a)
def pow(a, c): return Pow(c)(a)  # noqa: A001 - the operator's own name
