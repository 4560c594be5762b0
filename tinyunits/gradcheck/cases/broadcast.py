"""BroadcastTo: the Function through which the engine_sum_to exercise is graded.

Its backward IS sum_to. The grader runs this forward for the truth; the child
(runner.py) builds the graded tree's copy of this class, whose backward calls the
graded tree's sum_to.
"""
from ...backend import get_array_module
from ...function import Function
from ...tensor import sum_to


class BroadcastTo(Function):
    """a broadcast to `shape`; backward sums g back down to a's shape."""

    def __init__(self, shape):
        self.shape = shape

    def forward(self, a):
        self.a_shape = a.shape
        return get_array_module(a).broadcast_to(a, self.shape).copy()

    def backward(self, g):
        return (sum_to(g, self.a_shape),)
