"""The strict backend refuses host/device mixing exactly where CuPy would."""
import os

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend


@pytest.fixture
def strict():
    old = backend.get_backend()
    backend.set_backend("strict")
    yield backend.get_array_module()
    backend.set_backend(old)


@pytest.mark.parametrize("mix", [
    lambda d: d + np.ones(3),
    lambda d: np.ones(3) * d,
    lambda d: np.asarray(d),
    lambda d: np.array(d),
    lambda d: float(d[0]),
    lambda d: list(d),
    lambda d: bool(d[0] > 0),
    lambda d: d[np.array([0, 1])],
])
def test_strict_refuses_implicit_host_traffic(strict, mix):
    d = strict.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="strict backend"):
        mix(d)


def test_strict_allows_explicit_transfers_and_device_math(strict):
    d = strict.asarray(np.arange(3.0))
    assert isinstance(d * 2 + strict.ones(3), backend.StrictArray)
    assert (d * 2).sum().item() == 6.0
    np.testing.assert_array_equal(backend.to_host(d), [0.0, 1.0, 2.0])


def test_strict_engine_end_to_end(strict):
    x = tu.tensor(np.ones((2, 3)), requires_grad=True)
    layer = tu.nn.Linear(3, 2)
    tu.ops.relu(layer(x)).sum().backward()
    assert isinstance(layer.weight.grad, backend.StrictArray)
    with pytest.raises(TypeError):
        layer.weight.data + np.ones((2, 3))


def test_unknown_backend_and_missing_cupy_are_clear_errors():
    with pytest.raises(ValueError, match="expected one of"):
        backend.set_backend("jax")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="CuPy"):
            backend.set_backend("cupy")
        backend.set_backend(os.environ.get("TINYUNITS_BACKEND", "numpy"))
