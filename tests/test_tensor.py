"""Autograd semantics (tinyunits/tensor.py): accumulation, broadcasting, deep graphs, graph
reuse, no_grad; backward refusing a graph whose arrays changed after forward (every op,
every way to change a tensor), each gradient in its leaf's dtype and its own array, the
grad argument of backward, tensor() and the other top-level functions' arguments."""
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, ops, optim
from ops_support import BINARY, OPS, device, leaf, sgd_step


def host(t):
    return t.numpy() if isinstance(t, tu.Tensor) else tu.backend.to_host(t)


def test_gradient_of_polynomial_matches_calculus():
    x = tu.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x ** 3 - 2 * x * x + x).sum().backward()
    v = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(host(x.grad), 3 * v ** 2 - 4 * v + 1, rtol=1e-6)


def test_tensor_used_twice_accumulates_both_paths():
    x = tu.tensor([2.0], requires_grad=True)
    y = x * x + x  # x feeds Mul twice and Add once
    y.backward()
    assert host(x.grad)[0] == pytest.approx(2 * 2.0 + 1)


def test_diamond_graph_orders_nodes_correctly():
    x = tu.tensor([1.5], requires_grad=True)
    a = x * 2
    b = a * 3
    c = a + b  # a reaches c directly and through b
    (c * c).backward()
    # c = 2x + 6x = 8x, d(c^2)/dx = 2 c 8 = 128 x
    assert host(x.grad)[0] == pytest.approx(128 * 1.5)


def test_broadcast_gradient_is_summed_back_to_input_shape():
    a = tu.tensor(np.ones((4, 3)), requires_grad=True)
    b = tu.tensor(np.ones((1, 3)), requires_grad=True)
    c = tu.tensor(np.ones(3), requires_grad=True)
    (a * b + c).sum().backward()
    assert host(b.grad).shape == (1, 3) and host(c.grad).shape == (3,)
    np.testing.assert_allclose(host(b.grad), [[4, 4, 4]])
    np.testing.assert_allclose(host(c.grad), [4, 4, 4])


def test_chain_of_ten_thousand_ops_backpropagates():
    x = tu.tensor([1.0], requires_grad=True, dtype="float64")
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.backward()
    assert host(x.grad)[0] == pytest.approx(1.0001 ** 10_000, rel=1e-9)


def test_leaf_grads_accumulate_across_backward_calls_and_only_leaves_keep_grad():
    x = tu.tensor([3.0], requires_grad=True)
    h = x * 2
    h.sum().backward()
    assert h.grad is None  # not a leaf
    (x * 5).sum().backward()
    assert host(x.grad)[0] == pytest.approx(7.0)


