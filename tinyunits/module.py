"""Module and Parameter: the containers that hold a model's state.

A Module registers every Parameter, sub-Module and buffer assigned to it as an
attribute, in order, so that parameters(), state_dict() and the optimisers find them. A
Parameter shared by several modules (one InnerNet used by many layers) is listed once.

Once registered, an attribute keeps its kind: a parameter's name takes only a Parameter,
a sub-module's only a Module, a buffer's only an array (or None where it is optional).
Anything else is refused, since it would drop the old entry from parameters() and from
the checkpoint without a word.

For the same reason an attribute may not hold what cannot be registered but looks
trainable: a list, tuple, dict or set holding Modules, Parameters or tensors that
require grad (use nn.Sequential, or one attribute each), or a plain tensor that requires
grad (use nn.Parameter).
"""
from __future__ import annotations

from . import backend, validate
from .tensor import Tensor, get_default_dtype


class Parameter(Tensor):
    """A leaf tensor that a Module trains. Host arrays move to the backend here."""

    __slots__ = ()

    def __init__(self, data, dtype=None):
        array = backend.asarray(data, dtype=dtype or get_default_dtype())
        if array.dtype.kind != "f":  # only floats have gradients
            validate.fail("Parameter", "dtype", "floating", str(array.dtype), TypeError)
        super().__init__(array, requires_grad=True)


