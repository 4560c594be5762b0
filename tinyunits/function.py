"""Function: one node of the graph, with a forward on arrays and a hand-written backward.

A Function subclass writes two methods, as in Chainer:

    forward(*arrays)  -> array       computes the output, keeps what backward needs
    backward(g)       -> tuple       one gradient per input (None for "no gradient")

Calling the Function on tensors runs forward and, when gradients are being recorded,
links the output to this node and notes when (Tensor.backward refuses the node if an
input or the output changed since). Called again while its graph lives (`sq(sq(x))`),
the object runs on a copy of itself: each call is its own node. A gradient may be
returned in the output's broadcast shape: Tensor.backward sums it down to the input's
shape, and casts it to the input's dtype.

Operands that are not Tensors (Python numbers, lists of numbers, arrays) become
constants. Their dtype follows NumPy's promotion with one rule on top: a constant
never changes the dtype of a floating Tensor, so a float32 net stays float32
(`x * 2.5`, `x * float64_array`, `x + 1` are float32 when x is). Beside an integer
or bool Tensor, NumPy 2 decides, with Python numbers weak: `int_tensor * 3` stays
integer, `int_tensor * 2.5` and `int_tensor * float_array` are float64 (nothing
is truncated). Anything else (None, a string, a list of strings) is a TypeError
naming the op.
"""
from __future__ import annotations

import copy
import numbers

from . import validate
from . import backend
from .backend import ensure_array
from .tensor import Tensor, Version, grad_enabled


class Replaceable:
    """A class of the book that tinyunits.fast may replace by a faster subclass computing
    the same numbers: calling the reference then builds that drop-in. The book holds only
    references; `drop_ins` (reference -> drop-in) is filled by tinyunits.fast."""

    drop_ins: dict = {}

    def __new__(cls, *args, **kwargs):
        return object.__new__(Replaceable.drop_ins.get(cls, cls))


class Function(Replaceable):
    inputs = None  # set while this node is part of a live graph
    view = False  # True where forward returns a view of inputs[0]: they share a version

    def __call__(self, *inputs) -> Tensor:
        # This runs for every op of every step, so it is kept to plain loops: the
        # per-op overhead decides the speed of nets made of many small layers.
        if self.inputs is not None:  # a node of a live graph already: a copy is the new node
            node = copy.copy(self)
            node.inputs = None
            return node(*inputs)
        arrays, record = [], False
        for x in inputs:
            if not isinstance(x, Tensor):
                return self(*as_tensors(type(self).__name__, inputs))
            arrays.append(x._data)
            record = record or x.requires_grad
        try:
            y = ensure_array(self.forward(*arrays))
        except (ValueError, TypeError, IndexError) as err:  # free until something raises
            named = validate.from_op(type(self).__name__, arrays, err)
            if named is err:
                raise
            raise named from err
        version = inputs[0]._shared_version() if self.view else None
        if record and grad_enabled.get():
            self.inputs, self.stamp = inputs, Version.latest  # backward checks the stamp
            return Tensor(y, requires_grad=True, creator=self, version=version)
        return Tensor(y, version=version)

    def needs_grad(self, i: int) -> bool:
        """Does input i want a gradient? backward may return None for it if not
        (Linear skips the GEMM for the gradient of a network's input)."""
        return self.inputs[i].requires_grad

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError

    def release(self) -> None:
        """Drop the inputs and saved arrays once backward has used them."""
        self.__dict__.clear()


def as_tensors(name, inputs):
    """The operands of op `name` as Tensors: constants get the dtype the module
    docstring describes, on the backend of the first Tensor among them."""
    like = next((x for x in inputs if isinstance(x, Tensor)), None)
    if like is None:  # no dtype or device to take: tu.tensor(x) says which the user wants
        got = ", ".join(type(x).__name__ for x in inputs) or "no inputs"
        raise TypeError(f"{name}: expected at least one Tensor among the inputs "
                        f"(wrap an array with tu.tensor), got {got}")
    return [x if isinstance(x, Tensor) else _constant(name, x, like) for x in inputs]


def _constant(name, x, like: Tensor) -> Tensor:
    np = backend.host_module()
    scalar = isinstance(x, (numbers.Real, np.generic))  # Python or NumPy number
    value = None
    if backend.is_array(x):
        value = x
    elif scalar or isinstance(x, (list, tuple)):
        try:
            value = np.asarray(x)
        except (TypeError, ValueError):  # a ragged list, a list holding Tensors
            pass
    if value is None or value.dtype.kind not in ("b", "i", "u", "f"):
        validate.fail(name, "operands", "Tensors, numbers or numeric arrays", x, TypeError)
    # a Python number itself, so that NumPy treats it as weak
    dtype = constant_dtype(like.dtype, x if scalar else value.dtype)
    if backend.is_array(x):  # stays on its backend: a host array beside a device
        return Tensor(x if x.dtype == dtype else x.astype(dtype))  # one is refused there
    return Tensor(backend.get_array_module(like._data).asarray(value, dtype=dtype))


def constant_dtype(dtype, constant):
    """The dtype of an op between a tensor of `dtype` and a constant (a number or a
    dtype), by the rule of the module docstring: a floating tensor keeps its own, an
    integer or bool one follows NumPy (leaky_relu's slope, a pooling's 1/k^2, dropout's
    1/(1-p) make an integer tensor float64, never truncated)."""
    if dtype.kind == "f":
        return dtype
    return backend.host_module().result_type(dtype, constant)
