"""Ops against direct-loop references: conv2d, pooling, norms, losses; and their errors;
reductions over any axes as NumPy's, pow, leaky_relu and gelu at their edges, and every
functional op's settings. These are the book's ops (tinyunits.fast's drop-ins are off
here): tests/test_fast_*.py test each drop-in against them."""
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import ops
from ops_support import bn_stats, leaf


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


# ---------------------------------------------------------------------------- reductions' axes
def test_reductions_take_an_axis_list_or_tuple():
    values = np.arange(24.0).reshape(2, 3, 4)
    x = tu.tensor(values)
    np.testing.assert_allclose(host(x.sum(axis=[0, 2]).data), values.sum(axis=(0, 2)))
    np.testing.assert_allclose(host(x.mean(axis=(0, -1)).data), values.mean(axis=(0, -1)))
    np.testing.assert_allclose(host(x.max(axis=[2, 1]).data), values.max(axis=(1, 2)))
    with pytest.raises(ValueError, match="sum: axis must be each axis once"):
        x.sum(axis=(0, -3))


REDUCTIONS = {
    "sum": (lambda t, **k: t.sum(**k), np.sum), "mean": (lambda t, **k: t.mean(**k), np.mean),
    "max": (lambda t, **k: t.max(**k), np.max),
    "ops.sum": (lambda t, **k: ops.sum(t, **k), np.sum),
    "ops.mean": (lambda t, **k: ops.mean(t, **k), np.mean),
    "ops.max": (lambda t, **k: ops.max(t, **k), np.max),
}


AXES = [None, 0, -1, [0], (1,), [0, 2], (2, 0), (-1, 0), [-3, -2, -1], (), [1, -1]]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_take_axes_as_numpy(name, axis, keepdims):
    values = np.random.default_rng(0).normal(size=(2, 3, 4))
    ours, numpy_fn = REDUCTIONS[name]
    out = ours(tu.tensor(values, dtype="float64"), axis=axis, keepdims=keepdims)
    expected = numpy_fn(values, axis=tuple(axis) if isinstance(axis, list) else axis,
                        keepdims=keepdims)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(host(out.data), expected, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_gradients_over_any_axes(name, axis, keepdims):
    ours = REDUCTIONS[name][0]
    x = np.random.default_rng(1).normal(size=(2, 3, 4))  # no ties: max has a gradient
    report = tu.gradcheck(lambda t: ours(t, axis=axis, keepdims=keepdims), [x])
    assert report.ok, str(report)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis, error, words", [
    ((0, 0), ValueError, "each axis once"), ([1, -2], ValueError, "each axis once"),
    (3, ValueError, r"in \[-3, 3\)"), (-4, ValueError, r"in \[-3, 3\)"),
    ([0, 5], ValueError, r"in \[-3, 3\)"), (1.0, TypeError, "None, an int or a list"),
    ("0", TypeError, "None, an int or a list"), ([0.5], TypeError, "None, an int or a list"),
    ([[0]], TypeError, "None, an int or a list"), (True, TypeError, "None, an int or a list"),
], ids=repr)
def test_reductions_refuse_a_bad_axis_naming_the_op(name, axis, error, words):
    op = name.split(".")[-1]
    with pytest.raises(error, match=f"{op}: axis must be {words}"):
        REDUCTIONS[name][0](tu.tensor(np.ones((2, 3, 4))), axis=axis)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_refuse_keepdims_that_is_not_a_bool(name):
    op = name.split(".")[-1]
    with pytest.raises(TypeError, match=f"{op}: keepdims must be True or False"):
        REDUCTIONS[name][0](tu.tensor(np.ones((2, 3))), axis=0, keepdims="yes")


@pytest.mark.parametrize("shape, axis", [((0,), None), ((2, 0), 1), ((0, 3), (0, 1))])
def test_max_over_an_empty_axis_is_a_clear_error(shape, axis):
    with pytest.raises(ValueError, match="max: the max over an axis of length 0"):
        tu.tensor(np.ones(shape)).max(axis=axis)


def test_max_over_a_non_empty_axis_of_an_empty_tensor_is_empty():
    assert tu.tensor(np.ones((0, 3))).max(axis=1).shape == (0,)
    assert math.isclose(tu.tensor(np.ones((2, 3))).max(axis=[0, 1]).item(), 1.0)


