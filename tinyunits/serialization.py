"""Checkpoints as .npz files: written atomically, read without pickle.

    tu.save(model, "model.npz")          # or a flat {name: array, Tensor or number} dict
    tu.load("model.npz", model)          # copies into model, checking every key and shape

The file holds one array per parameter and buffer plus `"__model__"`, the class
name of the model, so loading a checkpoint of another model fails clearly.

Writing. save writes a temporary file beside the target and renames it into
place, so a crash mid-write never leaves a half-written checkpoint under the real
name. Through a symlink, the file the link points to is written (the link stays a
link). Several processes or threads may save to one path at once: each writes its
own temporary (`.<name>.tmp-<pid>-<random>.npz`, created exclusively), every save
succeeds, and the last rename wins. A temporary that a killed save left behind
is removed by a later save to that name, once it is untouched for STALE_AFTER
seconds and the process named in it is not running here: a live save writes its
temporary continuously, so nothing a running save still needs is ever removed.
The file gets the mode np.save would give it: an existing file keeps its mode,
a new one gets 0o666 less the umask.

Non-finite values. A checkpoint holds no NaN or inf, on both sides: save refuses
them before it touches the file (whatever is there, typically the last good
checkpoint of a run that has since diverged, stays as it was), and load refuses
a file holding them (written by other code), since a model loaded from it would
compute NaN.
"""
from __future__ import annotations

import contextlib
import glob
import os
import secrets
import time
import zipfile
import zlib

from . import backend
from .tensor import Tensor

_MODEL_KEY = "__model__"
STALE_AFTER = 600.0  # seconds a temporary must be untouched before another save removes it


def save(obj, path) -> None:
    """Save a Module's state_dict, or a flat dict of arrays, Tensors and numbers, to
    `path` (.npz); load(path) gives that dict back with an array for each entry."""
    np = backend.host_module()
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a str or path-like, got {type(path).__name__}")
    if not (hasattr(obj, "state_dict") or isinstance(obj, dict)):
        raise TypeError(f"save: obj must be a Module or a dict of arrays, got "
                        f"{type(obj).__name__}")
    state = obj.state_dict() if hasattr(obj, "state_dict") else dict(obj)
    arrays = {name: _host_array(name, a) for name, a in state.items()}
    bad = _non_finite(arrays)
    if bad is not None:
        raise ValueError(f"save: obj must hold finite values only (load refuses NaN and inf), "
                         f"got non-finite values in {bad}; {os.fspath(path)} was not touched")
    if hasattr(obj, "state_dict"):
        arrays[_MODEL_KEY] = np.array(type(obj).__name__)
    target = os.path.realpath(path)  # through a symlink: write the file it points to
    try:
        _remove_stale_temporaries(target)
        fd, tmp = _temporary(target)
    except OSError as err:
        raise _write_error(os.fspath(path), err) from err
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise _write_error(os.fspath(path), err) from err
        raise


def _host_array(name, value):
    """The host array save writes for one entry of a dict: a numeric array, a Tensor's
    array, a number or a list of numbers; anything else (a nested dict, a list of
    tensors, a string) is a TypeError naming the entry, raised before the file is touched."""
    np = backend.host_module()
    if isinstance(value, Tensor):  # saved as its array; load gives the array back
        value = value.data
    array = None
    if backend.is_array(value):
        array = backend.to_host(value)
    elif not (isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value)):
        try:  # (a list of tensors NumPy would read element by element, into objects)
            array = np.asarray(value)
        except ValueError:  # a ragged list
            pass
    if (not isinstance(name, str) or name == _MODEL_KEY or array is None
            or array.dtype.kind not in "biufc"):
        kind = type(value).__name__
        raise TypeError(f"save: every entry must be a numeric array, a Tensor or a number "
                        f"under a str name other than {_MODEL_KEY!r} (one flat dict: name "
                        "nested entries 'model.weight', or save each part to its own file), "
                        f"got {name!r}: {kind if array is None else array.dtype}")
    return array


def _prefix(target):
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.tmp-")


def _temporary(target):
    """(fd, path) of a new temporary beside `target`, with the mode np.save would give it."""
    tmp = f"{_prefix(target)}{os.getpid()}-{secrets.token_hex(8)}.npz"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        os.fchmod(fd, os.stat(target).st_mode & 0o777)  # replacing a file: keep its mode
    except FileNotFoundError:
        pass
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp


def _remove_stale_temporaries(target):
    """Remove what killed saves to `target` left: temporaries untouched for STALE_AFTER
    seconds whose process is not running here (see the module docstring)."""
    now = time.time()
    for tmp in glob.glob(glob.escape(_prefix(target)) + "*"):
        try:
            stale = now - os.stat(tmp).st_mtime > STALE_AFTER and not _owner_running(tmp)
            if stale:
                os.unlink(tmp)
        except FileNotFoundError:  # another save renamed or removed it meanwhile
            pass


def _owner_running(tmp):
    """Whether the pid in a temporary's name is a running process on this machine.

    A name without one (an older tinyunits wrote it) counts as not running; off
    POSIX every owner counts as running, since os.kill(pid, 0) is no probe there.
    """
    if os.name != "posix":
        return True
    pid = os.path.basename(tmp).rsplit(".tmp-", 1)[1].split("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # running, as another user
        return True
    return True


def _non_finite(arrays):
    """The name of the first array holding NaN or inf, or None."""
    np = backend.host_module()
    return next((name for name, a in arrays.items()
                 if a.dtype.kind in "fc" and not np.isfinite(a).all()), None)


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
    bad = _non_finite(arrays)
    if bad is not None:
        raise ValueError(f"load: {os.fspath(path)} holds non-finite values in {bad}")
    if model is None:
        return arrays
    if saved_as is not None and saved_as != type(model).__name__:
        raise ValueError(f"load: {os.fspath(path)} is a checkpoint of {saved_as}, "
                         f"not of {type(model).__name__}")
    model.load_state_dict(arrays)
    return model
