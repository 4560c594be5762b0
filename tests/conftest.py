"""Shared fixtures. The backend comes from TINYUNITS_BACKEND (numpy by default); run
the suite with TINYUNITS_BACKEND=strict to prove no op leaves the device."""
import numpy as np
import pytest

import tinyunits as tu


@pytest.fixture(autouse=True)
def _fresh_state():
    """Each test starts seeded, in float32, with gradients on."""
    tu.manual_seed(0)
    tu.set_default_dtype("float32")
    yield
    tu.set_default_dtype("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def float64():
    tu.set_default_dtype("float64")
    yield
    tu.set_default_dtype("float32")
