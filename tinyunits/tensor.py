"""Tensor: an array, its gradient, and the Function that made it.

Reverse-mode automatic differentiation in one method: `Tensor.backward()` sorts
the graph topologically (iteratively, so a chain of 10,000 ops needs no
recursion), then asks each Function for the gradients of its inputs, newest
first. Broadcasting is undone here, in `sum_to`, and nowhere else: an op's
backward may return a gradient in its output's broadcast shape. This file knows no
op: `a + b`, `t.sum()`, `t[i]` are attached to Tensor by tinyunits/ops/operators.py.

Gradients accumulate: a tensor used twice receives the sum of both paths, and
a leaf's `.grad` keeps adding up across backward calls until `zero_grad()`.
Only leaves (tensors no Function made) keep `.grad`, unless `retain_grad()` is
called. After backward the graph is freed; a second backward through it raises
RuntimeError unless the first was called with `retain_graph=True`.

Versions (as PyTorch's counters): every change of a tensor's array made through
the library (`t.data = a`, `t.data += 1`, an optimiser step, load_state_dict,
astype) stamps the tensor's version. Each op notes when it recorded the graph,
and backward refuses (RuntimeError, naming the tensor and the op) to go through
an op whose inputs or output changed since: its saved arrays would give the
gradient of values that were never computed.
Tensors that share one array (a reshape, transpose or slice of another, detach())
share one counter. A write into the elements (`t.data[0] = 5`) is not seen; see
`Tensor.data`.
"""
from __future__ import annotations

import contextlib
import contextvars

from . import validate
from . import backend

# Is a graph being recorded? One answer per thread and per asyncio task, as PyTorch's
# grad mode is per thread: a no_grad in one thread leaves another's training alone.
grad_enabled = contextvars.ContextVar("grad_enabled", default=True)
_default_dtype = "float32"  # of new floats (set_default_dtype): one for the process


@contextlib.contextmanager
def no_grad():
    """No graph is recorded in this block (evaluation, optimiser steps), by this thread or task."""
    token = grad_enabled.set(False)
    try:
        yield
    finally:
        grad_enabled.reset(token)


def is_grad_enabled() -> bool:
    return grad_enabled.get()


def set_default_dtype(name: str) -> None:
    """Floating dtype of new tensors and parameters: "float32" (default) or "float64"."""
    global _default_dtype
    _default_dtype = validate.one_of("set_default_dtype", "name", name, ("float32", "float64"))


def get_default_dtype() -> str:
    return _default_dtype


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


