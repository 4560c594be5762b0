"""Checkpoints as .npz files: written atomically, read without pickle.

    tu.save(model, "model.npz")          # or a plain {name: array} dict
    tu.load("model.npz", model)          # copies into model, checking every key and shape

The file holds one array per parameter and buffer plus "__model__", the class
name of the model, so loading a checkpoint of another model fails clearly. It is
written to a temporary file in the same folder and renamed into place, so a crash
mid-write never leaves a half-written checkpoint under the real name.
"""
from __future__ import annotations

import os
import tempfile

from . import backend

_MODEL_KEY = "__model__"


def save(obj, path) -> None:
    """Save a Module's state_dict (or a dict of arrays) to `path` (.npz)."""
    np = backend.host_module()
    state = obj.state_dict() if hasattr(obj, "state_dict") else dict(obj)
    arrays = {name: backend.to_host(a) for name, a in state.items()}
    if hasattr(obj, "state_dict"):
        arrays[_MODEL_KEY] = np.array(type(obj).__name__)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load(path, model=None):
    """Read `path`; with a model, load into it (and return it); else return the dict."""
    np = backend.host_module()
    try:
        with np.load(os.fspath(path), allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError) as err:
        raise ValueError(f"load: {path} is not a readable tinyunits checkpoint ({err})") from err
    saved_as = str(arrays.pop(_MODEL_KEY)) if _MODEL_KEY in arrays else None
    if model is None:
        return arrays
    if saved_as is not None and saved_as != type(model).__name__:
        raise ValueError(f"load: {path} is a checkpoint of {saved_as}, "
                         f"not of {type(model).__name__}")
    model.load_state_dict(arrays)
    return model