# ----------------------------------------------------- pow, leaky_relu and gelu at their edges
@pytest.mark.parametrize("bad", [None, "2", tu.tensor(2.0), 1j, True], ids=repr)
def test_the_exponent_is_a_real_number(bad):
    with pytest.raises(TypeError, match="pow: the exponent must be a real number"):
        tu.tensor([1.0, 2.0]) ** bad


@pytest.mark.parametrize("c", [0, 0.0, 1, 1.0, 2, 3, 2.0])
def test_pow_gradient_at_zero_is_the_limit(c):
    x = tu.tensor([0.0, 1.5, -2.0], requires_grad=True, dtype="float64")
    (x ** c).sum().backward()
    values = np.array([0.0, 1.5, -2.0])
    expected = np.zeros(3) if c == 0 else c * values ** (c - 1)
    np.testing.assert_array_equal(host(x.grad), expected)  # was: NaN at 0 for c = 0


@pytest.mark.parametrize("c", [0, 1, 2, 3])
def test_pow_with_small_integer_exponents_passes_gradcheck_at_zero(c):
    report = tu.gradcheck(lambda t: t ** c, [np.array([0.0, 0.5, -1.5])])
    assert report.ok, str(report)


def test_leaky_relu_of_an_integer_tensor_is_float():
    out = ops.leaky_relu(tu.tensor([-3, 2]), 0.5)
    assert out.dtype == np.float64  # was: int64 [0, 2], the slope truncated to 0
    np.testing.assert_array_equal(host(out.data), [-1.5, 2.0])


def _gelu_unclipped(values, dtype):
    """GELU's value and slope as written before the clip (finite for |x| < ~1e5 in float64),
    on the backend's own device: a GPU's tanh differs from the host's in the last bit."""
    x = tu.backend.asarray(values, dtype=dtype)
    xp = tu.backend.get_array_module(x)
    c = math.sqrt(2 / math.pi)
    t = xp.tanh(c * (x + 0.044715 * x ** 3))
    dinner = c * (1 + 3 * 0.044715 * x * x)
    return host(0.5 * x * (1 + t)), host(0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)


def _gelu_and_slope(values, dtype):
    x = tu.tensor(values, requires_grad=True, dtype=dtype)
    y = ops.gelu(x)
    y.sum().backward()
    return host(y.data), host(x.grad)


@pytest.mark.parametrize("dtype, top", [("float64", 1e5), ("float32", 1e3)])
def test_gelus_clip_changes_no_value_and_no_slope(dtype, top):
    magnitudes = np.concatenate([np.linspace(0, 30, 301), np.geomspace(30, top, 50)])
    values = np.concatenate([magnitudes, -magnitudes]).astype(dtype)
    ours = _gelu_and_slope(values, dtype)
    reference = _gelu_unclipped(values, dtype)
    for a, b in zip(ours, reference):
        assert np.isfinite(b).all()  # the reference must not have overflowed either
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype, big", [("float64", 1e200), ("float64", 1e160),
                                        ("float32", 1e20), ("float32", 3e38)])
def test_gelus_slope_is_finite_at_a_large_magnitude(dtype, big):
    value, slope = _gelu_and_slope([big, -big], dtype)
    np.testing.assert_array_equal(slope, [1.0, 0.0])  # was NaN: x * x overflowed, inf * 0
    np.testing.assert_array_equal(value, np.array([big, -0.0], dtype))


def test_gelu_passes_gradcheck_across_its_clip():
    values = np.array([-25.0, -20.0, -19.5, -3.0, -0.3, 0.0, 0.7, 4.0, 19.5, 20.0, 21.0])
    report = tu.gradcheck(ops.gelu, [values])
    assert report.ok, str(report)


# ---------------------------------------------------------- settings, axes, labels and indices
@pytest.mark.parametrize("axis, error", [(1, ValueError), (-2, ValueError), (0.0, TypeError),
                                         ("0", TypeError)])
def test_concatenate_refuses_an_axis_the_tensors_do_not_have(axis, error):
    with pytest.raises(error, match=r"concatenate: axis must be an int in \[-1, 1\) for tensors "
                                    "with 1 axes"):
        ops.concatenate([tu.tensor(np.ones(2))] * 2, axis=axis)  # was "tuple index out of range"


def _image():
    return tu.tensor(np.ones((1, 1, 4, 4)))