class Version:
    """When an array last changed through the library: the value of the global count
    of changes (`latest`) at that change, 0 if never. Tensors that share one array
    (views) share one Version, so a change through either is seen by both. An op
    notes `latest` when it records the graph; an input changed after it has a later
    stamp. While nothing changed anywhere, backward compares one int per op. A
    tensor gets its Version when first changed or shared (most never are)."""

    __slots__ = ("stamp",)
    latest = 0

    def __init__(self, stamp: int = 0):
        self.stamp = stamp

    @classmethod
    def tick(cls) -> int:
        cls.latest += 1
        return cls.latest


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
    """An array with a gradient; operators build the graph as they compute. Tensor(array)
    wraps a backend array as it is, shared and unchecked: tu.tensor copies, as_tensor shares."""

    # _data, not a plain `data`: the engine's hot path reads the slot, users the property
    __slots__ = ("_data", "_version", "grad", "creator", "requires_grad", "_retain", "name")
    # array * Tensor must reach Tensor.__rmul__: NumPy defers to __array_ufunc__ = None,
    # CuPy (and the strict backend) to a higher __array_priority__
    __array_ufunc__ = None
    __array_priority__ = 1000.0

    def __init__(self, data, requires_grad: bool = False, creator=None, version=None):
        self._data = data
        self._version = version
        self.grad = None
        self.creator = creator
        self.requires_grad = requires_grad
        self._retain = False
        self.name = None  # a label in pictures of the graph (tensor(..., name=)), never read

    @property
    def data(self):
        """The array. Changing it after an op used it and before backward is refused.

        `t.data = a` and `t.data += 1` (what optimisers do) count as changes: a
        backward through a graph that used the old values raises RuntimeError
        instead of computing a gradient from the new ones. A write into the array's
        elements (`t.data[0] = 5`, `xp.clip(t.data, out=t.data)`) cannot be seen,
        as in PyTorch's `.data`: call `t.mark_changed()` after one, or run forward
        again before backward. Nor are writes through an array that a tensor shares
        (given to tu.as_tensor or Tensor, which do not copy it)."""
        return self._data

    @data.setter
    def data(self, array):
        if not backend.is_array(array):
            validate.fail("Tensor.data", "the new value", "an array (tu.tensor(...).data, "
                       "backend.asarray(...))", type(array).__name__, TypeError)
        if array is self._data:  # an augmented assignment changed it in place
            self.mark_changed()
        else:  # a new array: the tensors that shared the old one are unchanged
            self._data = array
            self._version = Version(Version.tick())

    def mark_changed(self) -> None:
        """Count a change made to this tensor's array in place (the library's own
        `out=` and `[...] =` writes call this), so that backward refuses a graph
        that used the old values."""
        self._shared_version().stamp = Version.tick()

    def _shared_version(self) -> Version:
        """This tensor's Version, made on first use, for a view of its array to share."""
        if self._version is None:
            self._version = Version()
        return self._version

    # -------------------------------------------- properties (and size, in ops/operators.py)
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({backend.to_host(self._data)!r}{grad})"

    def numpy(self):
        """A host NumPy copy of the data, on every backend (PyTorch's shares the CPU's)."""
        return backend.to_host(self._data).copy()

    def item(self):
        if self._data.size != 1:  # NumPy's message names no tensor and no shape
            raise ValueError(f"item: a tensor of shape {self.shape} has {self._data.size} "
                             "elements; item() gives the value of one (index or reduce it first)")
        return self._data.item()

    def detach(self) -> "Tensor":
        """The same array, out of the graph (it shares this tensor's version counter)."""
        return Tensor(self._data, version=self._shared_version())

    def retain_grad(self) -> None:
        """Keep .grad on this non-leaf tensor after backward."""
        self._retain = True

    # ------------------------------------------------------------------ autograd
    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Gradients of this tensor with respect to every leaf that requires them."""
        if not self.requires_grad:
            raise RuntimeError("backward: this tensor does not require grad "
                               "(no input to it had requires_grad=True)")
        if grad is None:
            if self._data.size != 1:
                raise RuntimeError(f"backward: output of shape {self.shape} is not a "
                                   "scalar; pass grad= of the same shape")
            grad = backend.get_array_module(self._data).ones_like(self._data)
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
                    t.grad = backend.ensure_array(t.grad + g)  # NumPy's 0-d sum is a scalar
            if fn is None:
                continue
            if fn.inputs is None:
                raise RuntimeError(
                    f"backward: the graph through {type(fn).__name__} was already freed "
                    "by an earlier backward; call backward(retain_graph=True) the first "
                    "time to go through it twice")
            if fn.stamp != Version.latest:  # something changed since fn's forward
                _check_unchanged(fn, t)
            gxs = fn.backward(g)  # one per input (a None after them: an optional input left out)
            if not isinstance(gxs, (tuple, list)) or len(gxs) < len(fn.inputs):
                got = len(gxs) if isinstance(gxs, (tuple, list)) else f"a {type(gxs).__name__}"
                raise TypeError(f"backward: {type(fn).__name__}.backward must return one gradient "
                                f"(or None) per input, {len(fn.inputs)} in a tuple, got {got}")
            for x, gx in zip(fn.inputs, gxs):
                if gx is None or not x.requires_grad:
                    continue
                shape = x._data.shape
                try:
                    summed = sum_to(gx, shape)
                except ValueError as err:  # numpy's reshape message names neither op nor input
                    raise GradientShapeError(fn, x, gx.shape) from err
                if summed.shape != shape:
                    raise GradientShapeError(fn, x, gx.shape)
                gx = summed
                if gx.dtype is not x._data.dtype:  # a float64 leaf beside float32 ops
                    gx = gx.astype(x._data.dtype, copy=False)
                earlier = grads.get(id(x))
                grads[id(x)] = gx if earlier is None else backend.ensure_array(earlier + gx)
            if not retain_graph:
                fn.release()


def _check_unchanged(fn, out: Tensor) -> None:
    """Refuse to backward through fn if an array it used changed since its forward."""
    for i, t in enumerate((*fn.inputs, out)):
        if t._version is None or t._version.stamp <= fn.stamp:
            continue
        op = type(fn).__name__
        which = f"the output of {op}" if t is out else f"input {i} of {op}"
        raise RuntimeError(
            f"backward: {which} (a {type(t).__name__} of shape {tuple(t.shape)}, {t.dtype}) "
            f"was changed after {op} used it in forward, so {op}'s gradient would come "
            "from values it never computed with. An optimiser step, load_state_dict, "
            "astype, `t.data = ...` or `t.data += ...` between forward and backward does "
            "this: run forward again after the change, or change it after backward.")


def _seed_gradient(grad, out: Tensor):
    """backward(grad=...) as an array of out's shape and dtype on out's backend."""
    grad = grad._data if isinstance(grad, Tensor) else grad
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

    An iterative depth-first search: a tensor is marked when it is expanded, not when it
    is pushed, so that (as in the recursive version) its whole subgraph is finished
    before anything that was waiting below it on the stack."""
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
            if t._data.dtype.kind != "f":  # refused here, before any .grad is written
                raise TypeError("backward: a leaf tensor that requires grad must be floating (its "
                                "gradient would be truncated to its dtype), got dtype "
                                f"{t.dtype} (shape {tuple(t.shape)}); make it with a float "
                                "dtype, or set requires_grad=False")
            order.append(t)
            continue
        stack.append((t, True))
        for x in inputs:
            if x.requires_grad and id(x) not in expanded:
                stack.append((x, False))
    return order


