"""fit(..., backup=): a stopped run resumes and computes what the uninterrupted one does;
optimiser and scheduler state; sweep.backup_path() inside and outside a sweep."""
import json
import os
import signal
import time

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, optim, resume, sweep
from tinyunits.train import accuracy, fit
from tinyunits.sweep.backups import trial_backup

X = np.random.default_rng(0).normal(size=(200, 5)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)


class Stop(Exception):
    """Stands for a killed process: raised from after_step mid-epoch."""


def setup(kind="sgd"):
    """A fresh model, optimiser and scheduler, always the same: as a restarted process
    builds them. Dropout and batch norm make the generators and buffers count."""
    tu.set_default_dtype("float32")
    tu.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3),
                          nn.Linear(16, 2))
    if kind == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = optim.Adam(model.parameters(), lr=1e-2)
    return model, opt, optim.MultiStepLR(opt, [2, 4])


def train(model, opt, sched, **kwargs):
    return fit(model, nn.functional.cross_entropy, opt, (X, Y), (X[:50], Y[:50]), epochs=6,
               batch_size=32, scheduler=sched, metric=accuracy, patience=6, seed=1, **kwargs)


def stop_at(step, sleep=0.0, kill=False):
    """An after_step that sleeps `sleep` s a step and, at step `step` (None: never), raises
    Stop or, with kill, kills its own process (a worker lost mid-trial)."""
    count = [0]

    def after_step(model):
        count[0] += 1
        time.sleep(sleep)  # a step that takes measurable time
        if count[0] == step and kill:
            os.kill(os.getpid(), signal.SIGKILL)
        if count[0] == step:
            raise Stop
    return after_step


