"""Tensor as a Python value (tinyunits/ops/operators.py): in-place operators, truth value,
conversion to numbers, comparisons, len, iteration, membership and conversion to NumPy.
Each answers as NumPy does, or refuses with an error that says what to write instead."""
import math
import operator
import re

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn
from ops_support import leaf

host = tu.backend.to_host


# ------------------------------------- truth value, numbers, comparisons, len, iter, in, NumPy
def test_bool_of_a_one_element_tensor_is_its_value():
    assert not tu.tensor([0.0])  # was True (bool fell back on len)
    assert tu.tensor(2.0) and not tu.tensor(0)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tu.tensor([1.0, 2.0]))


@pytest.mark.parametrize("values, truth", [([0.0], False), ([3.0], True), (0, False),
                                           ([[1]], True), (-0.5, True)])
def test_bool_of_one_element(values, truth):
    assert bool(tu.tensor(values)) is truth


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2)])
def test_bool_of_more_or_fewer_elements_is_an_error(shape):
    with pytest.raises(ValueError, match=r"bool: the truth value of a tensor of shape"):
        if tu.tensor(np.ones(shape)):
            pass


@pytest.mark.parametrize("values", [2.75, [2.75], [[2.75]]])
def test_a_one_element_tensor_converts_to_a_number(values):
    t = tu.tensor(values, requires_grad=True)
    assert float(t) == 2.75 and int(t) == 2 and int(tu.tensor(values) * -1) == -2
    assert f"{t:.3f}" == "2.750" and f"{t:>6.1f}" == "   2.8" and f"{t}" == str(t)
    assert not math.isnan(t)


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2)])
@pytest.mark.parametrize("call, convert", [("float", float), ("int", int),
                                           ("format", lambda t: f"{t:.3f}")])
def test_a_tensor_of_more_or_fewer_elements_is_no_number(call, convert, shape):
    with pytest.raises(TypeError, match=rf"{call}: only a one-element tensor converts to a "
                                        "Python number, got a tensor of shape "
                                        + re.escape(str(shape))):
        convert(tu.tensor(np.ones(shape)))


@pytest.mark.parametrize("other", [lambda t: tu.tensor(host(t.data)), lambda t: host(t.data),
                                   lambda t: t.data, lambda t: 1.0, lambda t: np.float32(1),
                                   lambda t: [1.0, 2.0]],
                         ids=["tensor", "host array", "its array", "float", "numpy scalar", "list"])
@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparing_a_tensor_with_values_is_an_error_not_identity(op, other):
    """Python's default == compares identity: tensor([1.]) == tensor([1.]) was False, and
    np.mean(pred == y), a student's accuracy, a silent 0.0."""
    t = tu.tensor([1.0, 2.0])
    compare = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}[op]
    mirror = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}  # x < t asks t: t > x
    for a, b in [(t, other(t)), (other(t), t)]:
        named = op if isinstance(a, tu.Tensor) else mirror.get(op, op)
        with pytest.raises(TypeError, match=re.escape(f"{named}: a Tensor does not define {named}")
                           + (r" \(Python's default compares identity" if op in ("==", "!=") else ";")):
            compare(a, b)


def test_a_tensor_is_still_hashed_by_identity_and_unequal_to_none_and_other_objects():
    t, u = tu.tensor([1.0]), tu.tensor([1.0])
    assert len({t, u, t}) == 2 and {t: 1}[t] == 1 and t in [t]
    assert (t == None) is False and (t != None) is True and (t == "t") is False  # noqa: E711


@pytest.mark.parametrize("call, word", [(len, "len"), (list, "iter"), (iter, "iter")])
def test_len_and_iteration_of_a_0d_tensor_are_type_errors(call, word):
    with pytest.raises(TypeError, match=f"{word}: a 0-d tensor"):
        call(tu.tensor(3.0))  # list() was [] (iteration stopped at x[0]'s IndexError)


