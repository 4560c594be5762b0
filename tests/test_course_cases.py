"""The grader's visible cases and gradcheck's unit cases: one rule over each Function's space.

Each unit declares its Function's space (options and input kinds) and space.py's
covering picks the calls; these tests hold the rule to its word: every value and
every allowed pair of values is covered, each operand is broadcast in turn, inputs
on kinks are really on them and only defined gradients are graded, the library
passes every case (float64 and float32), and the cases come out the same every time.
"""
import itertools

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend
from tinyunits.course import EXERCISES
from tinyunits.course.cases import CASES, cases_of
from tinyunits.gradcheck.cases import dac, engine, focusing, hannet, tmaf
from tinyunits.gradcheck.cases import two_argument as two_args
from tinyunits.gradcheck.cases.space import Space, calls, covering

SPACES = {**{f"engine_{name}": pair for name, pair in engine.SPACES.items()},
          "dac_linear": (dac.LINEAR, dac.build_linear), "dac_conv": (dac.CONV, dac.build_conv),
          "tmaf_diagonal": (tmaf.SPACE, tmaf.build_diagonal),
          "tmaf_tridiagonal": (tmaf.SPACE, tmaf.build_tridiagonal),
          "hannet": (hannet.SPACE, hannet.build), "two_argument": (two_args.SPACE, two_args.build),
          "focusing": (focusing.SPACE, focusing.build)}
EXERCISE_SPACE = {  # exercise -> the space its cases come from
    "engine_mul": "engine_mul", "engine_div": "engine_div", "engine_sigmoid": "engine_sigmoid",
    "engine_sum_to": "engine_sum_to", "engine_matmul": "engine_matmul",
    "engine_softmax_ce": "engine_softmax_ce", "dac_dW": "dac_linear", "dac_dB": "dac_linear",
    "dac_dx": "dac_linear", "dac_conv": "dac_conv", "two_argument_inner": "two_argument",
    "tmaf_levels": "tmaf_diagonal", "tmaf_tridiagonal": "tmaf_tridiagonal",
    "hannet_du": "hannet", "hannet_dx": "hannet", "focusing_dmu": "focusing",
    "focusing_dsigma": "focusing"}


def pairs(point):
    return set(itertools.combinations(sorted(point.items(), key=str), 2))


def test_every_exercise_has_cases_from_a_space():
    assert set(CASES) == {e.name for e in EXERCISES} == set(EXERCISE_SPACE)


@pytest.mark.parametrize("name", SPACES)
def test_the_covering_has_every_value_and_every_allowed_pair(name):
    space = SPACES[name][0]
    chosen = covering(space)
    assert chosen[0] == space.points()[0], "the default point comes first"
    assert all(space.allowed(p) for p in chosen)
    for option, values in space.options.items():
        for value in values:
            if any(p[option] == value for p in space.points()):
                assert any(p[option] == value for p in chosen), (option, value)
    missing = set().union(*map(pairs, space.points())) - set().union(*map(pairs, chosen))
    assert not missing, sorted(missing, key=str)[:5]
    if len(space.options) > 2:  # of two options, every pair is every point
        assert len(chosen) < len(space.points()), "a covering, not the whole product"


def test_the_covering_of_a_small_space():
    space = Space({"a": (0, 1), "b": (0, 1), "c": (0, 1)},
                  lambda p: not (p["a"] == 1 and p["b"] == 1 and p["c"] == 1))
    chosen = covering(space)
    assert chosen[0] == {"a": 0, "b": 0, "c": 0} and {"a": 1, "b": 1, "c": 1} not in chosen
    assert len(chosen) <= 5 and chosen == covering(space)
    with pytest.raises(ValueError, match="allows no point"):
        covering(Space({"a": (0,)}, lambda p: False))


@pytest.mark.parametrize("name", CASES)
def test_each_exercise_meets_every_option_value_it_can_grade(name):
    space, build = SPACES[EXERCISE_SPACE[name]]
    cases = cases_of(name)
    grads = {grad for case in cases for grad in case.graded.values()}
    made = calls(space, build)
    assert len({c.label for c in made}) == len(made), "two calls with one label"
    graded = [c for c in made if c.label in {case.label for case in cases}]
    for option, values in space.options.items():
        for value in values:
            if any(c.point[option] == value and {c.names[i] for i in c.defined} & grads
                   for c in made):
                assert any(c.point[option] == value for c in graded), (option, value)


