"""gradcheck explains a wrong backward (issue 26.1) and misleads no one (issue 23, class 7).

Each mistake is a planted Function; the words are diagnose.py's, which the course
grader uses too (tests/test_course_grader.py checks that both say the same). The
planted Functions are no exercise's (y = a sin(b), a transpose): this file is in
the student copy.
"""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits.function import Function
from tinyunits.gradcheck import load_cases, main
from tinyunits.gradcheck.diagnose import diagnose, factor_text
from tinyunits.tensor import GradientShapeError

rng = np.random.default_rng(0)
A, B = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))


class Planted(Function):
    """y = a sin(b), whose backward is `wrong(self, g)`; da and db below are right."""

    def __init__(self, wrong):
        self.wrong = wrong

    def forward(self, a, b):
        self.a, self.b = a, b
        return a * np.sin(b)

    def backward(self, g):
        return self.wrong(self, g)


def da(f, g):
    return g * np.sin(f.b)


def db(f, g):
    return g * f.a * np.cos(f.b)


def check(wrong, a=A, b=B):
    return tu.gradcheck(lambda a, b: Planted(wrong)(a, b), [a, b])


def test_a_sign_flip_is_named_with_its_worst_index():
    report = check(lambda f, g: (-da(f, g), db(f, g)))
    bad, good = report.rows
    assert not bad.ok and bad.diagnosis == "wrong sign"
    assert len(bad.worst) == 2 and all(0 <= k < n for k, n in zip(bad.worst, (3, 4)))
    assert good.ok and good.diagnosis == "" and good.worst == ()
    assert f"worst at {bad.worst}, wrong sign" in str(report)


def test_a_factor_2_and_a_simple_fraction():
    report = check(lambda f, g: (da(f, g), 2 * db(f, g)))
    assert report.rows[1].diagnosis == "off by a constant factor: it is 2 times the right gradient"
    report = check(lambda f, g: (da(f, g) / 12, db(f, g)))
    assert report.rows[0].diagnosis.endswith("it is 1/12 times the right gradient")
    assert factor_text(1 / 12) == "1/12" and factor_text(-1.5) == "-3/2"
    assert factor_text(0.0833) == "0.0833" and factor_text(2.0) == "2"


def test_no_factor_is_claimed_of_a_one_element_gradient():
    report = check(lambda f, g: (da(f, g), 2 * db(f, g)), A[:1, :1], B[:1, :1])
    assert not report.rows[1].ok and report.rows[1].diagnosis == ""


class TransposedBack(Function):
    """y = x.T, whose backward forgets to transpose g back."""

    def forward(self, x):
        return x.T.copy()

    def backward(self, g):
        return (g,)  # the right one is g.T


def test_a_transposed_gradient_square_or_not():
    square = tu.gradcheck(lambda x: TransposedBack()(x), [rng.normal(size=(4, 4))])
    assert square.rows[0].diagnosis == "transposed (its last two axes are swapped)"
    oblong = tu.gradcheck(lambda x: TransposedBack()(x), [rng.normal(size=(3, 4))])
    (row,) = oblong.rows
    assert (row.name, row.mode, row.ok) == ("input0", "shape", False)
    assert row.diagnosis == "backward gave shape (4, 3): transposed (its last two axes are swapped)"


class ChannelBias(Function):
    """x + b over the channel axis of (N, C, H, W): b[:, None, None] broadcasts inside."""

    def forward(self, x, b):
        return x + b[:, None, None]

    def backward(self, g):
        return g, g  # the bias's gradient must be summed over N, H and W


def test_a_missing_broadcast_sum_is_a_shape_story():
    report = tu.gradcheck(lambda x, b: ChannelBias()(x, b),
                          [rng.normal(size=(2, 3, 4, 5)), rng.normal(size=3)])
    (row,) = report.rows
    assert (row.name, row.shape, row.ok) == ("input1", (3,), False)
    assert row.diagnosis == ("backward gave shape (2, 3, 4, 5): broadcast axes not summed back")
    # deeper in a graph, the row names the Function and its input
    report = tu.gradcheck(lambda x, b: ChannelBias()(x * 1.0, b * 2.0),
                          [rng.normal(size=(2, 3, 4, 5)), rng.normal(size=3)])
    assert report.rows[0].name == "ChannelBias input1" and not report.ok


def test_the_engine_names_the_function_whose_gradient_has_the_wrong_shape():
    x = tu.tensor(rng.normal(size=(2, 3, 4, 5)), requires_grad=True)
    b = tu.tensor(rng.normal(size=3), requires_grad=True)
    with pytest.raises(GradientShapeError, match=r"ChannelBias.backward returned a gradient "
                       r"of shape \(2, 3, 4, 5\) for its input 1 of shape \(3,\)"):
        ChannelBias()(x, b).sum().backward()


