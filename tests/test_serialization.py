"""Checkpoints (tinyunits/serialization.py): round trip, atomic write, no pickle, clear
refusals; concurrent writers (two real processes, 150 saves each, to one path), symlinks,
file modes, stale temporaries, non-finite values, and the containers save takes."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, serialization

host = backend.to_host
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model():
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_round_trip_restores_every_array(tmp_path):
    a, b = model(), model()
    a(tu.tensor(np.random.default_rng(0).normal(size=(5, 3))))  # moves running stats
    tu.save(a, tmp_path / "m.npz")
    tu.load(tmp_path / "m.npz", b)
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(tu.backend.to_host(b.state_dict()[k]), tu.backend.to_host(v))


def test_checkpoint_is_plain_npz_without_pickle(tmp_path):
    tu.save(model(), tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as f:
        assert str(f["__model__"]) == "Sequential" and f["0.weight"].shape == (4, 3)


def test_checkpoint_of_another_model_is_refused(tmp_path):
    tu.save(nn.Linear(3, 2), tmp_path / "lin.npz")
    with pytest.raises(ValueError, match="checkpoint of Linear, not of Sequential"):
        tu.load(tmp_path / "lin.npz", model())


def test_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.npz"
    path.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="not a readable tinyunits checkpoint"):
        tu.load(path, model())


def test_object_arrays_are_never_unpickled(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, weight=np.array([object()], dtype=object))
    with pytest.raises(ValueError):
        tu.load(path)


def test_failed_write_leaves_old_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    tu.save(nn.Linear(3, 2), path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(OSError, match="disk full"):
        tu.save(nn.Linear(3, 2), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary left behind
    assert os.path.exists(path)


# ---------------------------------------------------- concurrent writers, symlinks, file modes
def temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


@pytest.fixture
def umask():
    """Set the process umask for one test, and put the old one back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


WRITER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import tinyunits as tu
    path, who, start, saves = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    while not os.path.exists(start):  # both writers begin together
        time.sleep(0.001)
    failures = []
    for i in range(saves):
        try:
            tu.save({"who": np.array(who), "i": np.array(i), "w": np.full(256, who * 1000.0 + i)},
                    path)
        except Exception as e:
            failures.append(repr(e))
    print(len(failures), failures[:3])
