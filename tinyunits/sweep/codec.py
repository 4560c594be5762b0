"""Settings and results as JSON: the store's keys, and the text it keeps of a result.

A trial's settings are keyed by their canonical JSON (sorted keys, no spaces), so the
same settings in another order are the same trial. A result may hold what JSON cannot:
a non-finite float is kept as {"__float__": "nan" | "inf" | "-inf"} (SQLite's JSON
functions refuse bare NaN) and an array as {"__array__": base64 of its bytes, "dtype":
"<f4", "shape": [...]}; a dict of the trial's own whose keys are exactly those of a
marker is kept as {"__dict__": [[key, value], ...]}. decode_result turns all three
back. No pickle.
"""
import base64
import hashlib
import json
import math

from .. import backend


def canonical(settings) -> str:
    """The settings as canonical JSON: sorted keys, no spaces; 1 and 1.0 differ."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), allow_nan=False)


def trial_key(settings) -> str:
    """The stable key of a trial: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical(settings).encode()).hexdigest()


# A dict with exactly one of these key sets is read back as the marker's value, so a
# result's own dict with such keys is escaped as {"__dict__": [[key, value], ...]}.
MARKERS = ({"__float__"}, {"__array__", "dtype", "shape"}, {"__dict__"})


def _encode(value, where):
    """A result value as plain JSON (see the module docstring); `where` names it in errors."""
    np = backend.host_module()
    if backend.is_array(value):
        value = backend.to_host(value)
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"sweep.run: {where} is an object array; return numbers")
        a = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        return {"__array__": base64.b64encode(a.tobytes()).decode(), "dtype": a.dtype.str,
                "shape": list(a.shape)}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items = {k: _encode(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {"__dict__": [[k, v] for k, v in items.items()]} if set(items) in MARKERS \
            else items
    raise TypeError(f"sweep.run: {where} is a {type(value).__name__}; a trial returns "
                    "numbers, strings, arrays, and lists or dicts of them")


def _decode_object(obj):
    if set(obj) == {"__float__"}:
        return float(obj["__float__"])
    if set(obj) == {"__array__", "dtype", "shape"}:
        np = backend.host_module()
        return np.frombuffer(base64.b64decode(obj["__array__"]), dtype=obj["dtype"]) \
            .reshape(obj["shape"]).copy()
    if set(obj) == {"__dict__"}:  # the pairs' values are decoded already (inside out)
        return dict(obj["__dict__"])
    return obj


def encode_result(result) -> str:
    """A trial's result dict as the JSON text the store keeps."""
    if not isinstance(result, dict):
        raise TypeError(f"sweep.run: a trial function must return a dict, got {type(result).__name__}")
    return json.dumps(_encode(result, "the trial's result"), allow_nan=False)


def decode_result(text):
    """The stored JSON text back as a result dict, arrays and non-finite floats restored."""
    return None if text is None else json.loads(text, object_hook=_decode_object)
