"""Autograd semantics: accumulation, broadcasting, deep graphs, graph reuse, no_grad."""
import numpy as np
import pytest

import tinyunits as tu


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