def test_iterating_a_tensor_gives_its_rows():
    x = tu.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    rows = list(x)
    assert len(rows) == len(x) == 3
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(host(row.data), np.arange(6.0).reshape(3, 2)[i])
    sum(r.sum() for r in rows).backward()  # each row is in the graph
    np.testing.assert_array_equal(host(x.grad), np.ones((3, 2)))


@pytest.mark.parametrize("value, inside", [(1.0, True), (2, True), (5.0, False),
                                           (tu.tensor(2.0), True), (np.float32(7), False)],
                         ids=repr)
def test_membership_is_numpys(value, inside):
    assert (value in tu.tensor([[1.0, 2.0], [3.0, 4.0]])) is inside  # 1.0 in t was False


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda t: np.array([t, t]),
                                     lambda t: np.stack([t])], ids=["asarray", "array",
                                                                     "list", "stack"])
def test_numpy_conversion_of_a_tensor_is_explicit(convert):
    big = tu.tensor(np.ones(10 ** 6))
    with pytest.raises(TypeError, match=r"np.asarray: a Tensor converts to NumPy explicitly, "
                                        r"with t.numpy\(\)"):
        convert(big)  # was: a million GetItem nodes, into an object array of 0-d tensors


# -------------------------------------------------------------------------- in-place operators
def test_hand_written_sgd_step_updates_the_parameter_itself():
    layer = nn.Linear(3, 2)
    before = layer.weight.numpy()
    layer(tu.tensor(np.ones((4, 3)))).sum().backward()
    with tu.no_grad():
        for p in layer.parameters():
            p -= 0.5 * p.grad  # was: rebinds p to a new tensor, the layer unchanged
    np.testing.assert_allclose(layer.weight.numpy(), before - 0.5 * host(layer.weight.grad))


IN_PLACE = {"+=": (operator.iadd, np.add), "-=": (operator.isub, np.subtract),
            "*=": (operator.imul, np.multiply), "/=": (operator.itruediv, np.divide),
            "**=": (operator.ipow, np.power)}


@pytest.mark.parametrize("symbol", sorted(IN_PLACE))
def test_in_place_operators(symbol):
    apply, reference = IN_PLACE[symbol]
    p = leaf((3,))
    values = p.numpy()
    with tu.no_grad():
        assert apply(p, 2) is p  # in place: the same tensor
    np.testing.assert_allclose(p.numpy(), reference(values, 2).astype(np.float32), rtol=1e-6)
    with pytest.raises(RuntimeError, match=f"{re.escape(symbol)}: a leaf tensor that "
                                           "requires grad"):
        apply(p, 2)  # a parameter in grad mode, as PyTorch
    h = p * 1.0
    assert apply(h, 2) is not h  # in the graph: a new node
    y = p * 1.0
    loss = (y * y).sum()
    with tu.no_grad():
        apply(p, 2)
    with pytest.raises(RuntimeError, match="was changed after"):
        loss.backward()
    with pytest.raises(TypeError, match=f"({re.escape(symbol)}|pow): .*must be"):
        with tu.no_grad():
            apply(p, "a")


@pytest.mark.parametrize("symbol", sorted(IN_PLACE))
def test_in_place_operators_in_a_graph_have_the_out_of_place_gradient(symbol):
    def fn(t):
        h = t * 1.0
        return IN_PLACE[symbol][0](h, 2)
    report = tu.gradcheck(fn, [np.random.default_rng(0).uniform(0.5, 1.5, size=(3, 2))])
    assert report.ok, str(report)


def test_accumulating_a_loss_with_plus_equals_still_builds_the_graph():
    x = tu.tensor([1.0, 2.0], requires_grad=True)
    loss = 0
    for k in range(3):
        loss += (x * float(k + 1)).sum()
    loss.backward()
    np.testing.assert_allclose(host(x.grad), [6.0, 6.0])


def test_in_place_into_an_integer_tensor_never_truncates():
    x = tu.tensor([1, 2])
    with pytest.raises(TypeError, match=r"\+=: cannot write the result into this int64"):
        x += 2.5
    np.testing.assert_array_equal(host(x.data), [1, 2])
    x += 3
    np.testing.assert_array_equal(host(x.data), [4, 5])
