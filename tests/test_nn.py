"""Modules: registration, shared parameters, modes, state dicts, initialisers, input errors."""
import re

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn


def test_parameters_are_registered_in_order_and_counted():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2, bias=False))
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight"]
    assert model.num_parameters() == 4 * 3 + 3 + 3 * 2


def test_shared_parameter_listed_once():
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.Tanh(), shared)
    assert len(model.parameters()) == 2 and model.num_parameters() == 12


def test_train_eval_reaches_every_submodule():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    model.eval()
    assert all(not m.training for _, m in model.named_modules())
    model.train()
    assert all(m.training for _, m in model.named_modules())


def test_forgetting_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.zeros(2))
    with pytest.raises(RuntimeError, match=re.escape("call super().__init__()")):
        Broken()


def test_state_dict_round_trip_includes_buffers():
    a, b = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    a(tu.tensor(np.random.default_rng(0).normal(size=(8, 3))))
    b.load_state_dict(a.state_dict())
    assert set(a.state_dict()) == {"weight", "bias", "running_mean", "running_var"}
    np.testing.assert_array_equal(tu.backend.to_host(b.running_mean), tu.backend.to_host(a.running_mean))


def test_load_state_dict_names_missing_keys_and_wrong_shapes():
    model = nn.Linear(3, 2)
    with pytest.raises(KeyError, match="missing keys \\['bias'\\]"):
        model.load_state_dict({"weight": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"weight has shape \(3, 3\).*\(2, 3\)"):
        model.load_state_dict({"weight": np.zeros((3, 3)), "bias": np.zeros(2)})


@pytest.mark.parametrize("layer,x,match", [
    (nn.Linear(784, 10), np.zeros((32, 100)), r"Linear\(in_features=784, out_features=10\): expected input \(\.\.\., 784\), got \(32, 100\)"),
    (nn.BatchNorm2d(3), np.zeros((2, 4, 5, 5)), r"BatchNorm2d\(3.*expected input \(B, 3, H, W\), got \(2, 4, 5, 5\)"),
    (nn.LayerNorm(8), np.zeros((2, 7)), r"LayerNorm.*expected input \(\.\.\., 8\), got \(2, 7\)"),
])
def test_wrong_shapes_name_layer_and_both_shapes(layer, x, match):
    with pytest.raises(ValueError, match=match):
        layer(tu.tensor(x))


def test_wrong_dtype_and_non_tensor_inputs_are_type_errors():
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="expected float32 input.*got float64"):
        layer(tu.tensor(np.zeros((1, 3)), dtype="float64"))
    with pytest.raises(TypeError, match="expected a tinyunits Tensor"):
        layer(np.zeros((1, 3), dtype=np.float32))


def test_initialisers_have_the_promised_statistics():
    big = (400, 300)
    assert np.std(nn.init.he_normal(big)) == pytest.approx(np.sqrt(2 / 300), rel=0.02)
    assert np.abs(nn.init.he_uniform(big)).max() <= np.sqrt(6 / 300)
    lecun = nn.init.lecun_uniform(big)
    assert np.abs(lecun).max() <= np.sqrt(3 / 300)
    assert np.var(lecun) == pytest.approx(1 / 300, rel=0.02)
    assert np.abs(nn.init.xavier_uniform(big)).max() <= np.sqrt(6 / 700)
    assert np.abs(nn.init.torch_default(big)).max() <= 1 / np.sqrt(300)
    q = nn.init.orthogonal((30, 50))
    np.testing.assert_allclose(q @ q.T, np.eye(30), atol=1e-10)
    q = nn.init.orthogonal((50, 30))
    np.testing.assert_allclose(q.T @ q, np.eye(30), atol=1e-10)


def test_astype_casts_parameters_and_buffers():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).astype("float64")
    assert all(a.dtype == np.float64 for a in model.state_dict().values())


def test_repr_is_nested_and_readable():
    text = repr(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU()))
    assert "(0): Conv2d(1, 4, kernel_size=3, stride=1, padding=1)" in text and "(1): ReLU()" in text
