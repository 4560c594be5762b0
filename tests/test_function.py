"""Function (tinyunits/function.py): operands that are not Tensors become constants, whose
dtype follows NumPy's promotion but never changes a floating Tensor's (nothing is
truncated); anything else is a TypeError naming the op, as is an op called without a
Tensor."""
import numpy as np
import pytest

import tinyunits as tu
from ops_support import BINARY, OPS, device

host = tu.backend.to_host


# --------------------------------------------------------- operands and the dtype of constants
def test_integer_tensor_times_a_float_is_float():
    x = tu.tensor([1, 2])
    np.testing.assert_array_equal(host((x * 2.5).data), [2.5, 5.0])  # was [2, 4]
    np.testing.assert_array_equal(host((0.5 * x).data), [0.5, 1.0])  # was [0, 0]


@pytest.mark.parametrize("bad", [None, "a"])
def test_operand_that_is_not_a_number_is_a_type_error(bad):
    x = tu.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="Mul: operands must be"):
        x * bad  # None was a NaN constant, "a" a ValueError from NumPy


BAD_OPERANDS = [None, "a", ["a", "b"], object(), 1j, {"a": 1}, [[1.0], [1.0, 2.0]]]


@pytest.mark.parametrize("form, bad", [
    pytest.param(form, bad, id=f"{form}-{bad!r}") for form in sorted(BINARY)
    for bad in BAD_OPERANDS
    if not (bad is None and form in ("ops.linear bias", "ops.layer_norm"))])  # no bias/scale
def test_an_operand_that_is_not_a_number_or_array_is_a_type_error(form, bad):
    call, op = BINARY[form]
    with pytest.raises(TypeError, match=f"{op}: operands must be Tensors, numbers or numeric "
                                        "arrays, got"):
        call(tu.tensor(np.ones((2, 2))), bad)


def test_a_list_holding_tensors_as_an_operand_is_a_type_error_naming_the_op():
    with pytest.raises(TypeError, match="Mul: operands must be Tensors, numbers or numeric"):
        tu.tensor([1.0, 2.0]) * [tu.tensor(1.0), tu.tensor(2.0)]


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_called_without_a_tensor_is_a_type_error_naming_it(name):
    build, shapes, op = OPS[name]
    op = {"reshape": "Reshape", "transpose": "Transpose"}.get(name, op)
    with pytest.raises(TypeError, match=f"{op}: expected at least one Tensor"):
        build(*[None] * len(shapes))


# (tensor dtype, constant): floating tensors keep their dtype; integer ones follow NumPy 2
CONSTANTS = [
    ("int64", 2.5), ("int64", 3), ("int32", 3), ("int32", 2.5), ("int64", [0.5, 1.5, 2.5]),
    ("int64", np.array([0.5, 1.5, 2.5])), ("int64", np.array([1.5], np.float32)),
    ("int32", np.array([2, 3, 4], np.int64)), ("float32", 2.5), ("float32", 3),
    ("float32", np.float64(2.5)), ("float32", np.array([0.5, 1.5, 2.5])),
    ("float32", np.array([1, 2, 3])), ("float32", [1, 2, 3]), ("float64", 2.5),
    ("float64", np.array([0.5, 1.5, 2.5], np.float32)), ("float64", 3),
]


@pytest.mark.parametrize("form", ["a + b", "b + a", "a - b", "b - a", "a * b", "b * a",
                                  "a / b", "b / a"])
@pytest.mark.parametrize("dtype, constant", CONSTANTS,
                         ids=[f"{d}-{type(c).__name__}{getattr(c, 'dtype', '')}"
                              for d, c in CONSTANTS])
def test_constants_follow_numpy_promotion_and_never_truncate(form, dtype, constant):
    values = np.array([1, 2, 3], dtype=dtype)
    t = tu.tensor(values, dtype=dtype)
    operand = device(constant) if isinstance(constant, np.ndarray) else constant
    out = BINARY[form][0](t, operand)
    numpy_result = BINARY[form][0](values, np.asarray(constant) if isinstance(constant, list)
                                   else constant)
    expected = np.dtype(dtype) if values.dtype.kind == "f" else numpy_result.dtype
    assert out.dtype == expected
    np.testing.assert_allclose(host(out.data), numpy_result.astype(expected), rtol=1e-6)


def _integer_inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(1, 4, size=s) for s in shapes]  # >= 1: log's domain


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_on_integer_tensors_computes_what_it_does_on_their_float_values(name):
    """NumPy's promotion: an op with a float constant (leaky_relu's slope, an average's
    1/k^2, dropout's 1/(1-p)) makes an integer tensor float64, never truncates it."""
    build, shapes, _ = OPS[name]
    values = _integer_inputs(shapes)
    if name == "leaky_relu":
        values[0] = values[0] - 2  # negative values meet the slope
    outs = []
    for dtype in ("int64", "float64"):
        tu.manual_seed(0)  # dropout: the same mask
        outs.append(build(*[tu.tensor(v.astype(dtype), dtype=dtype) for v in values]))
    np.testing.assert_allclose(host(outs[0].data), host(outs[1].data), rtol=1e-12)


# --------------------------------------------------------- one Function object, several calls
class Square(tu.Function):
    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, g):
        return (2 * self.x * g,)