def tensor(data, requires_grad: bool = False, dtype=None, name=None) -> Tensor:
    """A new leaf tensor on the current backend holding a copy of data, as torch.tensor
    does: a later change to data changes nothing here (tu.as_tensor shares instead).
    Floats take the default dtype unless dtype says otherwise, a float64 NumPy array
    too (torch.tensor keeps its float64). name labels it in pictures of the graph."""
    validate.flag("tensor", "requires_grad", requires_grad)
    if name is not None and not isinstance(name, str):
        validate.fail("tensor", "name", "a str or None", name, TypeError)
    array = _leaf_array("tensor", data, dtype, backend.get_array_module().array)
    if requires_grad and array.dtype.kind != "f":
        validate.fail("tensor", "data", "floating with requires_grad=True (only floats have "
                   "gradients)", f"dtype {array.dtype}", TypeError)
    t = Tensor(array, requires_grad=requires_grad)
    t.name = name
    return t


def as_tensor(data, dtype=None) -> Tensor:
    """A tensor sharing data's memory where it can, as torch.as_tensor: an array of the
    backend already in the dtype wanted is used as it is, so later writes to it show
    (unwatched: see Tensor.data); a Tensor is returned itself. Other data is converted as
    tu.tensor converts it (a Tensor to another dtype: a copy out of the graph)."""
    if isinstance(data, Tensor) and dtype in (None, data.dtype):
        return data
    return Tensor(_leaf_array("as_tensor", data, dtype, backend.asarray))


def _leaf_array(where, data, dtype, convert):
    """data (a Tensor's array as it is) converted to a numeric array of the backend."""
    try:
        array = convert(data._data if isinstance(data, Tensor) else data, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{where}: data must be numbers (a scalar, nested lists or an array) "
                        f"with dtype a numeric type, got {type(data).__name__} and "
                        f"dtype={dtype!r} ({err})") from err
    if array.dtype.kind not in "biuf":
        validate.fail(where, "data", "numeric", f"dtype {array.dtype}", TypeError)
    if dtype is None and array.dtype.kind == "f":
        array = array.astype(_default_dtype, copy=False)
    return array
