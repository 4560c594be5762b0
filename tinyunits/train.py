"""The training loop: fit, evaluate, and early stopping that keeps the best weights.

    history = fit(model, nn.functional.cross_entropy, optimizer,
                  train_data=(x_train, y_train), val_data=(x_val, y_val),
                  epochs=20, batch_size=128, metric=accuracy, patience=5)

Data are host arrays; each batch moves to the backend as it is used, floating
X (and floating targets y) cast to the model's dtype, the dtype of its parameters
(float32 data for a float64 model are computed in float64, float64 data for a
float32 model in float32: the graph stays in the model's dtype). Values that
dtype cannot hold (1e39 for float32) are refused, not made inf. Integer data
(labels, uint8 images) keep their dtype. A loss
that turns NaN or infinite stops training with an error naming the epoch and
step, instead of quietly training on garbage; so does a loss_fn that returns more
than one value or no graph to the parameters. fit and evaluate hand the model
back in the train/eval modes it came in, every submodule's own, also when a loss
or metric raises. Integer labels are checked once per data set, and their
batches go to the loss as CheckedLabels, so that cross_entropy does not read
every batch's labels back from the device.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import numbers
import os
import sys

from . import validate
from . import backend, resume
from .ops.loss import CheckedLabels, label_range
from .tensor import Tensor, get_default_dtype, no_grad, tensor


class History(dict):
    """Per-epoch lists: train_loss, val_loss, val_metric (a dict, so it prints and saves)."""

    def __init__(self):
        super().__init__(train_loss=[], val_loss=[], val_metric=[])
        self.best_epoch = None


def accuracy(logits: Tensor, labels) -> float:
    """Fraction of rows whose largest logit is at the label."""
    labels = labels.data if isinstance(labels, Tensor) else labels
    if not isinstance(logits, Tensor) or logits.ndim != 2 or not logits.shape[0]:
        validate.fail("accuracy", "logits", "a Tensor (N, classes) with N >= 1",
                      getattr(logits, "shape", type(logits).__name__))
    if not backend.is_array(labels) or labels.dtype.kind not in "iu":
        validate.fail("accuracy", "labels", "an integer array",
                      getattr(labels, "dtype", type(labels).__name__), TypeError)
    if tuple(labels.shape) != tuple(logits.shape[:1]):
        validate.fail("accuracy", "labels", f"of shape ({logits.shape[0]},) for logits "
                      f"{tuple(logits.shape)}", tuple(labels.shape))
    return (logits.data.argmax(axis=1) == labels).mean().item()


def _model_dtype(where, model):
    """The dtype floating data are cast to: that of the model's parameters (the module
    docstring); the default dtype for a model without any."""
    parameters = model.parameters() if callable(getattr(model, "parameters", None)) else []
    dtypes = sorted({str(p.dtype) for p in parameters})
    if len(dtypes) > 1:
        validate.fail(where, "model", "of one floating dtype (cast it with model.astype), "
                      "since the data are cast to it", f"parameters of dtypes {dtypes}")
    return dtypes[0] if dtypes else get_default_dtype()


def _check_data(where, name, data, dtype):
    """(X, y): arrays of equal non-zero length, finite, labels 1-D and >= 0 if integer,
    floating values within `dtype`'s range. Returns X, y and, for integer labels,
    high = their maximum + 1 (else None).

    Runs once per call on the whole data set (one host sync on a device array),
    never per batch.
    """
    limit = float(backend.host_module().finfo(dtype).max)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        validate.fail(where, name, "a pair (X, y)", data, TypeError)
    for part, a in zip("Xy", data):
        if not backend.is_array(a):
            validate.fail(where, f"{name} {part}", "an array", type(a).__name__, TypeError)
        if a.ndim == 0 or a.dtype.kind not in "fiu":
            validate.fail(where, f"{name} {part}", "a numeric array with a row axis",
                          f"{a.dtype} of shape {tuple(a.shape)}", TypeError)
        if a.dtype.kind == "f" and not backend.get_array_module(a).isfinite(a).all().item():
            validate.fail(where, f"{name} {part}", "finite (no NaN or inf)", "non-finite values")
        floating = a.dtype.kind == "f" and a.size
        largest = backend.get_array_module(a).abs(a).max().item() if floating else 0
        if largest > limit:
            validate.fail(where, f"{name} {part}", f"within the range of the model's {dtype} "
                          f"(|values| <= {limit:.3g}; they are cast to it)", largest)
    X, y = data
    if len(X) == 0:
        validate.fail(where, f"{name} X", "non-empty", f"shape {tuple(X.shape)}")
    if len(X) != len(y):
        validate.fail(where, f"{name} y", f"one row per row of X ({len(X)})", f"{len(y)} rows")
    if y.dtype.kind in "iu":
        if y.ndim != 1:
            validate.fail(where, f"{name} y", "1-D integer labels (N,)", f"shape {tuple(y.shape)}")
        low, top = label_range(y)
        if low < 0:
            validate.fail(where, f"{name} y", "labels >= 0", f"minimum {low}")
        return X, y, top + 1
    return X, y, None


def _inputs(X, idx, dtype):
    """A batch of X on the backend, floating data in the model's dtype."""
    return tensor(X[idx], dtype=dtype if X.dtype.kind == "f" else None)


