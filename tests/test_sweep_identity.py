"""tinyunits/sweep/identity.py: a trial's code identity follows the code the trial
reaches, and nothing else (comments, docstrings, code it never calls)."""
import functools

import numpy as np
import pytest

from tinyunits import sweep
from sweep_support import assert_checked_by_name, bad_arguments, sleeps, square, write_module

pytestmark = pytest.mark.backend_free("the sweep's machinery, no tinyunits op")


def test_code_identity_follows_the_code_a_trial_reaches_and_nothing_else(tmp_path, monkeypatch):
    base = sweep.code_identity(write_module(tmp_path, monkeypatch).trial)
    same = {"comment": "another comment", "doc": "reworded", "unrelated": 5}
    for field, value in same.items():
        module = write_module(tmp_path, monkeypatch, **{field: value})
        assert sweep.code_identity(module.trial) == base, field
    for field, value in {"offset": 1, "scale": 3}.items():  # its own code, a helper's constant
        module = write_module(tmp_path, monkeypatch, **{field: value})
        assert sweep.code_identity(module.trial) != base, field
    assert len(base) == 16 and int(base, 16) >= 0


def test_code_identity_of_other_callables():
    ids = [sweep.code_identity(f) for f in
           (square, sleeps, lambda s: s, sorted, functools.partial(square), np.sum)]
    assert len(set(ids)) == len(ids)
    # a closure's code counts, the data it collects does not
    calls = []

    def counted(settings):
        calls.append(settings)
        return square(settings)
    before = sweep.code_identity(counted)
    counted({"x": 2})
    assert sweep.code_identity(counted) == before
    # partial: its arguments count
    assert sweep.code_identity(functools.partial(sleeps, 1)) != \
        sweep.code_identity(functools.partial(sleeps, 2))


@pytest.mark.parametrize("argument, value, error, message", bad_arguments({"fn"}))
def test_code_identity_checks_its_argument_by_name(tmp_path, argument, value, error, message):
    assert_checked_by_name(tmp_path, "code_identity",
                           lambda **k: sweep.code_identity(k.get("fn", square)),
                           argument, value, error, message)
