"""Every registered op and unit against central differences in float64, and the checker itself."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits.gradcheck import load_cases, main, run_case
from tinyunits.function import Function

CASES = load_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_registered_case(name):
    report = run_case(name)
    assert report.rows, f"{name} checked nothing"
    assert report.ok, f"{name}:\n{report}"
    assert all(r.max_rel < 1e-6 for r in report.rows)


class WrongSquare(Function):
    """x^2 with a deliberately wrong backward (2x + 0.01): the checker must catch it."""

    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, g):
        return (g * (2 * self.x + 0.01),)


@pytest.mark.parametrize("size", [6, 5000])  # every element, then random directions
def test_gradcheck_catches_a_wrong_backward(size):
    report = tu.gradcheck(lambda x: WrongSquare()(x), [np.linspace(-1, 1, size)])
    assert not report.ok
    with pytest.raises(AssertionError, match="gradcheck failed"):
        tu.gradcheck(lambda x: WrongSquare()(x), [np.linspace(-1, 1, size)],
                     raise_on_failure=True)


def test_gradcheck_covers_module_parameters_and_reports_directions():
    tu.set_default_dtype("float64")
    layer = tu.nn.Linear(40, 30)
    report = tu.gradcheck(layer, [np.random.default_rng(0).normal(size=(3, 40))], module=layer)
    names = [r.name for r in report.rows]
    assert names == ["input0", "weight", "bias"] and report.ok
    assert report.rows[1].mode == "all" and report.rows[1].shape == (30, 40)
    big = tu.gradcheck(lambda x: x * x, [np.ones(3000)])
    assert big.rows[0].mode.endswith("dirs") and big.ok


def test_non_contiguous_inputs_are_perturbed_for_real():
    x = np.random.default_rng(0).normal(size=(4, 3)).T  # a strided view
    report = tu.gradcheck(lambda x: x * x, [x])
    assert report.ok and report.rows[0].max_abs < 1e-8


def test_command_line_runs_and_exits_zero(capsys):
    assert main(["relu"]) == 0
    out = capsys.readouterr().out
    assert "relu" in out and "1 passed, 0 failed" in out


def test_command_line_reports_an_unimplemented_case_and_goes_on(monkeypatch, capsys):
    # a student copy's stubbed backward raises NotImplementedError: every other case still runs
    cases = load_cases()

    def stub():
        raise NotImplementedError("exercise engine_mul")
    monkeypatch.setitem(cases, "relu-stub", stub)
    assert main(["relu*"]) == 1
    out = capsys.readouterr().out
    assert "not implemented: exercise engine_mul" in out and "1 passed, 1 failed" in out


@pytest.mark.parametrize("args, kwargs, error, words", [
    ((1, [np.ones(2)]), {}, TypeError, "gradcheck: fn must be"),
    ((tu.ops.relu, np.ones(2)), {}, TypeError, "gradcheck: inputs must be a list"),
    ((tu.ops.relu, ["x"]), {}, TypeError, r"gradcheck: inputs\[0\] must be a Tensor"),
    ((tu.ops.relu, [np.ones(2)]), dict(module=3), TypeError, "gradcheck: module must be"),
    ((tu.ops.relu, [np.ones(2)]), dict(eps=0), ValueError, "gradcheck: eps must be"),
    ((tu.ops.relu, [np.ones(2)]), dict(n_directions=0), ValueError, "gradcheck: n_directions"),
])
def test_bad_arguments_are_named(args, kwargs, error, words):
    with pytest.raises(error, match=words):
        tu.gradcheck(*args, **kwargs)
