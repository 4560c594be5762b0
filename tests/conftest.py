"""Shared fixtures. The backend comes from TINYUNITS_BACKEND (numpy by default); run
the suite with TINYUNITS_BACKEND=strict to prove no op leaves the device. A module marked
backend_free (pytestmark) tests nothing a backend changes: the strict pass skips it."""
import os

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


def pytest_configure(config):
    config.addinivalue_line("markers", "backend_free(reason): the module tests nothing a backend "
                                       "changes, so the strict pass of `make test` skips it")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TINYUNITS_BACKEND") != "strict":
        return
    for item in items:
        mark = item.get_closest_marker("backend_free")
        if mark is not None:
            item.add_marker(pytest.mark.skip(reason=f"{mark.args[0]}: runs on the NumPy pass"))