class Module:
    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_optional", {})  # buffer name -> its shape when present
        object.__setattr__(self, "_uncast", set())  # buffers whose dtype astype keeps
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_params" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                               "assigning attributes")
        self._check_kind(name, value)
        was_buffer = name in self._buffers
        for registry in (self._params, self._modules, self._buffers):
            registry.pop(name, None)
        if isinstance(value, Parameter):
            self._params[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif was_buffer:  # a new array for a buffer stays a buffer (saved, loaded)
            self._buffers[name] = value
        object.__setattr__(self, name, value)

    def _check_kind(self, name, value) -> None:
        """A registered attribute takes only a value of its kind, and nothing trainable
        hides where it cannot be registered (module docstring)."""
        where = f"{type(self).__name__}.{name}"
        hidden = _unregistered(value)
        if hidden is not None:
            validate.fail(where, "the value", "what a Module registers (this would be missing "
                       "from parameters(), the optimiser and state_dict): for modules, "
                       "nn.Sequential(*modules) or one attribute each; for a trained tensor, "
                       "nn.Parameter(...)", hidden, TypeError)
        if name in self._params and not isinstance(value, Parameter):
            validate.fail(where, "the new value", "an nn.Parameter (it is one of the "
                       "module's parameters: change its values with .data = ..., or build "
                       "the module without it)", _kind(value), TypeError)
        if name in self._modules and not isinstance(value, Module):
            validate.fail(where, "the new value", "a Module (it is a sub-module)", _kind(value),
                          TypeError)
        if name == "training":  # "False" would be truthy: dropout and batch norm train on
            validate.flag(where, "the new value", value)
        if name in self._buffers and not backend.is_array(value) and not (
                value is None and name in self._optional):
            validate.fail(where, "the new value", "an array (it is a buffer, saved with the "
                       "model)", _kind(value), TypeError)

    def register_buffer(self, name: str, array, shape=None, cast=True) -> None:
        """State that is saved and loaded but not trained (running statistics, a mask).

        With `shape`, the buffer is optional: it may be None (then state_dict leaves
        it out), and a loaded one must have that shape. With cast=False, astype
        leaves it in its own dtype (TMAF's breakpoints: values, not float32 state).
        """
        if not backend.is_array(array) and not (array is None and shape is not None):
            validate.fail(f"{type(self).__name__}.register_buffer", name, "an array (None only "
                       "for an optional buffer, with its shape)", _kind(array), TypeError)
        if shape is not None:
            self._optional[name] = tuple(shape)
        if not cast:
            self._uncast.add(name)
        setattr(self, name, array)
        self._buffers[name] = array

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ traversal
    def named_modules(self, prefix=""):
        """(dotted name, module) pairs, this one first (named prefix), as PyTorch's; a module
        shared by several is listed at each place (PyTorch's lists it once)."""
        for dotted, m in self._walk(f"{prefix}." if prefix else ""):
            yield dotted[:-1], m

    def _walk(self, prefix=""):
        # named_modules with each name ending in ".", so that a parameter's is prefix + name
        yield prefix, self
        for name, m in self._modules.items():
            yield from m._walk(f"{prefix}{name}.")

    def named_parameters(self):
        """(dotted name, Parameter) pairs; a shared Parameter appears once."""
        seen = set()
        for prefix, m in self._walk():
            for name, p in m._params.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield prefix + name, p

    def parameters(self) -> list:
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def train(self, mode: bool = True) -> "Module":
        validate.flag(f"{type(self).__name__}.train", "mode", mode)
        for _, m in self.named_modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def astype(self, dtype) -> "Module":
        """Cast every parameter and buffer to a floating dtype (float64 for derivative
        checks). An integer dtype is refused: it would truncate the parameters."""
        where = f"{type(self).__name__}.astype"
        try:  # (NumPy reads None as float64: refused, it is no dtype)
            kind = None if dtype is None else backend.host_module().dtype(dtype).kind
        except TypeError:
            kind = None
        if kind != "f":
            validate.fail(where, "dtype", "a floating dtype ('float32', 'float64')", dtype,
                          TypeError)
        for _, m in self.named_modules():
            for p in m._params.values():
                p.data = p.data.astype(dtype)
                p.grad = None
            for name, b in list(m._buffers.items()):  # re-registering edits the dict
                if b is not None and name not in m._uncast:
                    m.register_buffer(name, b.astype(dtype), m._optional.get(name))
        return self

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Name -> array for every parameter and buffer (the arrays themselves)."""
        state = {name: p.data for name, p in self.named_parameters()}
        for prefix, m in self._walk():
            state.update({prefix + name: b for name, b in m._buffers.items() if b is not None})
        return state

    def load_state_dict(self, state: dict) -> None:
        """Copy arrays in; every key, shape and dtype is checked before anything is written.

        An optional buffer (a pruning mask) is set when the state has it, and cleared
        when it does not, so a loaded model computes what the saved one did.
        """
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict):
            raise TypeError(f"{where}: state must be a dict of arrays, got {type(state).__name__}")
        own = self.state_dict()
        optional = {prefix + name: (m, name, shape) for prefix, m in self._walk()
                    for name, shape in m._optional.items()}
        missing = sorted(set(own) - set(state) - set(optional))
        unexpected = sorted(set(state) - set(own) - set(optional))
        if missing or unexpected:
            raise KeyError(f"{where}: missing keys {missing}, unexpected keys {unexpected} "
                           "(a checkpoint of another model?)")
        for name, value in state.items():
            shape = own[name].shape if name in own else optional[name][2]
            if not backend.is_array(value):
                raise TypeError(f"{where}: {name} must be an array, got {type(value).__name__}")
            if value.dtype.kind not in "fiu":
                raise TypeError(f"{where}: {name} must be a numeric array, got {value.dtype}")
            if tuple(value.shape) != tuple(shape):
                raise ValueError(f"{where}: {name} has shape {tuple(value.shape)} in the "
                                 f"state, {tuple(shape)} in the model")
            if value.dtype.kind == "f" and not backend.get_array_module(value).isfinite(
                    value).all().item():  # as tinyunits.load: the model would compute NaN
                raise ValueError(f"{where}: {name} must be finite, got NaN or inf in the state")
        for prefix, m in self._walk():
            mine = {n: state[prefix + n] for n in (*m._params, *m._buffers) if prefix + n in state}
            m.check_state(mine, f"{where}, module {prefix[:-1]!r}" if prefix else where)
        params = dict(self.named_parameters())
        for name, target in own.items():  # all checked: now write
            if name not in optional:
                target[...] = backend.asarray(state[name], dtype=target.dtype)
                if name in params:  # a graph that used the old values must not backward
                    params[name].mark_changed()
        for name, (m, attr, shape) in optional.items():
            dtype = next((p.dtype for p in m._params.values()), get_default_dtype())
            value = backend.asarray(state[name], dtype=dtype) if name in state else None
            m.register_buffer(attr, value, shape)

    def check_state(self, state: dict, where: str) -> None:
        """Raise if a value of `state` (this module's own names, without the dotted prefix,
        to the arrays about to be loaded) is one the module cannot hold though its shape
        fits; load_state_dict asks every module before it writes anything. A unit with
        conditions on its state (TMAF's breakpoints) checks them here as its constructor does."""

    # ------------------------------------------------------------------ checks
    def check_input(self, x, ok: bool, expected: str) -> None:
        """Raise the errors every layer gives: not a Tensor, wrong shape, wrong dtype."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{self!r}: expected a tinyunits Tensor, got {type(x).__name__}")
        if not ok:
            raise ValueError(f"{self!r}: expected input {expected}, got {tuple(x.shape)}")
        # its own first parameter's, or in a block (HanMixerBlock) its first layer's
        first = next((p for _, p in self.named_parameters()), None)
        dtype = None if first is None else first.dtype
        if dtype is not None and x.dtype != dtype:
            raise TypeError(f"{self!r}: expected {dtype} input (the dtype of its "
                            f"parameters), got {x.dtype}")

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not self._modules:
            return head + ")"
        body = "".join(f"\n  ({name}): " + repr(m).replace("\n", "\n  ")
                       for name, m in self._modules.items())
        return head + body + "\n)"


def _kind(value) -> str:
    return "None" if value is None else type(value).__name__


def _unregistered(value, inside=False):
    """What a Module could not register in `value` though it looks trainable (a
    description), or None: a Module or Parameter inside a container, or a tensor that
    requires grad that is no Parameter."""
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        items = value.values() if isinstance(value, dict) else value
        found = next((d for d in (_unregistered(v, True) for v in items) if d), None)
        return None if found is None else f"a {type(value).__name__} holding {found}"
    if inside and isinstance(value, (Module, Parameter)):
        return f"a {type(value).__name__}"
    if isinstance(value, Tensor) and value.requires_grad and not isinstance(value, Parameter):
        return "a Tensor with requires_grad=True (not an nn.Parameter)"
    return None
