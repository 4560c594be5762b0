"""Backups of a fit in progress: fit(..., backup=path) goes on where a stopped run left off.

At the end of every epoch but the last, and within an epoch every INTERVAL seconds (an
epoch of a big net on a CPU can take many minutes), fit writes to `path` all that the
rest of the run depends on: the model's parameters and buffers, the optimiser's learning
rates and buffers, the scheduler's count, the generator that orders the batches (as it
was before it drew this epoch's order), the steps of the epoch done and their summed
loss, the library's own generators (tu.manual_seed's: initialisation, dropout), the
history, the best epoch's weights where patience keeps them, and the seconds it has
trained (a sweep adds them to the time of the attempt that resumes). A fit given a path
that holds a backup loads it, draws the epoch's order again and goes on with the step
after the last one the backup holds; on the NumPy backends it then computes, bit for
bit, what the run that was never stopped computes. (CuPy's generator does not show its
state: there, a model with dropout draws other masks after a resume.) When fit returns,
the file is removed; when fit raises, it stays, holding the last backup written.

A backup is written as tu.save writes a checkpoint (beside its target, renamed into
place, no pickle), so a run killed while writing keeps the backup of the epoch before.
It names its run: the model's modules and shapes, digests of its weights at the start
and of the data, the optimiser's and the scheduler's classes and hyper-parameters, the
loss, the metric, epochs, batch size, seed, shuffle and patience. A fit of another run
refuses a backup that is not its own, rather than resume from it or write over it.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import time

from . import validate
from . import backend, serialization

_RUN = "fit"  # the key of the run's JSON (its identity, epoch, history, generators)
_PARTS = ("model", "optimizer", "scheduler", "best")
INTERVAL = 300.0  # seconds of training between two backups within an epoch


class Backups:
    """The backups of one fit at `path`, or none where path is None: resume() takes the run
    up where its backup left it, within_epoch() and end_of_epoch() write one, remove()
    deletes it when the run is done. best: fit's early stopping, whose score, weights and
    epochs waited a backup holds; settings: the run's, as run_of takes them."""

    def __init__(self, path, model, optimizer, scheduler, history, best, steps, data,
                 **settings):
        self.clock = self.written = time.perf_counter()  # the training's seconds start
        self.path, self.spent, self.best = path, 0.0, best
        self.parts = model, optimizer, scheduler, history
        self.steps, self.epochs = steps, settings["epochs"]
        self.run = None if path is None else run_of(model, optimizer, scheduler, data,
                                                    **settings)

    def resume(self, order):
        """Load the backup, if there is one, into the run's parts, `order` (the batch
        generator) and best -> (the first epoch to train, (steps, summed loss, rows) of it
        done)."""
        model, optimizer, scheduler, history = self.parts
        saved = None if self.path is None else read(self.path, self.run, model, optimizer,
                                                    scheduler, order, history)
        if saved is None:
            return 0, (0, 0.0, 0)
        first, within, self.spent, best = saved
        self.best.score, self.best.weights, self.best.waited = best
        return first, within

    def within_epoch(self, epoch, within, order):
        """Back up the run `within` (steps, summed loss, rows) epoch `epoch` once INTERVAL
        seconds have passed since the last backup; not after its last step, which the
        epoch's end backs up. order: the batch generator's state before it drew the epoch."""
        if (self.path is not None and within[0] < self.steps
                and time.perf_counter() - self.written >= INTERVAL):
            self._write(epoch, within, order)

    def end_of_epoch(self, epochs_done, order):
        """Back up the run after `epochs_done` epochs, unless they are all of them."""
        if self.path is not None and epochs_done < self.epochs:
            self._write(epochs_done, (0, 0.0, 0), order)

    def _write(self, epoch, within, order):
        write(self.path, self.run, *self.parts, epoch, within, order,
              self.spent + time.perf_counter() - self.clock,
              (self.best.score, self.best.weights, self.best.waited))
        self.written = time.perf_counter()

    def remove(self):
        if self.path is not None:
            remove(self.path)


def run_of(model, optimizer, scheduler, data, **settings) -> dict:
    """The identity of a fit: what a backup must match to be resumed by it. The data and
    the model's weights at the start enter as digests, so a backup of a run on other data,
    from other initial weights or with other hyper-parameters is another run's."""
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler)):
        if obj is not None and not callable(getattr(obj, "load_state_dict", None)):
            validate.fail("fit", name, "an object with state_dict() and load_state_dict() when "
                          "backup is given (the optimisers and schedulers of tinyunits.optim)",
                          obj, TypeError)
    state = model.state_dict()
    run = dict(model=[type(m).__name__ for _, m in model.named_modules()],
               shapes={k: list(v.shape) for k, v in state.items()},
               weights=_digest(state.values()), data=_digest(data),
               optimizer=type(optimizer).__name__,
               groups=[{k: v for k, v in g.items() if k != "params"}
                       for g in optimizer.param_groups],
               scheduler=type(scheduler).__name__,
               schedule={k: v for k, v in (vars(scheduler) if scheduler else {}).items()
                         if k not in ("optimizer", "count")},
               **settings)
    return json.loads(json.dumps(run, default=repr))  # as it reads back from a backup