def weights(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("stops", [[23], [9, 30, 40]])  # 7 steps an epoch, 6 epochs
@pytest.mark.parametrize("interval", [float("inf"), 0.0])  # backups at epoch ends; every step
def test_a_stopped_fit_resumes_bit_for_bit(tmp_path, monkeypatch, kind, stops, interval):
    monkeypatch.setattr(resume, "INTERVAL", interval)
    model, opt, sched = setup(kind)
    expected = train(model, opt, sched)
    final = weights(model)
    path = tmp_path / "run.npz"
    done = 0
    for step in stops:
        model, opt, sched = setup(kind)  # as a restarted process: generators at the start
        with pytest.raises(Stop):
            train(model, opt, sched, after_step=stop_at(step - done), backup=path)
        # the backup holds the steps before the stop: the epochs finished, or every step
        done = 7 * ((step - 1) // 7) if interval else step - 1
        saved = resume.progress(path)
        assert (7 * saved["epoch"] + saved["step"], saved["epochs"]) == (done, 6)
    model, opt, sched = setup(kind)
    history = train(model, opt, sched, backup=path)
    assert dict(history) == dict(expected) and history.best_epoch == expected.best_epoch
    for name, value in weights(model).items():
        assert value.dtype == final[name].dtype and np.array_equal(value, final[name]), name
    group = opt.param_groups[0]
    assert group["lr"] == pytest.approx(group["initial_lr"] * 0.01) and sched.count == 6
    assert not path.exists()  # a finished run removes its backup


@pytest.mark.parametrize("interval", [float("inf"), 0.0])  # backups at epoch ends; every step
def test_a_resumed_fit_stops_early_where_the_unstopped_one_does(tmp_path, monkeypatch,
                                                                interval):
    """Stopped after an epoch that did not better the best, the backup holds the epochs
    waited and the best epoch's weights: the resumed run stops after the same epoch and
    hands back the same weights, to the bit."""
    monkeypatch.setattr(resume, "INTERVAL", interval)

    def train_early(model, opt, sched, **kwargs):
        return fit(model, nn.functional.cross_entropy, opt, (X, Y), (X[150:], Y[150:]),
                   epochs=6, batch_size=32, scheduler=sched, metric=accuracy, patience=2,
                   seed=1, **kwargs)

    model, opt, sched = setup()
    expected = train_early(model, opt, sched)
    final, ran = weights(model), len(expected["train_loss"])
    assert expected.best_epoch + 3 == ran < 6  # stopped early, 2 epochs waited
    path = tmp_path / "run.npz"
    model, opt, sched = setup()
    with pytest.raises(Stop):  # in the last epoch it runs, at its 3rd step
        train_early(model, opt, sched, after_step=stop_at(7 * (ran - 1) + 3), backup=path)
    assert resume.progress(path)["epoch"] == ran - 1 > expected.best_epoch + 1
    model, opt, sched = setup()
    history = train_early(model, opt, sched, backup=path)
    assert dict(history) == dict(expected) and history.best_epoch == expected.best_epoch
    for name, value in weights(model).items():
        assert np.array_equal(value, final[name]), name


def test_a_backup_written_before_fit_wrote_within_epochs_resumes(tmp_path):
    """Such a backup holds the epochs finished and none of the next epoch's steps."""
    model, opt, sched = setup()
    expected = train(model, opt, sched)
    path = tmp_path / "run.npz"
    model, opt, sched = setup()
    with pytest.raises(Stop):
        train(model, opt, sched, after_step=stop_at(17), backup=path)
    arrays = tu.serialization.load(path)
    saved = json.loads(arrays["fit"].tobytes())
    assert (saved.pop("step"), saved.pop("total"), saved.pop("count")) == (0, 0.0, 0)
    arrays["fit"] = np.frombuffer(json.dumps(saved).encode(), "uint8")
    tu.serialization.save(arrays, path)
    assert resume.progress(path)["step"] == 0
    model, opt, sched = setup()
    assert dict(train(model, opt, sched, backup=path)) == dict(expected)


def other_data(kwargs):
    kwargs["train_data"] = (X + np.float32(0.5), Y)


def other_weights(kwargs):
    kwargs["model"].state_dict()["0.bias"][0] += 1


def other_lr(kwargs):
    kwargs["optimizer"].param_groups[0]["lr"] = 0.05


def other_schedule(kwargs):
    kwargs["scheduler"].milestones = [2, 5]


def other_loss(kwargs):
    def halved(logits, labels):
        return nn.functional.cross_entropy(logits, labels) * 0.5
    kwargs["loss_fn"] = halved


@pytest.mark.parametrize("change, differs", [
    (lambda kwargs: kwargs.update(batch_size=16), "batch_size"), (other_data, "data"),
    (other_weights, "weights"), (other_lr, "groups"), (other_schedule, "schedule"),
    (other_loss, "loss"), (lambda kwargs: kwargs.update(metric=None), "metric")])
def test_a_backup_of_another_run_is_refused_and_kept(tmp_path, change, differs):
    path = tmp_path / "run.npz"
    model, opt, sched = setup()
    with pytest.raises(Stop):
        train(model, opt, sched, after_step=stop_at(10), backup=path)
    before = path.read_bytes()
    model, opt, sched = setup()
    kwargs = dict(model=model, loss_fn=nn.functional.cross_entropy, optimizer=opt,
                  train_data=(X, Y), val_data=(X[:50], Y[:50]), epochs=6, batch_size=32,
                  scheduler=sched, metric=accuracy, patience=6, seed=1, backup=path)
    change(kwargs)
    with pytest.raises(ValueError, match=rf"fit: the backup .*run\.npz belongs to another run "
                                         rf"\(it differs in \['{differs}'\]\)"):
        fit(**kwargs)
    assert path.read_bytes() == before


def test_a_backup_the_optimiser_refuses_leaves_the_model_as_it_was(tmp_path):
    path = tmp_path / "run.npz"
    model, opt, sched = setup()
    with pytest.raises(Stop):
        train(model, opt, sched, after_step=stop_at(10), backup=path)
    arrays = tu.load(path)
    arrays["optimizer.state.0.0.velocity"] = arrays["optimizer.state.0.0.velocity"][:1]
    tu.save(arrays, path)  # the model's part is fine, the optimiser's is not
    model, opt, sched = setup()
    start = weights(model)
    with pytest.raises(ValueError, match=r"SGD.load_state_dict: state.0.0.velocity must be"):
        train(model, opt, sched, backup=path)
    assert all(np.array_equal(v, start[k]) for k, v in weights(model).items())
    assert opt.state == {}


def test_a_backup_that_is_a_checkpoint_is_refused(tmp_path):
    model, opt, sched = setup()
    tu.save(model, tmp_path / "model.npz")
    with pytest.raises(ValueError, match="is a checkpoint, not a backup of a fit"):
        train(model, opt, sched, backup=tmp_path / "model.npz")


def test_fit_backup_needs_a_path_and_an_optimiser_with_state(tmp_path):
    model, opt, sched = setup()
    with pytest.raises(TypeError, match="fit: backup must be a file path or None"):
        train(model, opt, sched, backup=3)
    for path in (tmp_path, tmp_path / "no folder" / "run.npz"):
        with pytest.raises(ValueError, match="fit: backup must be a file in an existing folder"):
            train(model, opt, sched, backup=path)

    class Plain:
        def step(self):
            pass
    with pytest.raises(TypeError, match=r"fit: scheduler must be an object with state_dict\(\)"):
        train(model, opt, Plain(), backup="unused.npz")
    assert not os.path.exists("unused.npz")


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_optimiser_state_round_trips_through_a_checkpoint(tmp_path, kind):
    model, opt, sched = setup(kind)
    train(model, opt, sched)
    tu.save(opt.state_dict(), tmp_path / "opt.npz")
    fresh_model, fresh, _ = setup(kind)
    fresh.load_state_dict(tu.load(tmp_path / "opt.npz"))
    assert fresh.state_dict().keys() == opt.state_dict().keys()
    for key, value in opt.state_dict().items():
        got = fresh.state_dict()[key]
        if isinstance(value, (int, float)):  # lr, Adam's step count: the same Python type
            assert type(got) is type(value) and got == value, key
        else:
            assert got.dtype == value.dtype and np.array_equal(got, value) and got is not value


def test_optimiser_load_checks_everything_before_it_changes_anything():
    model, opt, _ = setup()
    train(model, opt, None)
    state = opt.state_dict()
    before = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in state.items()}
    bad = dict(state, **{"state.0.0.velocity": np.zeros((2, 2), np.float32)})
    with pytest.raises(ValueError, match=r"SGD.load_state_dict: state.0.0.velocity must be a "
                                         r"number or a numeric array of its parameter's shape"):
        opt.load_state_dict(dict(bad, **{"lr.0": 0.5}))
    with pytest.raises(KeyError, match=r"unexpected key 'state.0.9.velocity'"):
        opt.load_state_dict(dict(state, **{"state.0.9.velocity": np.zeros(3, np.float32)}))
    with pytest.raises(KeyError, match=r"missing keys \['lr.0'\]"):
        opt.load_state_dict({k: v for k, v in state.items() if k != "lr.0"})
    with pytest.raises(ValueError, match="finite values"):
        opt.load_state_dict(dict(state, **{"state.0.0.velocity": np.full_like(
            state["state.0.0.velocity"], np.nan)}))
    after = opt.state_dict()
    assert after["lr.0"] == before["lr.0"]
    assert all(np.array_equal(after[k], v) for k, v in before.items())


def test_scheduler_state():
    _, opt, sched = setup()
    sched.step()
    sched.step()
    _, _, other = setup()
    other.load_state_dict(sched.state_dict())
    assert other.count == 2
    with pytest.raises(TypeError, match="MultiStepLR.load_state_dict: state must be a dict "
                                        "with the one key 'count'"):
        other.load_state_dict({"count": 1, "lr": 3})


# --------------------------------------------------------------------------- in a sweep
def backed_up_trial(settings):
    """Trains 4 epochs of 7 steps, each `sleep` seconds long, with sweep.backup_path();
    attempt i (counted in the file `log`) stops at step stops[i] where there is one."""
    return train_with_stops(settings, *setup(), sweep.backup_path())


def train_with_stops(settings, model, opt, sched, path):
    resumed = path is not None and os.path.exists(path)
    stops, attempt = settings.get("stops", []), 0
    if stops:
        with open(settings["log"], "a+") as log:
            log.seek(0)
            attempt = len(log.read())
            log.write("x")
    after_step = stop_at(stops[attempt] if attempt < len(stops) else None,
                         settings.get("sleep", 0.0), settings.get("kill", False))
    history = fit(model, nn.functional.cross_entropy, opt, (X, Y), (X[:50], Y[:50]),
                  epochs=4, batch_size=32, scheduler=sched, seed=1, after_step=after_step,
                  backup=path)
    return {"weight": model.state_dict()["0.weight"], "losses": history["train_loss"],
            "backup": path, "resumed": resumed}


def test_backup_path_is_none_outside_a_sweep():
    assert sweep.backup_path() is None
    result = backed_up_trial({})
    assert result["backup"] is None


@pytest.mark.parametrize("timeout", [None, 120])  # in this process, or a child per attempt
def test_a_failed_attempt_resumes_from_its_backup_and_the_store_keeps_none(tmp_path, timeout):
    store = str(tmp_path / "s.sqlite")
    plain = sweep.run("resume", backed_up_trial, [{}], store=store)[0]
    settings = dict(stops=[7 * 2 + 3], log=str(tmp_path / "attempts"), sleep=0.02)
    stopped = sweep.run("resume", backed_up_trial, [settings], store=store, timeout=timeout)[0]
    # the first attempt stopped mid-epoch 3; the retry took up epoch 3 from the backup
    rows = sweep.load("resume", store)
    assert sorted(row["attempts"] for row in rows) == [1, 2]
    # the stored time counts the two epochs before the stop, not only the retry's two
    assert max(row["seconds"] for row in rows) >= 4 * 7 * 0.02
    assert stopped["resumed"] and not plain["resumed"]
    assert stopped["losses"] == plain["losses"]
    assert np.array_equal(stopped["weight"], plain["weight"])
    folder = os.path.dirname(stopped["backup"])
    assert folder.startswith(store + "-backups" + os.sep)
    key = sweep.trial_key(settings)
    code = sweep.code_identity(backed_up_trial)
    assert os.path.basename(stopped["backup"]) == f"{key}-{code}.npz"
    assert not os.path.exists(store + "-backups")  # removed with the trials' results stored


@pytest.mark.parametrize("interval, where", [(float("inf"), "2/4"), (0.0, "2/4 + 4 steps")])
def test_status_says_which_trials_resume_from_a_backup(tmp_path, monkeypatch, interval,
                                                       where):
    from lessons.trials.__main__ import status
    monkeypatch.setattr(resume, "INTERVAL", interval)  # backups at epoch ends; every step
    store = str(tmp_path / "s.sqlite")
    settings = dict(stops=[7 * 2 + 3, 3], log=str(tmp_path / "attempts"))
    others = [dict(seed=s) for s in range(2)]  # trials without backups (not run)
    with pytest.warns(RuntimeWarning, match="1 of 1 trials of 'resume' failed 2 times"):
        sweep.run("resume", backed_up_trial, [settings], store=store)
    # the first attempt stopped at step 3 of epoch 3; the second resumed from its backup
    # (epoch 2 done, or 2 of its steps too) and stopped 3 steps later
    assert sweep.backup_of("resume", backed_up_trial, settings, store)["epoch"] == 2
    assert sweep.backup_of("resume", backed_up_trial, others[0], store) is None
    line = status("resume", backed_up_trial, [settings, *others], store)
    assert "3 to run" in line and f"1 resume from backups (epochs {where}:" in line
    sweep.run("resume", backed_up_trial, [settings], store=store)  # no stops left: it ends
    assert sweep.backup_of("resume", backed_up_trial, settings, store) is None
    assert "resume from" not in status("resume", backed_up_trial, [settings], store)


def ordered_trial(settings):
    """backed_up_trial that first writes its name to the file settings["order"]."""
    with open(settings["order"], "a") as order:
        order.write(settings["name"] + " ")
    return backed_up_trial(settings)


@pytest.mark.parametrize("workers", [None, 2])
def test_trials_with_a_backup_start_first_then_in_their_order(tmp_path, workers):
    if workers:
        pytest.importorskip("distributed")
    store, order = str(tmp_path / "s.sqlite"), str(tmp_path / "order")
    trials = [dict(name=name, order=order, sleep=0.01) for name in "abcde"]
    trials[0]["sleep"] = 0.08  # a: 2.2 s, longer than d, b, c and e one after another
    trials[3].update(stops=[7 * 2 + 3, 3], log=str(tmp_path / "attempts d"))
    with pytest.warns(RuntimeWarning, match="1 of 1 trials of 'order' failed 2 times"):
        sweep.run("order", ordered_trial, [trials[3]], store=store)  # leaves d a backup
    os.remove(order)
    trials[1].update(stops=[3], log=str(tmp_path / "attempts b"))  # b fails once
    sweep.run("order", ordered_trial, trials, store=store, workers=workers)
    started = open(order).read().split()
    if workers:  # d and a start together, in either order
        started[:2] = sorted(started[:2], key="da".index)
    # then the free worker takes b, b's retry, c and e (given them all at once, Dask
    # queued c behind a, on a's worker, and put the retry last: b e c b)
    assert started == ["d", "a", "b", "b", "c", "e"]


def two_fits_trial(settings):
    """Pre-trains and then trains on, each fit with its own backup; the second stops
    once (settings["stops"] as in backed_up_trial)."""
    model, opt, sched = setup()
    fit(model, nn.functional.cross_entropy, opt, (X, Y), epochs=2, batch_size=32, seed=1,
        backup=sweep.backup_path("pretrain"))
    return train_with_stops(settings, model, opt, sched, sweep.backup_path("train"))


def test_two_fits_in_a_trial_keep_a_backup_each(tmp_path):
    store = str(tmp_path / "s.sqlite")
    plain = sweep.run("two", two_fits_trial, [{}], store=store)[0]
    settings = dict(stops=[7 + 3], log=str(tmp_path / "attempts"))
    stopped = sweep.run("two", two_fits_trial, [settings], store=store)[0]
    assert stopped["resumed"] and stopped["backup"].endswith("-train.npz")
    assert stopped["losses"] == plain["losses"]
    assert not os.path.exists(store + "-backups")
    assert sweep.backup_path("pretrain") is None  # outside a sweep
    with trial_backup(str(tmp_path / "x.npz")):  # as inside a trial
        for part, error in ((3, TypeError), ("a/b", ValueError)):
            with pytest.raises(error, match="sweep.backup_path: part must be None or a name"):
                sweep.backup_path(part)


def test_a_worker_killed_mid_trial_costs_at_most_an_epoch(tmp_path):
    pytest.importorskip("distributed")
    store = str(tmp_path / "s.sqlite")
    plain = sweep.run("plain", backed_up_trial, [{}], store=store)[0]
    settings = dict(stops=[7 * 2 + 3], log=str(tmp_path / "attempts"), kill=True)
    result = sweep.run("killed", backed_up_trial, [settings], store=store, workers=1)[0]
    assert open(settings["log"]).read() == "xx"  # the worker died once, the retry finished
    assert result["resumed"] and result["losses"] == plain["losses"]
    assert np.array_equal(result["weight"], plain["weight"])
    assert not os.path.exists(store + "-backups")