@pytest.mark.parametrize("name", ["engine_mul", "engine_div", "engine_matmul"])
def test_each_operand_is_broadcast_in_turn(name):
    def batch(shape):  # the axes an operand of a matmul broadcasts over
        return shape[:-2] if name == "engine_matmul" else shape

    seen = set()
    for case in cases_of(name):
        a, b = (batch(x.shape) for x in case.inputs)
        out = np.broadcast_shapes(a, b)
        seen.add((a != out, b != out))
    assert {(False, False), (True, False), (False, True), (True, True)} <= seen


def test_inputs_on_kinks_and_breakpoints_are_on_them_and_grade_only_what_is_defined():
    kinked = [c for c in calls(dac.LINEAR, dac.build_linear) + calls(dac.CONV, dac.build_conv)
              if c.point["B + x"] != "off the kink"]
    assert kinked
    for c in kinked:
        x, _, B = (np.asarray(a, dtype="float64") for a in c.inputs)
        z = B[None, :, :, None, None] + x[:, None] if x.ndim == 4 else B + x[:, None, :]
        assert (z == 0).any() and c.defined == (1,)
    for build in (tmaf.build_diagonal, tmaf.build_tridiagonal):
        on = [c for c in calls(tmaf.SPACE, build) if c.point["x"] != "between breakpoints"]
        assert on and any(0.0 in c.point["breakpoints"] for c in on)
        for c in on:
            x = c.inputs[0].astype("float64")
            s = np.asarray(c.point["breakpoints"], dtype=c.inputs[0].dtype)
            assert np.isin(x, s.astype("float64")).any() and 0 not in c.defined
    for name in ("dac_dB", "dac_dx", "tmaf_levels"):  # dx and dB: not on a kink
        for case in cases_of(name):
            assert "B + x = 0" not in case.label or case.graded == {1: "dW"}
    zero_u = [c for c in calls(hannet.SPACE, hannet.build) if c.point["u"] == "an entry 0"]
    assert zero_u and all((c.inputs[1] == 0).sum() == 1 for c in zero_u)


def test_the_extreme_sigmoid_case_is_extreme_throughout():
    extreme = [c for c in cases_of("engine_sigmoid") if "extreme" in c.label]
    assert extreme and all(abs(c.inputs[0]).min() >= 6 for c in extreme)
    assert any((c.inputs[0] > 0).any() and (c.inputs[0] < 0).any() for c in extreme)


def test_the_layers_have_float32_cases():
    for name in CASES:
        if not name.startswith("engine_"):
            dtypes = {str(x.dtype) for case in cases_of(name) for x in case.inputs}
            assert dtypes == {"float32", "float64"}, name


def _gradients(case, inputs, g):
    """The graded inputs' gradients from the library's backward, through the engine."""
    tensors = [tu.Tensor(x, requires_grad=i in case.graded) for i, x in enumerate(inputs)]
    case.make()(*tensors).backward(g)
    return [t.grad for t in tensors]


@pytest.mark.parametrize("name", CASES)
def test_the_library_passes_every_case(name):
    tu.set_default_dtype("float64")
    for case in cases_of(name):
        graded = sorted(case.graded)
        fixed = [backend.asarray(x, dtype="float64") for x in case.inputs]

        def fn(*checked):
            args = list(fixed)
            for i, t in zip(graded, checked):
                args[i] = t
            return case.make()(*args)
        report = tu.gradcheck(fn, [fixed[i] for i in graded])
        assert report.ok, f"{case.label}:\n{report}"
        if case.inputs[0].dtype == np.float32:  # the library's float32 backward stays float32
            inputs = [backend.asarray(x) for x in case.inputs]
            y = case.make().forward(*inputs)
            g = backend.asarray(np.random.default_rng(0).normal(size=y.shape), dtype=y.dtype)
            assert y.dtype == np.float32 and all(
                _gradients(case, inputs, g)[i].dtype == np.float32 for i in graded), case.label


@pytest.mark.parametrize("name", ["dac_conv", "tmaf_tridiagonal", "focusing_dmu"])
def test_the_cases_are_the_same_every_time_and_each_call_has_its_own_seed(name):
    first, again = cases_of(name), cases_of(name)
    assert [c.label for c in first] == [c.label for c in again]
    for a, b in zip(first, again):
        assert all(np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs))
    space, build = SPACES[EXERCISE_SPACE[name]]
    points = covering(space)
    backend.manual_seed(len(points) - 1)  # the last call built alone: the same inputs
    last = build(points[-1])
    made = calls(space, build)[-1]
    assert all(np.array_equal(x, y) for x, y in zip(last.inputs, made.inputs))
