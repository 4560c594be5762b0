"""The one array interface: NumPy on the CPU, CuPy on the GPU, or "strict".

Every array in tinyunits lives on one backend, and everything that touches array
data finds its module through `get_array_module(x)` (DeZero's idiom): the same
code then runs on NumPy and on CuPy. This is the only module of the library that
imports numpy or cupy for array math.

The "strict" backend is NumPy underneath, but its arrays behave like CuPy's:
mixing them with plain NumPy arrays, or converting them to host values without
saying so (np.asarray, float(), iteration, `if array:`), raises TypeError. A
test suite run with TINYUNITS_BACKEND=strict therefore proves, on a machine with
no GPU, that the engine never silently leaves the device.

Choose the backend with `set_backend("numpy" | "cupy" | "strict")` or the
environment variable TINYUNITS_BACKEND (read once, at import).
"""
from __future__ import annotations

import importlib
import os
import types

import numpy

_NAMES = ("numpy", "cupy", "strict")


# --------------------------------------------------------------------------- strict
class StrictArray:
    """A NumPy array that refuses to meet the host, as a CuPy array does."""

    __slots__ = ("_a",)
    __array_priority__ = 100.0

    def __init__(self, a):
        self._a = a

    # Host conversion must be explicit (to_host), as CuPy's .get() is.
    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"strict backend: implicit conversion of a device array {self._a.shape} "
            "to a host NumPy array; use tinyunits.backend.to_host(x)")

    def _refuse(self, what):
        raise TypeError(f"strict backend: {what} of a device array {self._a.shape} "
                        "would copy it to the host; use .item() or to_host(x)")

    def __float__(self):
        self._refuse("float()")

    def __int__(self):
        self._refuse("int()")

    def __bool__(self):
        self._refuse("truth value")

    def __iter__(self):
        self._refuse("iteration")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name):
        if name.startswith("__"):  # __array_interface__ & co. would leak the host array
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            return lambda *a, **k: _wrap(attr(*_unwrap(a), **_unwrap(k)))
        return _wrap(attr)

    def __getitem__(self, index):
        return _wrap(self._a[_unwrap(index)])

    def __setitem__(self, index, value):
        self._a[_unwrap(index)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __repr__(self):
        return "strict" + repr(self._a)

    def get(self):
        """The explicit device-to-host copy (CuPy's spelling)."""
        return self._a.copy()


def _binary(ufunc):
    def forward(self, other):
        return NotImplemented if _defers_to(other) else ufunc(self, other)

    def reverse(self, other):
        return NotImplemented if _defers_to(other) else ufunc(other, self)
    return forward, reverse


def _defers_to(other) -> bool:
    """As CuPy's arrays do: an object of higher __array_priority__ (a Tensor) gets its
    own reflected operator (array * Tensor is a Tensor, not an object array of them)."""
    return (getattr(other, "__array_priority__", 0.0) > StrictArray.__array_priority__
            and not isinstance(other, (StrictArray, numpy.ndarray)))


def _inplace(ufunc):
    def op(self, other):
        ufunc(self._a, _unwrap(other), out=self._a)
        return self
    return op


for _name, _ufunc in dict(add=numpy.add, sub=numpy.subtract, mul=numpy.multiply,
                          truediv=numpy.true_divide, pow=numpy.power,
                          matmul=numpy.matmul, floordiv=numpy.floor_divide,
                          mod=numpy.remainder, and_=numpy.bitwise_and,
                          or_=numpy.bitwise_or).items():
    _name = _name.rstrip("_")
    _fwd, _rev = _binary(_ufunc)
    setattr(StrictArray, f"__{_name}__", _fwd)
    setattr(StrictArray, f"__r{_name}__", _rev)
    setattr(StrictArray, f"__i{_name}__", _inplace(_ufunc))
for _name, _ufunc in dict(lt=numpy.less, le=numpy.less_equal, gt=numpy.greater,
                          ge=numpy.greater_equal, eq=numpy.equal,
                          ne=numpy.not_equal).items():
    setattr(StrictArray, f"__{_name}__", _binary(_ufunc)[0])
StrictArray.__neg__ = lambda self: numpy.negative(self)
StrictArray.__abs__ = lambda self: numpy.absolute(self)
StrictArray.__invert__ = lambda self: numpy.invert(self)
StrictArray.__hash__ = None


def _unwrap(obj):
    """Strip StrictArrays for NumPy; refuse host arrays, as CuPy does."""
    if isinstance(obj, StrictArray):
        return obj._a
    if isinstance(obj, numpy.ndarray):
        raise TypeError(f"strict backend: a host NumPy array {obj.shape} {obj.dtype} "
                        "was mixed with device arrays; move it with "
                        "tinyunits.backend.asarray(x) first")
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unwrap(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _unwrap(v) for k, v in obj.items()}
    return obj


def _wrap(obj):
    # Reductions return 0-d arrays on a device, not host scalars.
    if isinstance(obj, (numpy.ndarray, numpy.generic)):
        return StrictArray(numpy.asarray(obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_wrap(o) for o in obj)
    return obj


class _StrictModule(types.ModuleType):
    """numpy's namespace, with every function taking and returning StrictArray."""

    # Host-to-device transfers are allowed when asked for by name, as cupy.asarray.
    _TRANSFERS = {"asarray", "array", "ascontiguousarray"}

    def __init__(self):
        super().__init__("tinyunits.strict")
        self.ndarray = StrictArray

    def __getattr__(self, name):
        obj = getattr(numpy, name)
        if isinstance(obj, type) or not callable(obj):
            return obj
        if name in self._TRANSFERS:
            return lambda a, *args, **kw: StrictArray(obj(_host_or_same(a), *args, **kw))
        return lambda *args, **kw: _wrap(obj(*_unwrap(args), **_unwrap(kw)))


def _host_or_same(a):
    return a._a if isinstance(a, StrictArray) else a


strict = _StrictModule()


# --------------------------------------------------------------------------- choice
class _State:
    name = "numpy"
    xp = numpy
    host_rng = numpy.random.default_rng(0)
    device_rng = numpy.random.default_rng(1)


def import_cupy():
    """CuPy itself, imported here only: a clear error where it is not installed."""
    try:
        import cupy
    except ImportError as err:  # pragma: no cover - no GPU here
        raise RuntimeError("backend 'cupy' needs CuPy: pip install 'tinyunits[gpu]' "
                           "on a machine with CUDA") from err
    return cupy


def import_cudnn():
    """CuPy's cuDNN bindings (cupyx.cudnn), or None where this CuPy has none (CuPy 14
    removed them; CuPy 13 without libcudnn fails to load them)."""
    try:
        return importlib.import_module("cupyx.cudnn")
    except ImportError:
        return None


def set_backend(name: str) -> None:
    """Make `name` ("numpy", "cupy" or "strict") the backend for new arrays."""
    if name not in _NAMES:
        raise ValueError(f"set_backend: expected one of {_NAMES}, got {name!r}")
    _State.xp = {"numpy": numpy, "strict": strict}.get(name) or import_cupy()
    _State.name = name
    manual_seed(0)


def get_backend() -> str:
    return _State.name


def get_array_module(x=None):
    """The array module of `x` (numpy, cupy or strict); the current one for None."""
    if x is None:
        return _State.xp
    if isinstance(x, numpy.ndarray):
        return numpy
    if isinstance(x, StrictArray):
        return strict
    if type(x).__module__.startswith("cupy"):  # pragma: no cover - no GPU here
        return import_cupy()
    return _State.xp


def is_array(x) -> bool:
    return isinstance(x, (numpy.ndarray, StrictArray)) or type(x).__module__.startswith("cupy")


def asarray(data, dtype=None):
    """Move host data (lists, scalars, NumPy arrays) onto the current backend."""
    return _State.xp.asarray(data, dtype=dtype)


def ensure_array(y):
    """NumPy hands back scalars from 0-d arithmetic; the engine wants arrays."""
    return numpy.asarray(y) if isinstance(y, numpy.generic) else y


def to_host(a) -> numpy.ndarray:
    """An explicit device-to-host copy: always a plain NumPy array."""
    if isinstance(a, numpy.ndarray):
        return a
    if isinstance(a, StrictArray) or hasattr(a, "get"):
        return a.get()
    return numpy.asarray(a)


# --------------------------------------------------------------------------- ops the libraries spell differently
def scatter_add(a, indices, values) -> None:
    """a[indices] += values, with repeated indices adding up (in place)."""
    xp = get_array_module(a)
    if xp is numpy or xp is strict:  # a StrictArray reaches add.at via __array_ufunc__
        numpy.add.at(a, indices, values)
    else:  # pragma: no cover - no GPU here
        import cupyx
        cupyx.scatter_add(a, indices, values)


def sliding_window_view(x, window_shape, axis):
    """Read-only strided windows of x (no copy) on any backend."""
    xp = get_array_module(x)
    if xp is strict:
        return StrictArray(numpy.lib.stride_tricks.sliding_window_view(
            x._a, window_shape, axis=axis))
    return xp.lib.stride_tricks.sliding_window_view(x, window_shape, axis=axis)


# --------------------------------------------------------------------------- randomness
def manual_seed(seed: int) -> None:
    """Seed both generators: host (initialisation, shuffling) and device (dropout)."""
    _State.host_rng = numpy.random.default_rng(seed)
    xp = _State.xp
    if xp is numpy or xp is strict:
        _State.device_rng = numpy.random.default_rng(seed + 1)
    else:  # pragma: no cover - no GPU here
        _State.device_rng = xp.random.default_rng(seed + 1)


def host_module():
    """numpy itself, for work that is host-side on purpose (initialisation, checks)."""
    return numpy


def host_rng() -> numpy.random.Generator:
    """Initialisers draw here, so CPU and GPU models start from the same numbers."""
    return _State.host_rng


def generator_states() -> dict:
    """The host and device generators' states as plain JSON, for fit's backups. CuPy's
    generator does not show its state: "device" is None there."""
    device = _State.device_rng
    return {"host": _State.host_rng.bit_generator.state,
            "device": (device.bit_generator.state
                       if isinstance(device, numpy.random.Generator) else None)}


def set_generator_states(states: dict) -> None:
    """Put generator_states()'s states back (a None device state leaves CuPy's as it is)."""
    _State.host_rng.bit_generator.state = states["host"]
    if states["device"] is not None and isinstance(_State.device_rng, numpy.random.Generator):
        _State.device_rng.bit_generator.state = states["device"]


def device_uniform(shape, dtype):
    """Uniform [0, 1) numbers made directly on the device (dropout masks)."""
    u = _State.device_rng.random(shape, dtype=dtype)
    return StrictArray(u) if _State.xp is strict else u


if os.environ.get("TINYUNITS_BACKEND"):
    set_backend(os.environ["TINYUNITS_BACKEND"])
