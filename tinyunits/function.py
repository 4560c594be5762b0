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
        like = next(x for x in inputs if isinstance(x, Tensor))
        inputs = [as_tensor(x, like) for x in inputs]
        y = ensure_array(self.forward(*[x.data for x in inputs]))
        if _Config.enable_grad and any(x.requires_grad for x in inputs):
            self.inputs = inputs
            return Tensor(y, requires_grad=True, creator=self)
        return Tensor(y)

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError

    def release(self) -> None:
        """Drop the inputs and saved arrays once backward has used them."""
        self.__dict__.clear()