def _digest(arrays) -> str:
    """sha256 of arrays' dtypes, shapes and values."""
    digest = hashlib.sha256()
    for a in arrays:
        a = backend.host_module().ascontiguousarray(backend.to_host(a))
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.view("uint8").reshape(-1))
    return digest.hexdigest()


def write(path, run, model, optimizer, scheduler, history, epoch, within, order, seconds,
          best) -> None:
    """Back up a run after `epoch` epochs, `within` = (steps, summed loss, rows) of the next
    one, and `seconds` of training. order: the batch generator's state before it drew the
    next epoch's order; best = (score, state or None, epochs waited)."""
    score, best_state, waited = best
    step, total, count = within
    progress = dict(run=run, epoch=epoch, step=step, total=total, count=count,
                    seconds=seconds, history=dict(history), best_epoch=history.best_epoch,
                    best_score=score if math.isfinite(score) else None, waited=waited,
                    order=order, generators=backend.generator_states())
    arrays = {_RUN: backend.host_module().frombuffer(json.dumps(progress).encode(), "uint8")}
    for part, state in zip(_PARTS, (model.state_dict(), optimizer.state_dict(),
                                    {} if scheduler is None else scheduler.state_dict(),
                                    best_state or {})):
        arrays.update({f"{part}.{name}": value for name, value in state.items()})
    serialization.save(arrays, path)


def read(path, run, model, optimizer, scheduler, order, history):
    """Resume from the backup at `path`, if there is one: load the model, optimiser,
    scheduler, generators and history -> (epochs done, (steps, summed loss, rows) of the
    next, seconds, (score, best state, waited)), or None when there is no file."""
    if not os.path.exists(path):
        return None
    arrays = serialization.load(path)
    where = f"fit: the backup {os.fspath(path)}"
    if _RUN not in arrays:
        raise ValueError(f"{where} is a checkpoint, not a backup of a fit; give backup= "
                         "a path of its own")
    progress = json.loads(arrays.pop(_RUN).tobytes())
    if progress["run"] != run:
        differ = sorted(k for k in {*run, *progress["run"]}
                        if run.get(k) != progress["run"].get(k))
        raise ValueError(f"{where} belongs to another run (it differs in {differ}); remove "
                         "it to start this run afresh, or give this run another path")
    parts = {part: {} for part in _PARTS}
    for key, value in arrays.items():
        part, _, name = key.partition(".")
        parts[part][name] = value
    _load_all(((model, parts["model"]), (optimizer, parts["optimizer"]),
               (scheduler, parts["scheduler"])))
    order.bit_generator.state = progress["order"]
    backend.set_generator_states(progress["generators"])
    history.update(progress["history"])
    history.best_epoch = progress["best_epoch"]
    score = -math.inf if progress["best_score"] is None else progress["best_score"]
    best_state = {k: backend.asarray(v) for k, v in parts["best"].items()} or None
    # backups written before fit wrote within epochs hold none of the next epoch's steps
    within = progress.get("step", 0), progress.get("total", 0.0), progress.get("count", 0)
    return progress["epoch"], within, progress["seconds"], (score, best_state,
                                                             progress["waited"])


def _load_all(pairs) -> None:
    """load_state_dict(state) for each (object, state), object None skipped; if one
    refuses its state, those loaded before it get their own back (a failed load changes
    nothing)."""
    pairs = [(obj, state) for obj, state in pairs if obj is not None]
    before = [{k: v.copy() if hasattr(v, "copy") else v for k, v in obj.state_dict().items()}
              for obj, _ in pairs]
    for i, (obj, state) in enumerate(pairs):
        try:
            obj.load_state_dict(state)
        except BaseException:
            for (done, _), own in zip(pairs[:i], before):
                done.load_state_dict(own)
            raise


def progress(path) -> dict | None:
    """{"epoch": epochs done, "step": steps of the next one done, "epochs": of the run,
    "seconds": of training} of the backup at `path`; None without one (or with a file
    that is none: fit says what is wrong)."""
    try:
        saved = json.loads(serialization.load(path)[_RUN].tobytes())
        return dict(epoch=saved["epoch"], step=saved.get("step", 0),
                    epochs=saved["run"]["epochs"], seconds=float(saved["seconds"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def remove(path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