def _targets(y, idx, high, dtype):
    """A batch of y on the backend; integer labels carry their data set's checked bound."""
    return _inputs(y, idx, dtype) if high is None else CheckedLabels(backend.asarray(y[idx]), high)


def _progress(iterable, total, desc, progress):
    """A tqdm bar on a terminal; silent when output is piped or progress=False."""
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False)


@contextlib.contextmanager
def _mode(model, training):
    """The model in train (or eval) mode inside the block; after it, even on an error,
    every submodule is back in the mode it had (parents first, so children win)."""
    modes = [(m, m.training) for _, m in model.named_modules()]
    model.train(training)
    try:
        yield
    finally:
        for m, mode in modes:
            m.train(mode)


def _loss_value(where, loss, training):
    """The float value of a loss_fn result, after checking it is one value and, when
    training, that backward can reach the parameters from it."""
    if not isinstance(loss, Tensor):
        raise TypeError(f"{where}: loss_fn must return a Tensor, got {type(loss).__name__}")
    if loss.size != 1:
        raise ValueError(f"{where}: loss_fn must return a scalar Tensor (one value: reduce the "
                         f"per-row losses, e.g. with .mean()), got shape {tuple(loss.shape)}")
    if training and not loss.requires_grad:
        raise ValueError(f"{where}: loss_fn must return a Tensor computed from the model's "
                         "trainable parameters, got one without a graph (requires_grad=False)")
    return loss.item()


def _metric_value(where, value):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{where}: metric must return a real number (e.g. .item() of a "
                        f"Tensor), got {type(value).__name__}")
    return value


def _batches(n, batch_size, rng, shuffle):
    order = rng.permutation(n) if shuffle else backend.host_module().arange(n)
    for start in range(0, n, batch_size):
        yield order[start:start + batch_size]


def evaluate(model, X, y, loss_fn=None, metric=accuracy, batch_size=1024):
    """(mean loss or None, mean metric or None) over (X, y), in eval mode, without a graph;
    floating data are cast to the model's dtype (the module docstring)."""
    validate.callables("evaluate", model=model, loss_fn=loss_fn, metric=metric)
    validate.integer("evaluate", "batch_size", batch_size)
    dtype = _model_dtype("evaluate", model)
    return _evaluate("evaluate", model, *_check_data("evaluate", "data", (X, y), dtype), loss_fn,
                     metric, batch_size, dtype)


def _evaluate(where, model, X, y, high, loss_fn, metric, batch_size, dtype):
    losses, metrics, counts = [], [], []
    with no_grad(), _mode(model, False):
        for start in range(0, len(X), batch_size):
            idx = slice(start, start + batch_size)  # in order: a slice, not a copy
            out = model(_inputs(X, idx, dtype))
            target = _targets(y, idx, high, dtype)
            counts.append(len(out))
            if loss_fn is not None:
                losses.append(_loss_value(where, loss_fn(out, target), training=False))
            if metric is not None:
                metrics.append(_metric_value(where, metric(out, target)))
    total = sum(counts)

    def weighted(values):
        return sum(v * c for v, c in zip(values, counts)) / total if values else None
    return weighted(losses), weighted(metrics)


def _name(fn):
    return None if fn is None else getattr(fn, "__qualname__", type(fn).__name__)


def _check_settings(model, loss_fn, optimizer, scheduler, metric, after_step, val_data, epochs,
                    batch_size, patience, seed, shuffle, backup, progress):
    """fit's arguments other than the data -> (epochs, batch_size) as ints."""
    validate.callables("fit", model=model, metric=metric, after_step=after_step)
    if not callable(loss_fn):
        validate.fail("fit", "loss_fn", "callable", loss_fn, TypeError)
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler)):
        if (obj is not None or name == "optimizer") and not callable(getattr(obj, "step", None)):
            validate.fail("fit", name, "an object with a step() method", obj, TypeError)
    epochs = validate.integer("fit", "epochs", epochs, low=0)
    batch_size = validate.integer("fit", "batch_size", batch_size)
    if patience is not None:
        validate.integer("fit", "patience", patience)
    for name, value in (("patience", patience), ("metric", metric)):
        if value is not None and val_data is None:
            validate.fail("fit", name, "None when val_data is None (it acts on the validation "
                          "scores)", value)
    validate.integer("fit", "seed", seed, low=0)
    validate.flag("fit", "shuffle", shuffle)
    if backup is not None and not isinstance(backup, (str, os.PathLike)):
        validate.fail("fit", "backup", "a file path or None", backup, TypeError)
    if backup is not None and (os.path.isdir(backup) or not os.path.isdir(
            os.path.dirname(os.path.abspath(backup)))):
        validate.fail("fit", "backup", "a file in an existing folder", os.fspath(backup))
    if progress is not None:
        validate.flag("fit", "progress", progress)
    return epochs, batch_size