# the functional ops' own settings (the nn layers check theirs when built): call, error, words
OP_SETTINGS = {
    "leaky_relu slope nan": (lambda: ops.leaky_relu(tu.tensor([-1.0, 1.0]), float("nan")),
                             ValueError, "leaky_relu: negative_slope must be finite"),
    "leaky_relu slope str": (lambda: ops.leaky_relu(tu.tensor([-1.0]), "0.1"), TypeError,
                             "leaky_relu: negative_slope must be a real number"),
    "dropout p nan": (lambda: ops.dropout(tu.tensor(np.ones(3)), float("nan")), ValueError,
                      "dropout: p must be finite"),
    "dropout p str": (lambda: ops.dropout(tu.tensor(np.ones(3)), "0.5"), TypeError,
                      "dropout: p must be a real number"),
    "dropout p above 1": (lambda: ops.dropout(tu.tensor(np.ones(3)), 1.5), ValueError,
                          r"dropout: p must be a finite number in \[0, 1\]"),
    "dropout training str": (lambda: ops.dropout(tu.tensor(np.ones(3)), 0.5, "no"), TypeError,
                             "dropout: training must be True or False"),
    "max_pool2d k 0": (lambda: ops.max_pool2d(_image(), 0), ValueError, "MaxPool2d: k must be"),
    "avg_pool2d k 0": (lambda: ops.avg_pool2d(_image(), 0), ValueError, "AvgPool2d: k must be"),
    "max_pool2d k float": (lambda: ops.max_pool2d(_image(), 2.0), TypeError,
                           "MaxPool2d: k must be an int"),
    "conv2d stride 0": (lambda: ops.conv2d(_image(), tu.tensor(np.ones((1, 1, 2, 2))),
                                           stride=0), ValueError, "conv2d: stride must be"),
    "conv2d padding -1": (lambda: ops.conv2d(_image(), tu.tensor(np.ones((1, 1, 2, 2))),
                                             padding=-1), ValueError, "conv2d: padding must be"),
    "layer_norm eps 0": (lambda: ops.layer_norm(tu.tensor(np.ones((2, 3))), 1, eps=0.0),
                         ValueError, "layer_norm: eps must be a finite number in \\(0"),
    "layer_norm n_axes 3": (lambda: ops.layer_norm(tu.tensor(np.ones((2, 3))), 3), ValueError,
                            "layer_norm: n_axes must be at most the input's 2 axes"),
    "layer_norm n_axes 0": (lambda: ops.layer_norm(tu.tensor(np.ones((2, 3))), 0), ValueError,
                            "layer_norm: n_axes must be an int >= 1"),
    "batch_norm eps 0": (lambda: ops.batch_norm(leaf((4, 3)), leaf((3,)), None, *bn_stats(),
                                                eps=0.0), ValueError, "batch_norm: eps must be"),
    "batch_norm momentum 2": (lambda: ops.batch_norm(leaf((4, 3)), leaf((3,)), None,
                                                     *bn_stats(), momentum=2.0), ValueError,
                              "batch_norm: momentum must be"),
    "batch_norm training str": (lambda: ops.batch_norm(leaf((4, 3)), leaf((3,)), None,
                                                       *bn_stats(), training="False"),
                                TypeError, "batch_norm: training must be True or False"),
}


@pytest.mark.parametrize("name", sorted(OP_SETTINGS))
def test_every_functional_op_checks_its_settings(name):
    call, error, words = OP_SETTINGS[name]
    with pytest.raises(error, match=words):
        call()  # was: NaN outputs, dropout silently skipped, ZeroDivisionError, or NaN from eps 0


def test_labels_and_index_tensors_are_read_at_forward():
    """They are no inputs of the graph: the op keeps a copy, so backward gives the
    gradient of the loss that forward computed."""
    z = leaf((2, 3))
    labels = tu.tensor([0, 2])
    ops.cross_entropy(z, labels).backward()
    expected = host(z.grad).copy()
    z.grad = None
    loss = ops.cross_entropy(z, labels)
    labels.data *= 0  # in place: every label 0 now
    loss.backward()
    np.testing.assert_allclose(host(z.grad), expected)
    x = leaf((4,))
    index = tu.tensor([0, 0, 3])
    y = x[index].sum()
    index.data *= 0
    y.backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 0.0, 0.0, 1.0])