""")


def test_two_processes_saving_to_one_path_both_succeed_and_the_last_write_wins(tmp_path):
    path, start, saves = tmp_path / "m.npz", tmp_path / "start", 150
    env = {**os.environ, "PYTHONPATH": ROOT}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(who), str(start),
                                 str(saves)], env=env, stdout=subprocess.PIPE, text=True)
               for who in (1, 2)]
    time.sleep(0.5)  # both have imported tinyunits
    start.touch()
    outputs = [w.communicate(timeout=300)[0] for w in writers]
    assert [w.returncode for w in writers] == [0, 0]
    assert [out.split()[0] for out in outputs] == ["0", "0"], outputs  # no save failed
    last = tu.load(path)
    who = int(last["who"])
    assert who in (1, 2) and int(last["i"]) == saves - 1  # one writer's last state, whole
    np.testing.assert_array_equal(last["w"], np.full(256, who * 1000.0 + saves - 1))
    assert temporaries(tmp_path) == []


def test_threads_saving_to_one_path_all_succeed(tmp_path):
    path, errors = tmp_path / "m.npz", []

    def writer(who):
        for i in range(40):
            try:
                tu.save({"who": np.array(who), "w": np.full(64, float(who))}, path)
            except Exception as e:  # noqa: BLE001 - every failure is the finding
                errors.append(e)
    threads = [threading.Thread(target=writer, args=(who,)) for who in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    last = tu.load(path)
    np.testing.assert_array_equal(last["w"], np.full(64, float(last["who"])))
    assert temporaries(tmp_path) == []


def test_saving_through_a_symlink_updates_its_target(tmp_path):
    (tmp_path / "runs").mkdir()
    target, link = tmp_path / "runs" / "epoch3.npz", tmp_path / "latest.npz"
    tu.save(nn.Linear(2, 2), target)
    link.symlink_to(target)
    model = nn.Linear(2, 2)
    tu.save(model, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(tu.load(target)["weight"], host(model.weight.data))
    assert temporaries(tmp_path) == temporaries(tmp_path / "runs") == []


def test_saving_through_a_dangling_symlink_creates_its_target(tmp_path):
    target, link = tmp_path / "new.npz", tmp_path / "link.npz"
    link.symlink_to(target)
    tu.save(nn.Linear(2, 2), link)
    assert link.is_symlink() and target.is_file()


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_new_file_gets_the_mode_np_save_gives(tmp_path, umask, mask, mode):
    umask(mask)
    tu.save(nn.Linear(2, 2), tmp_path / "ours.npz")
    np.save(tmp_path / "numpy.npy", np.zeros(2))
    assert os.stat(tmp_path / "numpy.npy").st_mode & 0o777 == mode  # what np.save does
    assert os.stat(tmp_path / "ours.npz").st_mode & 0o777 == mode


def test_an_existing_file_keeps_its_mode(tmp_path, umask):
    path = tmp_path / "m.npz"
    tu.save(nn.Linear(2, 2), path)
    os.chmod(path, 0o640)
    tu.save(nn.Linear(2, 2), path)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_save_refuses_non_finite_values_before_touching_the_file(tmp_path):
    path = tmp_path / "best.npz"
    good = nn.Linear(2, 2)
    tu.save(good, path)
    before = path.read_bytes()
    diverged = nn.Linear(2, 2)
    diverged.weight.data[0, 1] = np.nan
    with pytest.raises(ValueError, match=r"save: obj must hold finite values.*weight.*not touched"):
        tu.save(diverged, path)
    assert path.read_bytes() == before and temporaries(tmp_path) == []
    tu.load(path, nn.Linear(2, 2))  # what is there still loads


# --------------------------------------------------------------------------- stale temporaries
def _temporary(folder, name, age):
    path = folder / name
    path.write_bytes(b"\0" * 64)
    when = time.time() - age
    os.utime(path, (when, when))
    return path


def _dead_pid():
    """A pid that no process has now: a child that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


HOUR = 3600  # older than serialization.STALE_AFTER (ten minutes)


@pytest.mark.parametrize("name, age, removed", [
    ("dead-old", HOUR, True),          # a killed save's leftover
    ("dead-fresh", 1, False),          # could be another host's live save: wait for the age
    ("alive-old", HOUR, False),        # a stopped but live save (^Z)
    ("unnamed-old", HOUR, True),       # a name from an older tinyunits
    ("unnamed-fresh", 1, False),
])
def test_a_temporary_is_removed_only_when_no_live_save_can_own_it(tmp_path, name, age, removed):
    assert serialization.STALE_AFTER < HOUR
    owner, when = name.split("-")
    pid = {"dead": _dead_pid(), "alive": os.getpid(), "unnamed": None}[owner]
    stem = f"{pid}-0123abcd" if pid is not None else "q8x_2k"
    tmp = _temporary(tmp_path, f".m.npz.tmp-{stem}.npz", age)
    tu.save(nn.Linear(2, 2), tmp_path / "m.npz")
    assert tmp.exists() != removed


# -------------------------------------------- non-finite values, every kind of object and path
def _module(where, value):
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    {"parameter": model[0].weight.data, "buffer": model[1].running_var}[where][1] = value
    return model


def _dict(where, value):
    dtype = np.complex128 if where == "complex" else np.float64
    a = np.zeros(3, dtype)
    a[1] = value if where != "complex" else complex(0, value)
    return {"step": np.array(10), "a": a}


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("make, where", [(_module, "parameter"), (_module, "buffer"),
                                         (_dict, "float"), (_dict, "complex")])
def test_save_and_load_agree_about_non_finite_values(tmp_path, make, where, value):
    path = tmp_path / "c.npz"
    obj = make(where, value)
    with pytest.raises(ValueError, match="save: obj must hold finite values"):
        tu.save(obj, path)
    assert not path.exists()
    state = obj.state_dict() if hasattr(obj, "state_dict") else obj
    np.savez(path, **{k: host(v) for k, v in state.items()})  # written by other code
    with pytest.raises(ValueError, match="load: .* holds non-finite values"):
        tu.load(path)


