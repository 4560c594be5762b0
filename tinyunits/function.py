"""Function: one node of the graph, with a forward on arrays and a hand-written backward.

A Function subclass writes two methods, as in Chainer:

    forward(*arrays)  -> array       computes the output, keeps what backward needs
    backward(g)       -> tuple       one gradient per input (None for "no gradient")

Calling the Function on tensors (or scalars, which become constants in the dtype
of the tensor beside them) runs forward and, when gradients are being recorded,
links the output to this node. A gradient may be returned in the output's
broadcast shape: Tensor.backward sums it down to the input's shape.
"""
from __future__ import annotations

from .backend import ensure_array
from .tensor import Tensor, _Config, as_tensor


class Function:
    inputs = None  # set while this node is part of a live graph

    def __call__(self, *inputs) -> Tensor:
        # This runs for every op of every step, so it is kept to plain loops: the
        # per-op overhead decides the speed of nets made of many small layers.
        arrays, record = [], False
        for x in inputs:
            if not isinstance(x, Tensor):
                return self(*_constants_to_tensors(type(self).__name__, inputs))
            arrays.append(x.data)
            record = record or x.requires_grad
        y = ensure_array(self.forward(*arrays))
        if record and _Config.enable_grad:
            self.inputs = inputs
            return Tensor(y, requires_grad=True, creator=self)
        return Tensor(y)

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


def _constants_to_tensors(name, inputs):
    """Scalars and arrays beside a Tensor become constants in that Tensor's dtype."""
    like = next((x for x in inputs if isinstance(x, Tensor)), None)
    if like is None:  # no dtype or device to take: tu.tensor(x) says which the user wants
        got = ", ".join(type(x).__name__ for x in inputs) or "no inputs"
        raise TypeError(f"{name}: expected at least one Tensor among the inputs "
                        f"(wrap an array with tu.tensor), got {got}")
    return [as_tensor(x, like) for x in inputs]