def _finite(value, epoch, step):
    """The loss value, once it is known to be finite: a NaN or infinite loss would go on
    to train on garbage."""
    if not math.isfinite(value):
        raise FloatingPointError(f"fit: loss became {value} at epoch {epoch + 1}, step "
                                 f"{step + 1}; lower the learning rate or check the data")
    return value


class _EarlyStopping:
    """The best epoch so far (the highest validation score; in history.best_epoch) and the
    epochs since it; with patience, also its weights, and whether to stop."""

    def __init__(self, patience, history):
        self.patience, self.history = patience, history
        self.score, self.weights, self.waited = -math.inf, None, 0

    def stop(self, epoch, score, model) -> bool:
        """Take in an epoch's score; True once `patience` epochs have not bettered the best
        (a score equal to the best does not: the earlier epoch stays the best)."""
        if score > self.score:
            self.score, self.history.best_epoch, self.waited = score, epoch, 0
            if self.patience is not None:
                self.weights = {k: v.copy() for k, v in model.state_dict().items()}
            return False
        self.waited += 1
        return self.patience is not None and self.waited >= self.patience

    def restore(self, model):
        """Give the model the best epoch's weights, where patience kept them."""
        if self.weights is not None:
            model.load_state_dict(self.weights)


def fit(model, loss_fn, optimizer, train_data, val_data=None, epochs=1, batch_size=128,
        scheduler=None, metric=None, patience=None, progress=None, seed=0,
        after_step=None, shuffle=True, backup=None) -> History:
    """Train for `epochs`; with patience, stop early and restore the best val weights.

    Each epoch visits the rows in a fresh order drawn from `seed`, or, with
    shuffle=False, in the same order every epoch (as some papers' scripts did).
    after_step(model) runs after every optimiser step (e.g. FocusingLinear.constrain).
    The best epoch is the lowest val loss, or the highest val metric when one is given.
    metric and patience act on val_data, so they need it. The model trains in train
    mode and is handed back in the modes it came in. Floating data are cast to the
    model's dtype, batch by batch (the module docstring).

    backup: a file path (.npz) to resume from after an interruption. fit writes it at the
    end of every epoch and every resume.INTERVAL seconds within one, and removes it when
    it returns; a fit that finds it there goes on after the step it holds and computes
    what the uninterrupted run would have (the optimiser's and the scheduler's state, the
    batch order and the generators included: tinyunits.resume). A backup of another run
    is refused, not overwritten.
    """
    epochs, batch_size = _check_settings(model, loss_fn, optimizer, scheduler, metric,
                                         after_step, val_data, epochs, batch_size, patience,
                                         seed, shuffle, backup, progress)
    dtype = _model_dtype("fit", model)
    X, y, high = _check_data("fit", "train_data", train_data, dtype)
    if val_data is not None:
        val_data = _check_data("fit", "val_data", val_data, dtype)
    rng = backend.host_module().random.default_rng(seed)
    history, n_steps = History(), math.ceil(len(X) / batch_size)
    early = _EarlyStopping(patience, history)
    backups = resume.Backups(backup, model, optimizer, scheduler, history, early, n_steps,
                             (X, y) if val_data is None else (X, y, *val_data[:2]),
                             loss=_name(loss_fn), metric=_name(metric), epochs=epochs,
                             batch_size=batch_size, seed=seed, shuffle=shuffle,
                             patience=patience)
    first, within = backups.resume(rng)  # where a backup left off; else epoch 0, step 0
    with _mode(model, True):
        for epoch in range(first, epochs):
            order = rng.bit_generator.state  # a backup within the epoch draws its order again
            done, total, count = within if epoch == first else (0, 0.0, 0)
            batches = itertools.islice(_batches(len(X), batch_size, rng, shuffle), done, None)
            for step, idx in enumerate(_progress(batches, n_steps - done,
                                                 f"epoch {epoch + 1}/{epochs}", progress),
                                       start=done):
                loss = loss_fn(model(_inputs(X, idx, dtype)), _targets(y, idx, high, dtype))
                value = _finite(_loss_value("fit", loss, training=True), epoch, step)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if after_step is not None:
                    after_step(model)
                total, count = total + value * len(idx), count + len(idx)
                backups.within_epoch(epoch, (step + 1, total, count), order)
            if scheduler is not None:
                scheduler.step()
            history["train_loss"].append(total / count)
            if val_data is not None:
                val_loss, val_metric = _evaluate("fit", model, *val_data, loss_fn, metric,
                                                 1024, dtype)
                history["val_loss"].append(val_loss)
                history["val_metric"].append(val_metric)
                if early.stop(epoch, val_metric if metric is not None else -val_loss, model):
                    break
            backups.end_of_epoch(epoch + 1, rng.bit_generator.state)
    early.restore(model)
    backups.remove()
    return history