def test_swapped_gradients_and_an_in_place_change():
    report = check(lambda f, g: (db(f, g), da(f, g)))
    assert report.rows[0].diagnosis == "swapped with dinput1: it holds the right dinput1"

    def shared(f, g):
        m = g * 1.0  # private to this backward, but shared by both lines below
        gb = None
        if f.needs_grad(1):
            m *= f.a * np.cos(f.b)  # db, computed in place
            gb = m
        return (m * np.sin(f.b) if f.needs_grad(0) else None), gb

    report = check(shared)
    assert report.rows[1].ok and report.rows[0].diagnosis == (
        "it depends on a value changed in place (right when computed without the other "
        "gradients)")


def test_a_gradient_that_is_exactly_zero_passes():
    # exp(x) exp(-x) = 1: its numerical gradient is rounding noise, its relative error 1
    report = tu.gradcheck(lambda x: x.exp() * (-x).exp(), [np.linspace(-1, 1, 5)])
    assert report.ok, str(report)
    wrong = tu.gradcheck(lambda x: x.exp() * (-x).exp() + 1e-6 * x * x, [np.linspace(-1, 1, 5)],
                         atol=0)
    assert not wrong.ok  # the absolute tolerance can be set to zero


class Boom(Exception):
    pass


def test_a_module_keeps_its_dtype_values_and_grads():
    tu.set_default_dtype("float32")
    layer = tu.nn.Linear(3, 2)
    x = tu.tensor(rng.normal(size=(4, 3)).astype("float32"))
    layer(x).sum().backward()
    weight, grad = layer.weight.data, layer.weight.grad
    assert tu.gradcheck(layer, [rng.normal(size=(4, 3))], module=layer).ok
    assert layer.weight.dtype == layer.bias.dtype == np.float32
    assert layer.weight.data is weight and layer.weight.grad is grad

    def broken(x):
        raise Boom
    with pytest.raises(Boom):
        tu.gradcheck(broken, [rng.normal(size=(4, 3))], module=layer)
    assert layer.weight.dtype == np.float32 and layer.weight.grad is grad


def test_a_module_with_a_buffer_keeps_it():
    tu.set_default_dtype("float32")
    norm = tu.nn.BatchNorm1d(3)
    mean = norm.running_mean
    tu.gradcheck(norm, [rng.normal(size=(5, 3))], module=norm)
    assert norm.running_mean is mean and norm.running_mean.dtype == np.float32


def test_command_line_says_when_a_pattern_matches_nothing(capsys):
    assert main(["no_such_case*"]) == 2
    err = capsys.readouterr().err
    assert "no case matches 'no_such_case*'" in err and f"the {len(load_cases())} cases" in err


def test_command_line_prints_the_diagnosis(monkeypatch, capsys):
    cases = load_cases()
    monkeypatch.setitem(cases, "planted_sign", lambda: (
        lambda a, b: Planted(lambda f, g: (-da(f, g), db(f, g)))(a, b), [A, B]))
    assert main(["planted_sign"]) == 1
    assert "wrong sign" in capsys.readouterr().out


def test_diagnose_shapes_and_zeros():
    ref = rng.normal(size=(3, 4))
    assert diagnose(np.zeros((3, 4)), ref).story == "it is zero everywhere, where it should not be"
    assert diagnose(ref.T, ref).story == "transposed (its last two axes are swapped)"
    assert diagnose(np.ones((5, 3, 4)), ref).story == "broadcast axes not summed back"
    some = ref.copy()
    some[0, :2] = 0
    assert diagnose(some, ref).story == "zero at 2 of 12 entries where it should not be"
    assert diagnose(some * 3, ref).story == ""  # not only zeros: no zero story
    worst = ref.copy()
    worst[2, 1] += 1
    assert diagnose(worst, ref).index == (2, 1)


def test_no_factor_is_claimed_from_one_nonzero_entry():
    # a gradient with one nonzero entry: any wrong value there is "a factor" of it
    ref = np.zeros((3, 4))
    ref[1, 2] = 0.7
    assert diagnose(2 * ref, ref).story == ""
    assert diagnose(-ref, ref).story == "wrong sign"
    ref[2, 0] = -0.3  # two nonzero entries: a factor is a story again
    assert diagnose(2 * ref, ref).story == ("off by a constant factor: it is 2 times the right "
                                            "gradient")


def test_nan_and_inf_are_named():
    ref = rng.normal(size=(3, 4))
    bad = ref.copy()
    bad[0, 1], bad[2, 3] = np.nan, np.inf
    found = diagnose(bad, ref)
    assert found.story == "it holds NaN and inf at 2 of 12 entries" and found.index == (0, 1)
    report = check(lambda f, g: (np.inf * da(f, g), db(f, g)))
    assert report.rows[0].diagnosis == "it holds inf at 12 of 12 entries"
