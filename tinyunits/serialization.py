"""Checkpoints as .npz files: written atomically, read without pickle.

    tu.save(model, "model.npz")          # or a plain {name: array} dict
    tu.load("model.npz", model)          # copies into model, checking every key and shape

The file holds one array per parameter and buffer plus `"__model__"`, the class
name of the model, so loading a checkpoint of another model fails clearly. It is
written to a temporary file in the same folder and renamed into place, so a crash
mid-write never leaves a half-written checkpoint under the real name; the next
save to that name removes such a crash's temporary file.
"""
from __future__ import annotations

import glob
import os
import tempfile
import zipfile
import zlib

from . import backend

_MODEL_KEY = "__model__"


def save(obj, path) -> None:
    """Save a Module's state_dict (or a dict of arrays) to `path` (.npz)."""
    np = backend.host_module()
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a str or path-like, got {type(path).__name__}")
    if not (hasattr(obj, "state_dict") or isinstance(obj, dict)):
        raise TypeError(f"save: obj must be a Module or a dict of arrays, got "
                        f"{type(obj).__name__}")
    state = obj.state_dict() if hasattr(obj, "state_dict") else dict(obj)
    arrays = {}
    for name, a in state.items():
        arrays[name] = backend.to_host(a) if backend.is_array(a) else np.asarray(a)
        if not isinstance(name, str) or name == _MODEL_KEY or arrays[name].dtype.kind not in "biufc":
            raise TypeError(f"save: every entry must be a numeric array under a str name "
                            f"other than {_MODEL_KEY!r}, got {name!r}: {arrays[name].dtype}")
    if hasattr(obj, "state_dict"):
        arrays[_MODEL_KEY] = np.array(type(obj).__name__)
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    prefix = f".{os.path.basename(target)}.tmp-"
    try:
        # a save killed mid-write left its temporary behind: drop it now
        for stale in glob.glob(os.path.join(glob.escape(folder), glob.escape(prefix) + "*")):
            os.unlink(stale)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".npz")
    except OSError as err:
        raise _write_error(target, err) from err
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        os.unlink(tmp)
        if isinstance(err, OSError):
            raise _write_error(target, err) from err
        raise


def _write_error(target, err):
    """The same kind of OSError, naming the path the user gave (not our temporary)."""
    return type(err)(f"save: cannot write {target} ({err.strerror or err})")


def load(path, model=None):
    """Read `path`; with a model, load into it (and return it); else return the dict.

    Every key, shape and dtype is checked before the model changes: a failed load
    leaves the model as it was.
    """
    np = backend.host_module()
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load: path must be a str or path-like, got {type(path).__name__}")
    if model is not None and not hasattr(model, "load_state_dict"):
        raise TypeError(f"load: model must be a Module, got {type(model).__name__}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load: no checkpoint file at {os.fspath(path)}")
    try:
        with np.load(os.fspath(path), allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as err:
        raise ValueError(f"load: {os.fspath(path)} is not a readable tinyunits checkpoint "
                         f"({err})") from err
    saved_as = str(arrays.pop(_MODEL_KEY)) if _MODEL_KEY in arrays else None
    for name, a in arrays.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError(f"load: {os.fspath(path)} holds non-finite values in {name}")
    if model is None:
        return arrays
    if saved_as is not None and saved_as != type(model).__name__:
        raise ValueError(f"load: {os.fspath(path)} is a checkpoint of {saved_as}, "
                         f"not of {type(model).__name__}")
    model.load_state_dict(arrays)
    return model
