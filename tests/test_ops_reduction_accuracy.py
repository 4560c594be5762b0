"""float32 reductions over many values are accurate to PyTorch's level (within about 1e-6
relative of the exact answer): sum and mean over a non-last axis, where NumPy adds one
value at a time, and the sums inside batch/layer norm, Linear's and Conv2d's bias
gradients and softmax cross-entropy. Each is compared with the same computation in
float64."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, ops

N = 4_000_000  # large enough that adding one float32 at a time drifts by ~4 %


def host(t):
    return backend.to_host(t.data if isinstance(t, tu.Tensor) else t)


def tenths():
    return np.full((N, 2), 0.1, dtype=np.float32)


def test_sum_over_axis_0_of_four_million_tenths_is_400000():
    y = tu.tensor(tenths()).sum(axis=0)
    assert y.dtype == np.float32
    np.testing.assert_allclose(host(y), [400_000.0] * 2, rtol=1e-6)


def test_mean_over_axis_0_of_four_million_tenths_is_a_tenth():
    y = tu.tensor(tenths()).mean(axis=0)
    assert y.dtype == np.float32
    np.testing.assert_allclose(host(y), [0.1] * 2, rtol=1e-6)


def test_the_sums_agree_with_torchs_float32_sum():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).uniform(0, 1, size=(N, 2)).astype(np.float32)
    want = torch.from_numpy(x).sum(dim=0).numpy()
    exact = x.astype(np.float64).sum(axis=0)
    got = host(tu.tensor(x).sum(axis=0))
    assert np.abs(got - exact).max() <= 2 * np.abs(want - exact).max() + 1e-6 * exact.max()


def test_the_gradient_of_a_sum_over_axis_0_keeps_float32():
    x = tu.tensor(np.ones((3, 2), np.float32), requires_grad=True)
    x.sum(axis=0).sum().backward()
    assert x.grad.dtype == np.float32


def test_integer_sums_keep_numpys_dtype():
    x = tu.tensor(np.arange(6, dtype=np.int32).reshape(3, 2))
    np.testing.assert_array_equal(host(x.sum(axis=0)), [6, 9])
    assert x.sum(axis=0).dtype == np.arange(2, dtype=np.int32).sum().dtype


def test_batch_norm_statistics_of_a_large_batch_are_float64s():
    """Mean and variance of 2,000,000 values near 1000 (the mean's rounding shows in var)."""
    rng = np.random.default_rng(1)
    x = (1000 + rng.normal(size=(2_000_000, 2))).astype(np.float32)
    layer = nn.BatchNorm1d(2, momentum=1.0)  # running stats = this batch's
    layer(tu.tensor(x))
    wide = x.astype(np.float64)
    np.testing.assert_allclose(host(layer.running_mean), wide.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(host(layer.running_var), wide.var(axis=0, ddof=1), rtol=1e-4)


def test_layer_norm_over_a_long_row_has_mean_0_and_variance_1():
    rng = np.random.default_rng(2)
    x = (1000 + rng.normal(size=(2, N // 2))).astype(np.float32).T.copy().T  # rows strided
    y = host(ops.layer_norm(tu.tensor(x), 1)).astype(np.float64)
    np.testing.assert_allclose(y.mean(axis=1), [0.0, 0.0], atol=1e-4)
    np.testing.assert_allclose(y.var(axis=1), [1.0, 1.0], rtol=1e-3)


def test_linear_bias_gradient_over_four_million_rows():
    layer = nn.Linear(3, 2)
    x = tu.tensor(np.zeros((N, 3), np.float32))
    layer(x).backward(backend.asarray(tenths()))
    np.testing.assert_allclose(host(layer.bias.grad), [400_000.0] * 2, rtol=1e-6)


def test_conv_bias_gradient_over_a_large_batch():
    """Each of 2 channels adds 4,000,000 values (batch and positions), channel-strided."""
    layer = nn.Conv2d(1, 2, 1)
    x = tu.tensor(np.zeros((N // 4, 1, 2, 2), np.float32))
    layer(x).backward(backend.asarray(np.full((N // 4, 2, 2, 2), 0.1, np.float32)))
    np.testing.assert_allclose(host(layer.bias.grad), [400_000.0] * 2, rtol=1e-6)


def test_cross_entropy_over_four_million_classes_in_a_transposed_layout():
    """The log-sum-exp over classes adds 4,000,000 exps; the logits arrive as the transpose
    of a (classes, 2) array, so that axis is not the last in memory."""
    rng = np.random.default_rng(3)
    z = rng.uniform(-1, 1, size=(N, 2)).astype(np.float32).T  # (2, N), strided
    labels = np.array([0, 1])
    got = host(ops.cross_entropy(tu.tensor(z), backend.asarray(labels)))
    wide = z.astype(np.float64)
    want = np.mean(np.log(np.exp(wide).sum(axis=1)) - wide[[0, 1], labels])
    np.testing.assert_allclose(got, want, rtol=1e-6)
