"""Checkpoints: round trip, atomic write, no pickle, and clear refusals."""
import os

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn


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