@pytest.mark.parametrize("kind", ["str", "Path", "symlink", "relative"])
def test_every_kind_of_path_round_trips(tmp_path, kind, monkeypatch):
    monkeypatch.chdir(tmp_path)
    real = tmp_path / "real.npz"
    path = {"str": str(real), "Path": real, "relative": "real.npz",
            "symlink": tmp_path / "link.npz"}[kind]
    if kind == "symlink":
        path.symlink_to(real)
    model = nn.Linear(3, 2)
    tu.save(model, path)
    loaded = tu.load(path, nn.Linear(3, 2))
    np.testing.assert_array_equal(host(loaded.weight.data), host(model.weight.data))
    assert real.is_file() and temporaries(tmp_path) == []


# --------------------------------------------------------- the containers a user hands to save
ROUND_TRIPS = {
    "dict of tensors": lambda: {"w": tu.tensor([[1.0, 2.0]]), "b": tu.tensor([0.5])},
    "dict of parameters": lambda: dict(nn.Linear(3, 2).named_parameters()),
    "tensors, arrays and numbers": lambda: {"w": tu.tensor([1.0, -2.0]), "step": 7,
                                            "lr": 0.01, "mask": np.array([True, False]),
                                            "grid": [[1, 2], [3, 4]]},
    "integer tensor": lambda: {"labels": tu.tensor([3, 1, 2])},
    "0-d tensor": lambda: {"loss": tu.tensor(0.25)},
}


def _as_array(value):
    return host(value.data) if isinstance(value, tu.Tensor) else np.asarray(value)


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_a_dict_of_tensors_arrays_and_numbers_round_trips(tmp_path, name):
    state = ROUND_TRIPS[name]()
    tu.save(state, tmp_path / "state.npz")  # a dict of tensors was a TypeError ("object")
    back = tu.load(tmp_path / "state.npz")
    assert sorted(back) == sorted(state)
    for key, value in state.items():
        expected = _as_array(value)
        assert back[key].dtype == expected.dtype and back[key].shape == expected.shape
        np.testing.assert_array_equal(back[key], expected)


def test_a_saved_dict_of_a_modules_parameters_loads_into_the_module(tmp_path):
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    tu.save(dict(source.named_parameters()), tmp_path / "p.npz")
    tu.load(tmp_path / "p.npz", target)
    np.testing.assert_array_equal(host(target.weight.data), host(source.weight.data))


REFUSED = {
    "nested dict": lambda: {"model": {"w": np.ones(2)}, "epoch": 3},
    "state_dict inside": lambda: {"model": nn.Linear(2, 2).state_dict()},
    "list of tensors": lambda: {"ws": [tu.tensor([1.0]), tu.tensor([2.0])]},
    "module inside": lambda: {"model": nn.Linear(2, 2)},
    "string": lambda: {"name": "run 3"},
    "None": lambda: {"scheduler": None},
    "ragged list": lambda: {"r": [[1.0], [1.0, 2.0]]},
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_container_save_cannot_write_is_refused_before_touching_the_file(tmp_path, name):
    path = tmp_path / "best.npz"
    tu.save(nn.Linear(2, 2), path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"save: every entry must be a numeric array, a "
                                        r"Tensor or a number .*got '\w+': \S+"):
        tu.save(REFUSED[name](), path)
    assert path.read_bytes() == before and temporaries(tmp_path) == []


@pytest.mark.parametrize("obj", [[np.ones(2)], (np.ones(2),), np.ones(2), tu.tensor([1.0]),
                                 None], ids=repr)
def test_save_of_what_is_neither_a_module_nor_a_dict_is_a_type_error(tmp_path, obj):
    with pytest.raises(TypeError, match="save: obj must be a Module or a dict"):
        tu.save(obj, tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------- a failed load changes nothing; save's and load's arguments
def test_failed_load_changes_nothing(tmp_path):
    small = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    tu.save(small, tmp_path / "small.npz")
    other = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 5))  # same class, last layer differs
    before = {k: host(v).copy() for k, v in other.state_dict().items()}
    with pytest.raises(ValueError, match="1.weight has shape"):
        tu.load(tmp_path / "small.npz", other)
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])