def _leaf(values):
    return tu.tensor(values, requires_grad=True, dtype="float64")


def test_one_function_object_called_on_two_inputs_gives_each_its_own_gradient():
    sq = Square()
    a, b = _leaf([1.0, -2.0]), _leaf([5.0, 0.5])
    ya, yb = sq(a), sq(b)  # yb's call ran while ya's graph lived: on a copy of sq
    (ya * 3 + yb).sum().backward()  # dL/da = 3 * 2a, dL/db = 2b
    np.testing.assert_array_equal(host(a.grad), [6.0, -12.0])  # was None: all went to b
    np.testing.assert_array_equal(host(b.grad), [10.0, 1.0])
    assert ya.creator is sq and yb.creator is not sq and type(yb.creator) is Square


def test_one_function_object_nested_gives_the_chain_rules_gradient():
    sq = Square()
    x = _leaf([3.0, -0.5])
    y = sq(sq(x))  # x^4; raised "already freed by an earlier backward" with no backward run
    y.sum().backward()
    np.testing.assert_array_equal(host(y.data), [81.0, 0.0625])
    np.testing.assert_array_equal(host(x.grad), [4 * 27.0, 4 * -0.125])


def test_each_call_of_one_object_backwards_alone_and_the_object_serves_again():
    sq = Square()
    a, b = _leaf([2.0]), _leaf([7.0])
    ya, yb = sq(a), sq(b)
    yb.backward()  # frees yb's node only: ya's still holds a
    ya.backward()
    assert (host(a.grad)[0], host(b.grad)[0]) == (4.0, 14.0)
    c = _leaf([-3.0])
    sq(c).backward()  # both graphs are gone: the object runs its forward itself again
    assert host(c.grad)[0] == -6.0


@pytest.mark.parametrize("make, grad", [
    (lambda: tu.ops.elementwise.ReLU(), lambda v: (v > 0) * 1.0),  # a fast drop-in's object
    (lambda: tu.ops.elementwise.LeakyReLU(0.25), lambda v: np.where(v > 0, 1.0, 0.25)),
    (lambda: tu.ops.arithmetic.Mul(), None),
])
def test_a_library_function_object_called_twice_and_nested(make, grad):
    fn = make()
    va, vb = np.array([1.5, -2.0, 0.5]), np.array([-1.0, 3.0, 2.0])
    a, b = _leaf(va), _leaf(vb)
    if grad is None:  # Mul: ya = a*b, yb = b*b; L = sum(ya + yb)
        (fn(a, b) + fn(b, b)).sum().backward()
        np.testing.assert_allclose(host(a.grad), vb)
        np.testing.assert_allclose(host(b.grad), va + 2 * vb)
        return
    (fn(a) * 2 + fn(fn(b))).sum().backward()
    np.testing.assert_allclose(host(a.grad), 2 * grad(va))
    inner = np.where(vb > 0, vb, 0.25 * vb) if isinstance(fn, tu.ops.elementwise.LeakyReLU) \
        else np.maximum(vb, 0)
    np.testing.assert_allclose(host(b.grad), grad(inner) * grad(vb))


# --------------------------------------------------------- backward's contract, checked
class _Returns(tu.Function):
    """x * y, whose backward returns what it is given (the wrong things, here)."""

    def __init__(self, result):
        self.result = result

    def forward(self, x, y):
        return x * y

    def backward(self, g):
        return self.result(g)


@pytest.mark.parametrize("result, got", [
    (lambda g: g, "got a (ndarray|StrictArray)"),    # the tuple forgotten: was a shape error
    (lambda g: g.sum(), "got a (float32|ndarray|StrictArray)"),  # was "not iterable"
    (lambda g: (g,), "got 1"),                      # one short: was a KeyError of an id
    (lambda g: None, "got a NoneType"),
])
def test_a_backward_that_does_not_return_one_gradient_per_input_is_named(result, got):
    x, y = (tu.tensor([[1.0, 2.0]], requires_grad=True) for _ in range(2))
    with pytest.raises(TypeError, match=rf"^backward: _Returns.backward must return one gradient "
                                        rf"\(or None\) per input, 2 in a tuple, {got}"):
        _Returns(result)(x, y).sum().backward()
    assert x.grad is None and y.grad is None


@pytest.mark.parametrize("make", [lambda: tu.ops.shape.Transpose(), lambda: tu.ops.shape.Pad(1)])
def test_a_shape_function_object_called_on_tensors_of_two_ranks(make):
    # forward keeps what it derives from x beside the constructor's argument, not over it:
    # the copy made for the second call would have carried the first tensor's rank
    fn = make()
    a = _leaf(np.arange(24.0).reshape(2, 3, 4))
    b = _leaf(np.arange(6.0).reshape(2, 3))
    ya, yb = fn(a), fn(b)
    ref = (lambda v: v.T) if isinstance(fn, tu.ops.shape.Transpose) else (lambda v: np.pad(v, 1))
    np.testing.assert_array_equal(host(ya.data), ref(host(a.data)))
    np.testing.assert_array_equal(host(yb.data), ref(host(b.data)))
    (ya.sum() + yb.sum() * 2).backward()
    np.testing.assert_array_equal(host(a.grad), np.ones((2, 3, 4)))
    np.testing.assert_array_equal(host(b.grad), np.full((2, 3), 2.0))
