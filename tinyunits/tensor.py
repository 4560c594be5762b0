"""Tensor: an array, its gradient, and the Function that made it.

Reverse-mode automatic differentiation in one method: `Tensor.backward()` sorts
the graph topologically (iteratively, so a chain of 10,000 ops needs no
recursion), then asks each Function for the gradients of its inputs, newest
first. Broadcasting is undone here, in `sum_to`, and nowhere else: an op's
backward may return a gradient in its output's broadcast shape.

Gradients accumulate: a tensor used twice receives the sum of both paths, and
a leaf's `.grad` keeps adding up across backward calls until `zero_grad()`.
Only leaves (tensors no Function made) keep `.grad`, unless `retain_grad()` is
called. After backward the graph is freed; a second backward through it raises
RuntimeError unless the first was called with `retain_graph=True`.
"""
from __future__ import annotations

import contextlib

from . import _check as check
from . import backend


class _Config:
    enable_grad = True
    default_dtype = "float32"


@contextlib.contextmanager
def no_grad():
    """Inside this block no graph is recorded (evaluation, optimiser steps)."""
    old = _Config.enable_grad
    _Config.enable_grad = False
    try:
        yield
    finally:
        _Config.enable_grad = old


def is_grad_enabled() -> bool:
    return _Config.enable_grad


def set_default_dtype(name: str) -> None:
    """Floating dtype of new tensors and parameters: "float32" (default) or "float64"."""
    check.one_of("set_default_dtype", "name", name, ("float32", "float64"))
    _Config.default_dtype = name


def get_default_dtype() -> str:
    return _Config.default_dtype


def sum_to(g, shape):
    """Sum a broadcast gradient back down to `shape` (the one place it is undone)."""
    if g.shape == shape:
        return backend.ensure_array(g)
    # BEGIN SOLUTION engine_sum_to
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1)
    g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape) if lead else g
    # END SOLUTION engine_sum_to


class GradientShapeError(ValueError):
    """A backward returned a gradient that no broadcast of its input explains.

    `function` is the node, `input` its `index`-th input, `got` the gradient's shape and
    `want` the input's (gradcheck reads them to name the input and diagnose the shape)."""

    def __init__(self, function, input, got):
        self.function, self.input = function, input
        self.got, self.want = tuple(got), tuple(input.shape)
        self.index = next(k for k, x in enumerate(function.inputs) if x is input)
        super().__init__(f"backward: {type(function).__name__}.backward returned a gradient of "
                         f"shape {self.got} for its input {self.index} of shape {self.want}, which "
                         "summing broadcast axes cannot bring to the input's shape")


