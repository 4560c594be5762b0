"""Ops against direct-loop references: conv2d, pooling, norms, losses; and their errors.
These are the book's ops (tinyunits.fast's drop-ins are off here): tests/test_fast_*.py
test each drop-in against them."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import ops


@pytest.fixture(autouse=True)
def _references():
    with tu.fast.disabled():
        yield


def host(a):
    return tu.backend.to_host(a.data if isinstance(a, tu.Tensor) else a)


def conv_loops(x, W, b, stride, padding):
    """y[n,o,h,w] = sum_{c,p,q} W[o,c,p,q] xpad[n,c,h*s+p,w*s+q] + b[o], with loops."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    N, C, H, Wd = xp.shape
    O, _, k, _ = W.shape
    Ho, Wo = (H - k) // stride + 1, (Wd - k) // stride + 1
    y = np.zeros((N, O, Ho, Wo))
    for n in range(N):
        for o in range(O):
            for h in range(Ho):
                for w in range(Wo):
                    patch = xp[n, :, h * stride:h * stride + k, w * stride:w * stride + k]
                    y[n, o, h, w] = (patch * W[o]).sum() + b[o]
    return y


def conv_loops_backward(x, W, g, stride, padding):
    """The same loops, differentiated by hand: each output adds into its patch."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    gxp, gW = np.zeros_like(xp), np.zeros_like(W)
    k = W.shape[2]
    for n, o, h, w in np.ndindex(*g.shape):
        hs, ws = h * stride, w * stride
        gxp[n, :, hs:hs + k, ws:ws + k] += g[n, o, h, w] * W[o]
        gW[o] += g[n, o, h, w] * xp[n, :, hs:hs + k, ws:ws + k]
    gx = gxp[:, :, padding:xp.shape[2] - padding, padding:xp.shape[3] - padding]
    return gx, gW, g.sum(axis=(0, 2, 3))


@pytest.mark.parametrize("stride,padding,shape", [(1, 0, (2, 3, 6, 6)), (2, 1, (2, 2, 7, 5)),
                                                  (3, 2, (1, 2, 8, 9))])
def test_conv2d_matches_direct_loops_forward_and_backward(rng, float64, stride, padding, shape):
    x, W, b = rng.normal(size=shape), rng.normal(size=(4, shape[1], 3, 3)), rng.normal(size=4)
    xt, Wt, bt = (tu.tensor(a, requires_grad=True) for a in (x, W, b))
    y = ops.conv2d(xt, Wt, bt, stride=stride, padding=padding)
    expected = conv_loops(x, W, b, stride, padding)
    np.testing.assert_allclose(host(y), expected, rtol=1e-10, atol=1e-12)
    g = rng.normal(size=expected.shape)
    y.backward(tu.tensor(g))
    for got, want in zip((xt, Wt, bt), conv_loops_backward(x, W, g, stride, padding)):
        np.testing.assert_allclose(host(got.grad), want, rtol=1e-10, atol=1e-12)


def pool_loops(x, k, reduce):
    N, C, H, W = x.shape
    y = np.zeros((N, C, H // k, W // k))
    for idx in np.ndindex(*y.shape):
        n, c, h, w = idx
        y[idx] = reduce(x[n, c, h * k:(h + 1) * k, w * k:(w + 1) * k])
    return y


@pytest.mark.parametrize("k,shape", [(2, (2, 3, 6, 6)), (3, (1, 2, 7, 8))])
def test_pooling_matches_direct_loops(rng, float64, k, shape):
    x = rng.permutation(np.prod(shape)).reshape(shape) / 7.0  # distinct: a unique max
    for op, reduce in ((ops.max_pool2d, np.max), (ops.avg_pool2d, np.mean)):
        xt = tu.tensor(x, requires_grad=True)
        y = op(xt, k)
        np.testing.assert_allclose(host(y), pool_loops(x, k, reduce), rtol=1e-12)
        g = rng.normal(size=y.shape)
        y.backward(tu.tensor(g))
        want = np.zeros_like(x)
        for n, c, h, w in np.ndindex(*g.shape):
            win = x[n, c, h * k:(h + 1) * k, w * k:(w + 1) * k]
            if reduce is np.max:
                i, j = np.unravel_index(win.argmax(), win.shape)
                want[n, c, h * k + i, w * k + j] += g[n, c, h, w]
            else:
                want[n, c, h * k:(h + 1) * k, w * k:(w + 1) * k] += g[n, c, h, w] / k ** 2
        np.testing.assert_allclose(host(xt.grad), want, rtol=1e-12)


def test_batch_norm_train_uses_batch_stats_and_updates_running(rng, float64):
    x = rng.normal(3.0, 2.0, size=(64, 4))
    bn = tu.nn.BatchNorm1d(4)
    y = bn(tu.tensor(x))
    np.testing.assert_allclose(host(y).mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(host(y).std(axis=0), 1, atol=1e-3)
    np.testing.assert_allclose(host(bn.running_mean), 0.1 * x.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(host(bn.running_var), 0.9 + 0.1 * x.var(axis=0, ddof=1), rtol=1e-10)
    bn.eval()
    y_eval = bn(tu.tensor(x))
    rm, rv = host(bn.running_mean), host(bn.running_var)
    np.testing.assert_allclose(host(y_eval), (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-10)


def test_batch_norm_without_shift_has_no_beta():
    bn = tu.nn.BatchNorm2d(3, shift=False)
    assert [n for n, _ in bn.named_parameters()] == ["weight"]


def test_layer_norm_normalises_each_sample(rng, float64):
    x = rng.normal(2.0, 3.0, size=(5, 2, 4))
    y = host(tu.nn.LayerNorm((2, 4), affine=False)(tu.tensor(x)))
    np.testing.assert_allclose(y.reshape(5, -1).mean(axis=1), 0, atol=1e-10)
    assert not tu.nn.LayerNorm(4, affine=False).parameters()


def test_cross_entropy_matches_log_softmax_and_is_stable(rng, float64):
    z = rng.normal(size=(6, 5)) * 3
    labels = rng.integers(0, 5, size=6)
    got = ops.cross_entropy(tu.tensor(z), tu.tensor(labels)).item()
    logp = z - z.max(1, keepdims=True) - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
    assert got == pytest.approx(-logp[np.arange(6), labels].mean(), rel=1e-12)
    huge = ops.cross_entropy(tu.tensor([[1000.0, -1000.0]]), tu.tensor([0])).item()
    assert huge == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("labels,match", [([0, 3], r"\[0, 3\)"), ([0], r"labels \(2,\)"),
                                          ([0.0, 1.0], "integer")])
def test_cross_entropy_rejects_bad_labels(labels, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ops.cross_entropy(tu.tensor(np.zeros((2, 3))), tu.tensor(labels))


def test_mse_refuses_silent_broadcasting():
    with pytest.raises(ValueError, match="mse_loss"):
        ops.mse_loss(tu.tensor(np.zeros((4, 1))), tu.tensor(np.zeros(4)))


def test_dropout_scales_kept_units_and_is_identity_in_eval():
    x = tu.tensor(np.ones((200, 50)))
    y = host(ops.dropout(x, 0.25))
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((y == 0).mean() - 0.25) < 0.02
    drop = tu.nn.Dropout(0.25).eval()
    assert drop(x) is x


def test_conv_and_pool_shape_errors_name_layer_and_shapes():
    conv = tu.nn.Conv2d(3, 8, 3)
    with pytest.raises(ValueError, match=r"Conv2d\(3, 8.*expected input \(B, 3, H, W\), got \(2, 4, 9, 9\)"):
        conv(tu.tensor(np.zeros((2, 4, 9, 9))))
    with pytest.raises(ValueError, match="smaller than the 3x3 kernel"):
        conv(tu.tensor(np.zeros((1, 3, 2, 2))))
    with pytest.raises(ValueError, match="MaxPool2d"):
        ops.max_pool2d(tu.tensor(np.zeros((1, 1, 1, 1))), 2)