def test_retain_grad_keeps_intermediate_gradient():
    x = tu.tensor([3.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    assert host(h.grad)[0] == pytest.approx(12.0)


def test_second_backward_through_freed_graph_raises_clearly():
    x = tu.tensor([1.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="already freed"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = tu.tensor([1.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert host(x.grad)[0] == pytest.approx(4.0)


def test_new_graph_after_old_one_is_correct():
    x = tu.tensor([2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad = None
    (x * 3).sum().backward()
    assert host(x.grad)[0] == pytest.approx(3.0)


def test_no_grad_records_nothing():
    x = tu.tensor([1.0], requires_grad=True)
    with tu.no_grad():
        y = x * 2
    assert not y.requires_grad and y.creator is None


def test_backward_on_non_scalar_needs_grad_argument():
    x = tu.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="not a scalar"):
        (x * 2).backward()
    (x * 2).backward(tu.tensor([1.0, 10.0]))
    np.testing.assert_allclose(host(x.grad), [2, 20])


def test_scalars_keep_tensor_dtype():
    x = tu.tensor(np.ones(3, dtype=np.float32))
    assert (x * 2.5 + 1).dtype == np.float32
    assert (2.5 / x).dtype == np.float32


def test_default_dtype_and_explicit_dtype():
    assert tu.tensor([1.0]).dtype == np.float32
    assert tu.tensor([1.0], dtype="float64").dtype == np.float64
    assert tu.tensor([1, 2]).dtype.kind == "i"
    with pytest.raises(ValueError, match="float16"):
        tu.set_default_dtype("float16")


def test_tensor_api_surface():
    t = tu.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and len(t) == 2
    assert t.sum().item() == pytest.approx(15.0)
    assert t.T.shape == (3, 2) and t.transpose(1, 0).shape == (3, 2)
    assert t.reshape(3, 2).shape == (3, 2) and t.reshape((6,)).shape == (6,)
    assert t.mean(axis=0).shape == (3,) and t.max(axis=1, keepdims=True).shape == (2, 1)
    assert t[1].shape == (3,) and not t.detach().requires_grad
    assert isinstance(t.numpy(), np.ndarray)


def test_matmul_shape_error_names_both_shapes():
    a, b = tu.tensor(np.ones((2, 3))), tu.tensor(np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(4, 5\)"):
        a @ b


def test_same_seed_same_numbers():
    def draw():
        tu.manual_seed(7)
        return tu.nn.Linear(5, 4).weight.numpy(), host(tu.ops.dropout(tu.tensor(np.ones((4, 4))), 0.5).data)
    (w1, d1), (w2, d2) = draw(), draw()
    assert np.array_equal(w1, w2) and np.array_equal(d1, d2)


# ---------------------------------------------------- a change after forward: backward refuses
def test_changing_data_after_forward_makes_backward_raise():
    x = tu.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    x.data += 1
    with pytest.raises(RuntimeError, match=r"input \d of Mul .* was changed after Mul"):
        y.backward()  # was: x.grad = 2 * (x + 1), from values forward never saw


def test_replacing_data_after_forward_makes_backward_raise():
    x = tu.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    x.data = device([5.0, 6.0], "float32")
    with pytest.raises(RuntimeError, match="was changed after Exp"):
        y.backward()


def test_every_op_is_in_the_version_test():
    assert set(OPS) == set(ops.__all__)


def _write_then_mark(t):
    t.data[...] = 0  # a write into the elements: seen only once it is marked
    t.mark_changed()


def _in_place_operator(t):
    with tu.no_grad():
        t -= 1


def _through_a_view(t):
    v = t.reshape(-1)  # shares t's array and its version counter
    v.data += 1


def _through_detach(t):
    d = t.detach()
    d.data *= 2


def _replace(t):
    t.data = t.data * 1  # the same values in a new array still count as a change


def _augmented(t):
    t.data += 1


CHANGES = {"data +=": _augmented, "data =": _replace, "optimiser step": sgd_step,
           "element write + mark_changed": _write_then_mark, "-= in no_grad": _in_place_operator,
           "through a reshape": _through_a_view, "through detach": _through_detach}


def _op_cases():
    for name, (build, shapes, op) in OPS.items():
        for i in range(len(shapes)):
            for change in CHANGES:
                yield pytest.param(name, i, change, id=f"{name}-input{i}-{change}")


@pytest.mark.parametrize("name, i, change", list(_op_cases()))
def test_every_op_refuses_backward_after_an_input_changed(name, i, change):
    build, shapes, op = OPS[name]
    inputs = [leaf(s, seed=k) for k, s in enumerate(shapes)]
    out = build(*inputs).sum()
    CHANGES[change](inputs[i])
    with pytest.raises(RuntimeError, match=f"input {i} of {op} "
                                           r"\(a Tensor of shape .*\) was changed"):
        out.backward()


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_backward_after_forward_again_is_fine(name):
    """No false alarm: changed, then forward again, backward gives what fresh
    tensors with the same values give; a change after backward is allowed."""
    build, shapes, _ = OPS[name]
    inputs = [leaf(s, seed=k) for k, s in enumerate(shapes)]
    build(*inputs).sum()  # a graph that is never used
    for t in inputs:
        t.data += 1
    tu.manual_seed(1)  # (dropout draws the same mask for both)
    build(*inputs).sum().backward()
    fresh = [tu.tensor(t.numpy(), requires_grad=True) for t in inputs]
    tu.manual_seed(1)
    build(*fresh).sum().backward()
    for t, f in zip(inputs, fresh):
        np.testing.assert_array_equal(host(t.grad), host(f.grad))
        t.data -= 1


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_a_changed_output_that_backward_reads_is_refused(name):
    """Exp, Tanh and Sigmoid keep their output for backward: a change to it is seen by
    the op that read it after (Sum here), or by the op itself when it is the root."""
    build, shapes, op = OPS[name]
    y = build(leaf(shapes[0]))
    loss = y.sum()
    y.data += 1
    with pytest.raises(RuntimeError, match="input 0 of Sum .* was changed"):
        loss.backward()
    y = build(leaf(shapes[0]))
    y.data += 1
    with pytest.raises(RuntimeError, match=f"the output of {op} .* was changed after {op}"):
        y.backward(tu.backend.get_array_module(y.data).ones_like(y.data))


def test_retained_graph_is_refused_after_a_step():
    x = tu.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    sgd_step(x)
    with pytest.raises(RuntimeError, match="was changed after Mul"):
        y.backward()


def test_a_tensor_made_from_a_tensor_is_a_copy():
    x = tu.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    copy = tu.tensor(x)
    copy.data += 1  # nothing of x changes, so its graph may backward
    y.backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])


def test_data_must_be_an_array():
    with pytest.raises(TypeError, match="Tensor.data: the new value must be an array"):
        tu.tensor([1.0]).data = [2.0]


# ----------------------------------- each gradient in its leaf's dtype; integer leaves refused
def test_gradient_has_its_leafs_dtype():
    a = tu.tensor([1.0, 2.0], requires_grad=True, dtype="float64")
    w = tu.tensor([3.0, 4.0], requires_grad=True)  # float32
    (a * w).sum().backward()
    assert a.grad.dtype == np.float64 and w.grad.dtype == np.float32  # w's was float64


@pytest.mark.parametrize("form", sorted(BINARY))
def test_each_gradient_has_its_own_inputs_dtype(form):
    """A float64 and a float32 leaf in one op: each gradient in its leaf's dtype, and
    equal to the gradient of the op done wholly in float64."""
    call = BINARY[form][0]
    grads = {}
    for dtypes in [("float64", "float32"), ("float64", "float64")]:
        a, b = leaf((2, 2), 0, dtypes[0]), leaf((2, 2), 1, dtypes[1])
        out = call(a, b)
        (out * out).sum().backward()
        assert a.grad.dtype == a.dtype and b.grad.dtype == b.dtype
        grads[dtypes] = host(a.grad), host(b.grad)
    for mixed, exact in zip(grads[("float64", "float32")], grads[("float64", "float64")]):
        np.testing.assert_allclose(mixed, exact, rtol=1e-5)


def test_gradients_from_two_dtypes_accumulate_in_the_leafs_dtype():
    a, w = leaf((3,), 0, "float64"), leaf((3,), 1)  # w float32, used by a float64 op and its own
    (a * w + w * w).sum().backward()
    assert w.grad.dtype == np.float32
    np.testing.assert_allclose(host(w.grad), host(a.data) + 2 * host(w.data), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_an_integer_leaf_that_requires_grad_is_refused_at_backward(dtype):
    x = tu.tensor(np.array([1, 2, 3], dtype=dtype))
    x.requires_grad = True  # tu.tensor refuses this; setting it afterwards got around that
    with pytest.raises(TypeError, match="backward: a leaf tensor that requires grad must be "
                                        f"floating .*got dtype {dtype}"):
        (x * 2.5).sum().backward()  # was: x.grad = [2, 2, 2], 2.5 truncated
    assert x.grad is None


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_refuses_an_integer_leaf_before_writing_any_gradient(name):
    build, shapes, _ = OPS[name]
    first = tu.tensor(np.ones(shapes[0], dtype="int64"))
    first.requires_grad = True
    others = [leaf(s, seed=k) for k, s in enumerate(shapes[1:], start=1)]
    out = build(first, *others)
    with pytest.raises(TypeError, match="backward: a leaf tensor that requires grad must be "
                                        "floating"):
        (out * 1.0).sum().backward()
    assert all(t.grad is None for t in others)


# -------------------------------------------------- tensor(), item(), an array beside a tensor
def test_an_array_beside_a_tensor_gives_a_tensor_on_every_backend():
    t = tu.tensor([1.0, 2.0])
    a = device([3.0, 4.0], "float32")  # on strict (and CuPy) its operators defer to Tensor's
    for out, expected in [(a * t, [3.0, 8.0]), (a - t, [2.0, 2.0]), (a / t, [3.0, 2.0])]:
        assert isinstance(out, tu.Tensor)
        np.testing.assert_array_equal(host(out.data), expected)


def test_item_of_more_than_one_element_names_the_shape():
    with pytest.raises(ValueError, match=r"item: a tensor of shape \(2, 2\) has 4 elements"):
        tu.tensor(np.ones((2, 2))).item()


@pytest.mark.parametrize("data", [[tu.tensor(1.0), tu.tensor(2.0)], (tu.tensor([1.0]),)],
                         ids=["0-d", "1-d"])
def test_a_tensor_made_of_tensors_says_how(data):
    with pytest.raises(TypeError, match=r"tensor: data must be numbers .*t.numpy\(\)"):
        tu.tensor(data)


# --------------------------------------------- gradients never alias; backward's grad argument
def leaves(*values):
    return [nn.Parameter(np.array(v, dtype=np.float32)) for v in values]


def test_sum_of_two_parameters_gives_each_its_own_gradient_and_clip_scales_once():
    p1, p2 = leaves([1.0], [1.0])
    (p1 + p2).sum().backward()
    assert p1.grad is not p2.grad
    total = optim.clip_grad_norm([p1, p2], math.sqrt(2) / 2)
    assert total == pytest.approx(math.sqrt(2))
    assert host(p1.grad)[0] == pytest.approx(0.5) and host(p2.grad)[0] == pytest.approx(0.5)


def test_gradient_from_sum_is_writable():
    (p,) = leaves([3.0, 4.0])
    p.sum().backward()
    assert optim.clip_grad_norm([p], 1.0) == pytest.approx(math.sqrt(2))
    p.grad *= 2  # a broadcast view would be read-only
    np.testing.assert_allclose(host(p.grad), [math.sqrt(2)] * 2, rtol=1e-6)


@pytest.mark.parametrize("build", [
    lambda p1, p2: p1 + p2,                      # add hands one array to both inputs
    lambda p1, p2: p1 + p2.reshape(2),           # ... and a view of it to the second
    lambda p1, p2: (p1 + p2).sum() * 1.0,
])
def test_gradients_never_alias_each_other(build):
    p1, p2 = leaves([1.0, 2.0], [3.0, 4.0])
    out = build(p1, p2)
    out.backward(np.ones(out.shape, np.float32) if out.shape else None)
    p1.grad[...] = 0  # in place, as optimisers and clipping work
    np.testing.assert_array_equal(host(p2.grad), [1.0, 1.0])


def test_gradient_never_aliases_the_users_array():
    (p,) = leaves([1.0, 2.0])
    seed = tu.backend.asarray(np.array([5.0, 6.0], np.float32))
    p.backward(seed)
    p.grad *= 0
    np.testing.assert_array_equal(host(seed), [5.0, 6.0])


@pytest.mark.parametrize("grad, error, words", [
    (np.ones(3, np.float32), ValueError, "shape"),
    (np.ones((2, 1), np.float32), ValueError, "shape"),
    (np.ones(2, np.int64), TypeError, "floating"),
    ("ones", (TypeError, ValueError), "grad"),
    (object(), TypeError, "grad")])
def test_backward_grad_argument(grad, error, words):
    (p,) = leaves([1.0, 2.0])
    with pytest.raises(error, match=f"backward: .*{words}"):
        (p * 2.0).backward(grad)


def test_backward_grad_from_host_list_is_moved_to_the_backend():
    (p,) = leaves([1.0, 2.0])
    (p * 2.0).backward([1.0, 3.0])
    np.testing.assert_array_equal(host(p.grad), [2.0, 6.0])


# ------------------------------------------------------------------------- top-level functions
@pytest.mark.parametrize("call, error, words", [
    (lambda: tu.manual_seed(-1), ValueError, "manual_seed: seed"),
    (lambda: tu.manual_seed(1.5), TypeError, "manual_seed: seed"),
    (lambda: tu.manual_seed("0"), TypeError, "manual_seed: seed"),
    (lambda: tu.set_default_dtype("float16"), ValueError, "set_default_dtype: name"),
    (lambda: tu.set_backend("torch"), ValueError, "set_backend"),
    (lambda: tu.tensor("abc"), TypeError, "tensor: data"),
    (lambda: tu.tensor([1, 2], requires_grad=True), TypeError, "tensor: data must be floating"),
    (lambda: tu.tensor([1.0], requires_grad="yes"), TypeError, "tensor: requires_grad"),
    (lambda: tu.tensor([1.0], dtype="floot32"), TypeError, "tensor: data"),
    (lambda: tu.tensor({"a": 1}), TypeError, "tensor: data"),
    (lambda: tu.ops.add(1.0, 2.0), TypeError, "Add: expected at least one Tensor.*got float, float"),
    (lambda: tu.ops.relu([1.0, 2.0]), TypeError, "ReLU: expected at least one Tensor.*got list"),
])
def test_top_level_functions(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ------------------------------------------------ tu.tensor copies its data; tu.as_tensor shares
@pytest.mark.parametrize("where", ["host", "device"])
def test_tensor_copies_so_a_later_change_to_the_data_changes_nothing(where):
    a = np.array([1.0, -2.0, 3.0], np.float32)
    a = device(a) if where == "device" else a
    w = tu.tensor(a, requires_grad=True)
    y = (w * w).sum()
    a *= 10  # shared, this changed w's values and the gradient that Mul saved
    y.backward()
    np.testing.assert_array_equal(host(w.data), [1.0, -2.0, 3.0])
    np.testing.assert_array_equal(host(w.grad), [2.0, -4.0, 6.0])


def test_as_tensor_shares_an_array_of_the_backend_in_its_dtype_and_converts_the_rest():
    a = device(np.array([1.0, 2.0], np.float32))
    shared = tu.as_tensor(a)
    a *= 10
    np.testing.assert_array_equal(host(shared.data), [10.0, 20.0])
    wide = device(np.array([1.0, 2.0]))  # float64: the default dtype is a conversion
    converted = tu.as_tensor(wide)
    wide *= 10
    assert converted.dtype == np.float32
    np.testing.assert_array_equal(host(converted.data), [1.0, 2.0])
    kept = tu.as_tensor(wide, dtype="float64")
    wide += 1
    np.testing.assert_array_equal(host(kept.data), [11.0, 21.0])
    np.testing.assert_array_equal(host(tu.as_tensor([1, 2]).data), [1, 2])
    x = tu.tensor([1.0], requires_grad=True)
    assert tu.as_tensor(x) is x and tu.as_tensor(x, dtype="float32") is x
    with pytest.raises(TypeError, match="as_tensor: data must be numeric"):
        tu.as_tensor("abc")


# -------------------------------------------- a 0-d parameter's gradient stays a 0-d array
def _is_0d_array(g):
    return tu.backend.is_array(g) and g.shape == () and not isinstance(g, np.generic)


@pytest.mark.parametrize("path", ["used twice", "two backwards", "retained inner", "Parameter"])
def test_a_0d_gradient_that_accumulates_stays_a_0d_array(path):
    p = nn.Parameter(2.0) if path == "Parameter" else tu.tensor(2.0, requires_grad=True)
    if path == "two backwards":
        (p * 3).backward()
        (p * 4).backward()
        watched, want = p, 7.0
    elif path == "retained inner":
        q = p * 1.5
        q.retain_grad()
        (q * q + q).backward()  # d/dq = 2q + 1 = 7
        watched, want = q, 7.0
    else:
        (p * p + p).backward()  # 2p + 1
        watched, want = p, 5.0
    assert _is_0d_array(watched.grad), type(watched.grad)  # was a NumPy float32 scalar
    assert watched.grad.dtype == np.float32 and float(host(watched.grad)) == want


def test_sgd_momentum_over_a_0d_parameter_used_twice_follows_the_formula():
    p = nn.Parameter(2.0, dtype="float64")
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    value, velocity = 2.0, 0.0
    for _ in range(3):
        opt.zero_grad()
        (p * p + p).backward()
        velocity = 0.9 * velocity + (2 * value + 1)  # PyTorch's v = mu v + g; p -= lr v
        value -= 0.1 * velocity
        opt.step()
    assert float(host(p.data)) == pytest.approx(value, rel=1e-12)  # momentum was lost


def test_clip_grad_norm_clips_a_0d_parameter_used_twice():
    p = tu.tensor(2.0, requires_grad=True)
    (p * p + p).backward()
    assert optim.clip_grad_norm([p], 1.0) == pytest.approx(5.0)
    assert float(host(p.grad)) == pytest.approx(1.0, rel=1e-6)  # was left at 5