class Tensor:
    """An array with a gradient; operators build the graph as they compute."""

    __slots__ = ("data", "grad", "creator", "requires_grad", "_retain")
    __array_priority__ = 1000.0  # numpy scalar * Tensor must reach Tensor.__rmul__

    def __init__(self, data, requires_grad: bool = False, creator=None):
        self.data = data
        self.grad = None
        self.creator = creator
        self.requires_grad = requires_grad
        self._retain = False

    # ------------------------------------------------------------------ properties
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: self.transpose())

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({backend.to_host(self.data)!r}{grad})"

    def numpy(self):
        """A host NumPy copy of the data (explicit, so allowed on every backend)."""
        return backend.to_host(self.data).copy()

    def item(self):
        return self.data.item()

    def detach(self) -> "Tensor":
        return Tensor(self.data)

    def retain_grad(self) -> None:
        """Keep .grad on this non-leaf tensor after backward."""
        self._retain = True

    # ------------------------------------------------------------------ autograd
    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Gradients of this tensor with respect to every leaf that requires them."""
        if not self.requires_grad:
            raise RuntimeError("backward: this tensor does not require grad "
                               "(no input to it had requires_grad=True)")
        xp = backend.get_array_module(self.data)
        if grad is None:
            if self.size != 1:
                raise RuntimeError(f"backward: output of shape {self.shape} is not a "
                                   "scalar; pass grad= of the same shape")
            grad = xp.ones_like(self.data)
        else:
            grad = _seed_gradient(grad, self)
        # an array handed to one .grad is never handed to another (nor is the user's
        # seed, nor a view of some other array): in-place updates stay private
        handed = {id(grad)}
        grads = {id(self): grad}
        for t in reversed(_topological_order(self)):
            g = grads.pop(id(t))
            fn = t.creator
            if fn is None or t._retain:
                if t.grad is None:
                    shared = id(g) in handed or getattr(g, "base", None) is not None
                    t.grad = g.copy() if shared else g
                    handed.add(id(t.grad))
                else:
                    t.grad = t.grad + g
            if fn is None:
                continue
            if fn.inputs is None:
                raise RuntimeError(
                    f"backward: the graph through {type(fn).__name__} was already freed "
                    "by an earlier backward; call backward(retain_graph=True) the first "
                    "time to go through it twice")
            for x, gx in zip(fn.inputs, fn.backward(g)):
                if gx is None or not x.requires_grad:
                    continue
                shape = x.data.shape
                try:
                    summed = sum_to(gx, shape)
                except ValueError as err:  # numpy's reshape message names neither op nor input
                    raise GradientShapeError(fn, x, gx.shape) from err
                if summed.shape != shape:
                    raise GradientShapeError(fn, x, gx.shape)
                gx = summed
                earlier = grads.get(id(x))
                grads[id(x)] = gx if earlier is None else earlier + gx
            if not retain_graph:
                fn.release()

    # ------------------------------------------------------------------ operators
    def __add__(self, o): return _ops.add(self, o)
    def __radd__(self, o): return _ops.add(o, self)
    def __sub__(self, o): return _ops.sub(self, o)
    def __rsub__(self, o): return _ops.sub(o, self)
    def __mul__(self, o): return _ops.mul(self, o)
    def __rmul__(self, o): return _ops.mul(o, self)
    def __truediv__(self, o): return _ops.div(self, o)
    def __rtruediv__(self, o): return _ops.div(o, self)
    def __matmul__(self, o): return _ops.matmul(self, o)
    def __rmatmul__(self, o): return _ops.matmul(o, self)
    def __pow__(self, c): return _ops.pow(self, c)
    def __neg__(self): return _ops.neg(self)
    def __getitem__(self, index): return _ops.getitem(self, index)

    def sum(self, axis=None, keepdims=False): return _ops.sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return _ops.mean(self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return _ops.max(self, axis, keepdims)
    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def abs(self): return _ops.abs(self)
    def relu(self): return _ops.relu(self)
    def tanh(self): return _ops.tanh(self)
    def sigmoid(self): return _ops.sigmoid(self)

    def reshape(self, *shape):
        return _ops.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return _ops.transpose(self, axes[0] if len(axes) == 1 else (axes or None))


def _seed_gradient(grad, out: Tensor):
    """backward(grad=...) as an array of out's shape and dtype on out's backend."""
    if isinstance(grad, Tensor):
        grad = grad.data
    if (not backend.is_array(grad)
            or backend.get_array_module(grad) is not backend.get_array_module(out.data)):
        try:  # host data (a list, a NumPy array on the GPU path) moves explicitly
            grad = backend.asarray(grad)
        except (TypeError, ValueError) as err:
            raise TypeError(f"backward: grad must be a Tensor or an array, got "
                            f"{type(grad).__name__}") from err
    if grad.dtype.kind != "f":
        raise TypeError(f"backward: grad must be a floating array, got {grad.dtype}")
    if tuple(grad.shape) != tuple(out.shape):
        raise ValueError(f"backward: grad must have the output's shape {tuple(out.shape)}, "
                         f"got {tuple(grad.shape)}")
    return grad.astype(out.dtype, copy=False)


def _topological_order(root: Tensor) -> list:
    """Tensors reachable from root, each after all its inputs.

    An iterative depth-first search: a tensor is marked when it is expanded, not
    when it is pushed, so that (as in the recursive version) its whole subgraph is
    finished before anything that was waiting below it on the stack.
    """
    order, expanded, stack = [], set(), [(root, False)]
    while stack:
        t, finished = stack.pop()
        if finished:
            order.append(t)
            continue
        if id(t) in expanded:
            continue
        expanded.add(id(t))
        inputs = t.creator.inputs if t.creator is not None else None
        if inputs is None:  # a leaf (or a freed node): nothing below it
            order.append(t)
            continue
        stack.append((t, True))
        for x in inputs:
            if x.requires_grad and id(x) not in expanded:
                stack.append((x, False))
    return order


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """A leaf tensor on the current backend. Floats default to the default dtype."""
    check.flag("tensor", "requires_grad", requires_grad)
    if isinstance(data, Tensor):
        data = data.data
    try:
        array = backend.asarray(data, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"tensor: data must be numbers (a scalar, nested lists or an array) "
                        f"with dtype a numeric type, got {type(data).__name__} and "
                        f"dtype={dtype!r} ({err})") from err
    if array.dtype.kind not in "biuf":
        check.fail("tensor", "data", "numeric", f"dtype {array.dtype}", TypeError)
    if requires_grad and array.dtype.kind != "f":
        check.fail("tensor", "data", "floating with requires_grad=True (only floats have "
                   "gradients)", f"dtype {array.dtype}", TypeError)
    if dtype is None and array.dtype.kind == "f":
        array = array.astype(_Config.default_dtype, copy=False)
    return Tensor(array, requires_grad=requires_grad)


def as_tensor(x, like: Tensor | None = None) -> Tensor:
    """Tensors pass through; scalars and arrays become constants in like's dtype."""
    if isinstance(x, Tensor):
        return x
    dtype = like.dtype if like is not None else None
    if backend.is_array(x):
        return Tensor(x if dtype is None else x.astype(dtype, copy=False))
    return Tensor(backend.get_array_module(like.data if like is not None else None)
                  .asarray(x, dtype=dtype))


from . import ops as _ops  # noqa: E402  (ops build on Tensor; operators call ops)