def test_batchnorm_running_stats_round_trip(tmp_path):
    bn = nn.BatchNorm1d(3)
    bn(tu.tensor(np.random.default_rng(1).normal(2.0, 3.0, size=(16, 3))))
    tu.save(bn, tmp_path / "bn.npz")
    fresh = tu.load(tmp_path / "bn.npz", nn.BatchNorm1d(3))
    x = tu.tensor(np.random.default_rng(2).normal(size=(5, 3)))
    np.testing.assert_array_equal(host(fresh.eval()(x).data), host(bn.eval()(x).data))


def test_save_reports_the_users_path(tmp_path):
    target = tmp_path / "no-such-folder" / "m.npz"
    with pytest.raises(FileNotFoundError) as err:
        tu.save(nn.Linear(2, 2), target)
    assert str(target) in str(err.value) and ".tmp" not in str(err.value)


def test_stale_temporary_of_the_same_target_is_removed(tmp_path):
    stale = tmp_path / ".m.npz.tmp-killed.npz"
    stale.write_bytes(b"\0" * 4096)  # what a save killed mid-write leaves behind
    hour_ago = os.stat(stale).st_mtime - 3600  # past STALE_AFTER: no live save writes it
    os.utime(stale, (hour_ago, hour_ago))
    other = tmp_path / ".other.npz.tmp-killed.npz"
    other.write_bytes(b"\0")
    os.utime(other, (hour_ago, hour_ago))
    tu.save(nn.Linear(2, 2), tmp_path / "m.npz")
    assert not stale.exists() and other.exists()
    assert sorted(os.listdir(tmp_path)) == [".other.npz.tmp-killed.npz", "m.npz"]


def _write(path, **arrays):
    np.savez(path, **arrays)
    return path


def _raw(path, data):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make, error, words", [
    (lambda d: d / "missing.npz", FileNotFoundError, "no checkpoint file"),
    (lambda d: _raw(d / "junk.npz", b"not a zip"), ValueError, "not a readable"),
    (lambda d: _raw(d / "pk.npz", b"PK\x03\x04" + b"\0" * 40), ValueError, "not a readable"),
    (lambda d: _write(d / "nan.npz", weight=np.full((2, 2), np.nan), bias=np.zeros(2)),
     ValueError, "non-finite"),
    (lambda d: _write(d / "str.npz", weight=np.array([["a", "b"], ["c", "d"]]),
                      bias=np.zeros(2)), TypeError, "numeric"),
    (lambda d: _write(d / "extra.npz", weight=np.zeros((2, 2)), bias=np.zeros(2),
                      other=np.zeros(1)), KeyError, "unexpected keys"),
    (lambda d: _write(d / "short.npz", weight=np.zeros((2, 2))), KeyError, "missing keys"),
])
def test_bad_checkpoint_changes_nothing(tmp_path, make, error, words):
    model = nn.Linear(2, 2)
    before = {k: host(v).copy() for k, v in model.state_dict().items()}
    with pytest.raises(error, match=words):
        tu.load(make(tmp_path), model)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])


@pytest.mark.parametrize("call, error, words", [
    (lambda d: tu.save([1, 2], d / "x.npz"), TypeError, "save: obj"),
    (lambda d: tu.save({"a": object()}, d / "x.npz"), TypeError, "save: every entry"),
    (lambda d: tu.save(nn.Linear(2, 2), 3), TypeError, "save: path"),
    (lambda d: tu.load(3), TypeError, "load: path"),
    (lambda d: tu.load(d / "x.npz", model={}), TypeError, "load: model"),
    (lambda d: nn.Linear(2, 2).load_state_dict([1]), TypeError, "state must be a dict"),
    (lambda d: nn.Linear(2, 2).load_state_dict({"weight": [[1, 2], [3, 4]], "bias": [0, 0]}),
     TypeError, "must be an array"),
])
def test_save_load_arguments(tmp_path, call, error, words):
    with pytest.raises(error, match=words):
        call(tmp_path)
