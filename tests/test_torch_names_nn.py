"""PyTorch's names in optim, nn and nn.functional have PyTorch's meaning, or raise an error
that says how tinyunits differs (issue 44 items 8 and 9): the same defaults, positional
order and answers (compared with torch itself where it is importable), PyTorch's
arguments that tinyunits lacks accepted at their defaults and refused otherwise with a
TypeError naming them, and edge inputs (empty, 0-d, NaN, a wrong type) answered as
PyTorch answers them or refused with an error naming the callable."""
import math
import warnings

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, optim
from tinyunits.nn import functional as F

host = backend.to_host


def t(values, dtype="float32", requires_grad=False):
    return tu.tensor(np.asarray(values, dtype=dtype), dtype=dtype, requires_grad=requires_grad)


def param(values):
    return nn.Parameter(np.array(values, dtype=np.float64), dtype="float64")


# --------------------------------------------------------------------------- optimisers
def test_sgds_default_learning_rate_is_pytorchs():
    assert optim.SGD([param([1.0])]).param_groups[0]["lr"] == 1e-3


@pytest.mark.parametrize("cls, args, want", [
    (optim.SGD, (0.1, 0.9, 0, 0.01, True), dict(lr=0.1, momentum=0.9, weight_decay=0.01,
                                                nesterov=True)),
    (optim.Adam, (0.1, (0.8, 0.9), 1e-6, 0.01, False), dict(lr=0.1, betas=(0.8, 0.9),
                                                            eps=1e-6, weight_decay=0.01)),
    (optim.AdamW, (0.1,), dict(lr=0.1, weight_decay=0.01)),
])
def test_hyper_parameters_may_come_in_pytorchs_positional_order(cls, args, want):
    group = cls([param([1.0])], *args).param_groups[0]
    assert {k: group[k] for k in want} == want


def test_too_many_positional_arguments_and_two_values_are_refused():
    with pytest.raises(TypeError, match="SGD: takes params and at most 5"):
        optim.SGD([param([1.0])], 0.1, 0.9, 0, 0.0, False, 3)
    with pytest.raises(TypeError, match="SGD: got two values for argument 'lr'"):
        optim.SGD([param([1.0])], 0.1, lr=0.2)


@pytest.mark.parametrize("cls, name, value", [
    (optim.SGD, "dampening", 0.1), (optim.SGD, "maximize", True), (optim.SGD, "foreach", True),
    (optim.Adam, "amsgrad", True), (optim.Adam, "fused", True),
    (optim.Adam, "decoupled_weight_decay", True), (optim.AdamW, "capturable", True),
    (optim.AdamW, "differentiable", True),
])
def test_pytorchs_arguments_that_are_not_implemented_work_only_at_their_defaults(cls, name,
                                                                                  value):
    default = cls.pytorch_only[name]
    cls([param([1.0])], lr=0.1, **{name: default})  # PyTorch's code that means the same runs
    cls([{"params": [param([1.0])], name: default}], lr=0.1)
    with pytest.raises(TypeError, match=fr"{cls.__name__}: PyTorch's argument {name}=.* "
                                        "not implemented"):
        cls([param([1.0])], lr=0.1, **{name: value})
    with pytest.raises(TypeError, match=f"{cls.__name__} parameter group.*{name}"):
        cls([{"params": [param([1.0])], name: value}], lr=0.1)


def test_zero_grad_sets_to_none_or_to_zeros_as_pytorch():
    p = param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    p.grad = backend.asarray(np.array([3.0, 4.0]))
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(host(p.grad), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None
    with pytest.raises(TypeError, match="zero_grad: set_to_none must be True or False"):
        opt.zero_grad(set_to_none="no")


def test_step_calls_a_closure_first_and_returns_its_loss():
    p = param([3.0])
    opt = optim.SGD([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_allclose(host(p.data), [3.0 - 0.5 * 6.0])
    assert opt.step() is None
    with pytest.raises(TypeError, match="SGD.step: closure must be callable"):
        opt.step(3)


def test_sgd_with_momentum_nesterov_and_decay_is_torchs():
    torch = pytest.importorskip("torch")
    grads = np.random.default_rng(0).normal(size=(10, 3))
    p, q = param([1.0, -2.0, 0.5]), torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64,
                                                 requires_grad=True)
    ours = optim.SGD([p], 0.1, 0.9, 0, 0.01, True)
    theirs = torch.optim.SGD([q], 0.1, 0.9, 0, 0.01, True)
    for g in grads:
        p.grad, q.grad = backend.asarray(g.copy()), torch.tensor(g)
        ours.step()
        theirs.step()
    np.testing.assert_allclose(host(p.data), q.detach().numpy(), rtol=1e-13)


# --------------------------------------------------------------------------- schedulers
@pytest.mark.parametrize("name, kwargs", [("StepLR", dict(step_size=3, gamma=0.5)),
                                          ("MultiStepLR", dict(milestones=[2, 2, 5], gamma=0.1))])
def test_schedulers_rates_are_torchs(name, kwargs):
    torch = pytest.importorskip("torch")
    ours = getattr(optim, name)(optim.SGD([param([1.0])], lr=0.3), **kwargs)
    q = torch.zeros(1, requires_grad=True)
    topt = torch.optim.SGD([q], lr=0.3)
    theirs = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    for _ in range(8):
        topt.step()
        ours.step()
        theirs.step()
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12)


def test_schedulers_last_epoch_works_only_at_its_default():
    opt = optim.SGD([param([1.0])], lr=0.3)
    optim.StepLR(opt, 2, 0.5, -1)
    with pytest.raises(TypeError, match="StepLR: PyTorch's argument last_epoch=4"):
        optim.StepLR(opt, 2, last_epoch=4)
    with pytest.raises(TypeError, match="MultiStepLR: PyTorch's argument last_epoch=0"):
        optim.MultiStepLR(opt, [2], last_epoch=0)


# ---------------------------------------------------------------------- clip_grad_norm
def grads_of(values):
    ps = [param(np.zeros(len(v))) for v in values]
    for p, v in zip(ps, values):
        p.grad = backend.asarray(np.array(v, dtype=np.float64))
    return ps


@pytest.mark.parametrize("values, max_norm", [([[3.0, 0.0], [4.0]], 1.0),
                                              ([[3.0, 0.0], [4.0]], 5.0),
                                              ([[0.3, 0.4]], 1.0),
                                              ([[np.nan, 1.0], [2.0]], 1.0),
                                              ([[np.inf, 1.0]], 1.0)])
def test_clip_grad_norm_is_torchs(values, max_norm):
    torch = pytest.importorskip("torch")
    ps = grads_of(values)
    qs = [torch.zeros(len(v), dtype=torch.float64, requires_grad=True) for v in values]
    for q, v in zip(qs, values):
        q.grad = torch.tensor(v, dtype=torch.float64)
    with np.errstate(invalid="ignore"):
        total = optim.clip_grad_norm(ps, max_norm)
    want = torch.nn.utils.clip_grad_norm_(qs, max_norm)
    np.testing.assert_allclose(total, want.item(), rtol=1e-12, equal_nan=True)
    for p, q in zip(ps, qs):
        np.testing.assert_allclose(host(p.grad), q.grad.numpy(), rtol=1e-12, equal_nan=True)


def test_clip_grad_norm_takes_one_tensor_and_refuses_a_nonfinite_norm_when_asked():
    (p,) = grads_of([[3.0, 4.0]])
    assert optim.clip_grad_norm(p, 1.0) == pytest.approx(5.0)  # a single Tensor, as PyTorch
    (p,) = grads_of([[np.nan]])
    with pytest.raises(RuntimeError, match="clip_grad_norm: the gradients' total norm is nan"):
        optim.clip_grad_norm([p], 1.0, error_if_nonfinite=True)
    with pytest.raises(TypeError, match="clip_grad_norm: PyTorch's argument norm_type=inf"):
        optim.clip_grad_norm([p], 1.0, norm_type=math.inf)


# ------------------------------------------------------------------------------ modules
def test_positional_arguments_mean_what_they_mean_in_pytorch():
    assert nn.BatchNorm1d(4, 1e-3, 0.2).eps == 1e-3
    assert nn.BatchNorm2d(4, 1e-3, 0.2).momentum == 0.2
    assert nn.LayerNorm(4, 1e-6).eps == 1e-6
    assert nn.Conv2d(1, 2, 3, 1, 1, 1, 1, False).bias is None  # dilation, groups, then bias
    assert nn.LeakyReLU(0.2).negative_slope == 0.2
    assert nn.LeakyReLU(negative_slope=0.3).negative_slope == 0.3
    assert nn.MaxPool2d(2, 2).k == 2 and nn.AvgPool2d((3, 3), [3, 3]).k == 3
    conv = nn.Conv2d(1, 2, (3, 3), (2, 2), [1, 1])  # PyTorch's pairs, when they are square
    assert (conv.kernel_size, conv.stride, conv.padding) == (3, 2, 1)
    with pytest.raises(TypeError, match=r"Conv2d: kernel_size must be an int >= 1, got \(3, 5\)"):
        nn.Conv2d(1, 2, (3, 5))


@pytest.mark.parametrize("make, name", [
    (lambda: nn.ReLU(inplace=True), "inplace"), (lambda: nn.LeakyReLU(0.1, True), "inplace"),
    (lambda: nn.Dropout(0.5, True), "inplace"), (lambda: nn.Conv2d(1, 1, 3, dilation=2), "dilation"),
    (lambda: nn.Conv2d(1, 2, 3, groups=2), "groups"),
    (lambda: nn.Conv2d(1, 1, 3, padding_mode="reflect"), "padding_mode"),
    (lambda: nn.BatchNorm1d(3, affine=False), "affine"),
    (lambda: nn.BatchNorm2d(3, track_running_stats=False), "track_running_stats"),
    (lambda: nn.LayerNorm(3, bias=False), "bias"), (lambda: nn.Flatten(0), "start_dim"),
    (lambda: nn.MaxPool2d(2, padding=1), "padding"), (lambda: nn.MaxPool2d(2, ceil_mode=True), "ceil_mode"),
    (lambda: nn.MaxPool2d(2, return_indices=True), "return_indices"),
    (lambda: nn.AvgPool2d(2, count_include_pad=False), "count_include_pad"),
])
def test_a_pytorch_argument_tinyunits_lacks_is_a_type_error_naming_it(make, name):
    with pytest.raises(TypeError, match=f"PyTorch's argument {name}=.*not implemented"):
        make()


def test_pytorchs_defaults_are_accepted():
    nn.ReLU(inplace=False), nn.LeakyReLU(0.01, False), nn.Dropout(0.5, False)
    nn.Conv2d(1, 1, 3, dilation=1, groups=1, padding_mode="zeros")
    nn.BatchNorm1d(3, affine=True, track_running_stats=True), nn.Flatten(1, -1)
    nn.MaxPool2d(2, None, 0, 1, False, False), nn.AvgPool2d(2, None, 0, False, True, None)


@pytest.mark.parametrize("make", [lambda: nn.MaxPool2d(2, 1), lambda: nn.AvgPool2d(3, (1, 1))])
def test_an_overlapping_pool_is_refused_naming_stride(make):
    with pytest.raises(TypeError, match="Pool2d: stride must be None or the kernel_size"):
        make()


def test_layer_norms_elementwise_affine_is_its_affine():
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None
    assert nn.LayerNorm(3, affine=False).weight is None
    with pytest.raises(TypeError, match="LayerNorm: give affine or PyTorch's"):
        nn.LayerNorm(3, elementwise_affine=False, affine=False)


def test_gelu_is_the_tanh_approximation_and_says_so():
    torch = pytest.importorskip("torch")
    x = np.linspace(-5, 5, 41)
    want = torch.nn.functional.gelu(torch.tensor(x), approximate="tanh").numpy()
    # atol: x/2 (1 + tanh(...)) loses digits to cancellation in the left tail
    np.testing.assert_allclose(host(nn.GELU()(t(x, "float64")).data), want, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(host(F.gelu(t(x, "float64")).data), want, rtol=1e-12,
                               atol=1e-15)
    for make in (lambda: nn.GELU(approximate="none"), lambda: F.gelu(t(x), "none")):
        with pytest.raises(ValueError, match="approximate must be 'tanh'.*not PyTorch's exact"):
            make()


def test_a_slice_of_a_sequential_is_a_sequential():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    assert head(t(np.ones((1, 3)))).shape == (1, 4)
    assert seq[-1] is seq[2]


@pytest.mark.parametrize("layer", [nn.Linear(2, 2), nn.Conv2d(1, 1, 1), nn.BatchNorm1d(2),
                                   nn.LayerNorm(2), nn.Flatten(), nn.MaxPool2d(2),
                                   nn.GlobalAvgPool2d()])
def test_a_list_input_is_a_type_error_naming_the_layer(layer):
    with pytest.raises(TypeError, match=r"\(.*\): expected a tinyunits Tensor, got list"):
        layer([[1.0, 2.0]])


def test_a_convolution_over_an_empty_batch_is_empty():
    layer = nn.Conv2d(1, 2, 3)
    x = t(np.zeros((0, 1, 5, 5)), requires_grad=True)
    with tu.fast.disabled():  # the reference (the drop-in: see the report of issue 44)
        y = layer(x)
        y.sum().backward()
    assert y.shape == (0, 2, 3, 3) and x.grad.shape == (0, 1, 5, 5)
    np.testing.assert_array_equal(host(layer.weight.grad), np.zeros((2, 1, 3, 3)))


# ----------------------------------------------------------------------- nn.functional
def test_functional_batch_norm_takes_pytorchs_argument_order_and_defaults():
    """F.batch_norm(x, running_mean, running_var, weight, bias): tinyunits took gamma and
    beta second and third, so PyTorch's call normalised with the wrong arrays, silently."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3))
    rm, rv, w, b = rng.normal(size=3), rng.uniform(1, 2, 3), rng.normal(size=3), rng.normal(size=3)
    for training in (False, True):
        ours = [backend.asarray(rm.copy()), backend.asarray(rv.copy())]
        theirs = [torch.tensor(rm), torch.tensor(rv)]
        got = F.batch_norm(t(x, "float64"), *ours, t(w, "float64"), t(b, "float64"),
                           training=training)
        want = torch.nn.functional.batch_norm(torch.tensor(x), *theirs, torch.tensor(w),
                                              torch.tensor(b), training=training)
        np.testing.assert_allclose(host(got.data), want.numpy(), rtol=1e-10)
        for mine, its in zip(ours, theirs):  # updated in place when training
            np.testing.assert_allclose(host(mine), its.numpy(), rtol=1e-12)
    y = F.batch_norm(t(x, "float64"), None, None, training=True)  # no stats, no weight
    np.testing.assert_allclose(host(y.data), torch.nn.functional.batch_norm(
        torch.tensor(x), None, None, training=True).numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="batch_norm: running_mean and running_var must be"):
        F.batch_norm(t(x), None, None)


def test_functional_layer_norm_takes_pytorchs_normalized_shape():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).normal(size=(2, 3, 4))
    w, b = np.linspace(0.5, 2, 12).reshape(3, 4), np.linspace(-1, 1, 12).reshape(3, 4)
    cases = [((4,), None, None), ((3, 4), w, b), (4, w[0], None), ([4], None, b[0])]
    for shape, weight, bias in cases:
        got = F.layer_norm(t(x, "float64"), shape,
                           None if weight is None else t(weight, "float64"),
                           None if bias is None else t(bias, "float64"))
        want = torch.nn.functional.layer_norm(
            torch.tensor(x), [shape] if isinstance(shape, int) else list(shape),
            None if weight is None else torch.tensor(weight),
            None if bias is None else torch.tensor(bias))
        np.testing.assert_allclose(host(got.data), want.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"layer_norm: input must be of shape \(\.\.\., 5\)"):
        F.layer_norm(t(x), (5,))
    with pytest.raises(TypeError, match="layer_norm: normalized_shape must be an int or"):
        F.layer_norm(t(x), "4")


@pytest.mark.parametrize("call, name", [
    (lambda x, y: F.cross_entropy(x, y, reduction="sum"), "reduction"),
    (lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1), "label_smoothing"),
    (lambda x, y: F.cross_entropy(x, y, ignore_index=0), "ignore_index"),
    (lambda x, y: F.cross_entropy(x, y, t([1.0, 2.0, 3.0])), "weight"),
    (lambda x, y: F.mse_loss(x, x, reduction="none"), "reduction"),
    (lambda x, y: F.relu(x, inplace=True), "inplace"),
    (lambda x, y: F.leaky_relu(x, 0.1, True), "inplace"),
    (lambda x, y: F.dropout(x, 0.5, True, True), "inplace"),
    (lambda x, y: F.max_pool2d(x.reshape(1, 1, 2, 3), 2, ceil_mode=True), "ceil_mode"),
    (lambda x, y: F.avg_pool2d(x.reshape(1, 1, 2, 3), 2, padding=1), "padding"),
    (lambda x, y: F.conv2d(x.reshape(1, 1, 2, 3), t(np.ones((1, 1, 1, 1))), dilation=2),
     "dilation"),
])
def test_functional_refuses_pytorchs_arguments_it_lacks_naming_them(call, name):
    x, y = t(np.zeros((2, 3))), backend.asarray(np.array([0, 1]))
    with pytest.raises(TypeError, match=f"PyTorch's argument {name}=.*not implemented"):
        call(x, y)


def test_functional_matches_torch_at_pytorchs_defaults():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(2, 3, 6, 6)), rng.normal(size=(4, 3, 3, 3))
    z, labels = rng.normal(size=(5, 4)), rng.integers(0, 4, 5)
    X, W, Z = (t(a, "float64") for a in (x, w, z))
    pairs = [
        (F.conv2d(X, W, None, 1, 1), tf.conv2d(torch.tensor(x), torch.tensor(w), None, 1, 1)),
        (F.max_pool2d(X, 2, 2), tf.max_pool2d(torch.tensor(x), 2, 2)),
        (F.avg_pool2d(X, (3, 3)), tf.avg_pool2d(torch.tensor(x), (3, 3))),
        (F.leaky_relu(X, negative_slope=0.2), tf.leaky_relu(torch.tensor(x), negative_slope=0.2)),
        (F.cross_entropy(Z, backend.asarray(labels), ignore_index=-100, reduction="mean"),
         tf.cross_entropy(torch.tensor(z), torch.tensor(labels))),
        (F.mse_loss(Z, Z * 0.5), tf.mse_loss(torch.tensor(z), torch.tensor(z) * 0.5)),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(host(got.data), want.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------- edge inputs (item 9)
def test_losses_of_an_empty_batch_are_nan_as_pytorchs():
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
        ce = F.cross_entropy(t(np.zeros((0, 3))), backend.asarray(np.zeros(0, np.int64)))
        mse = F.mse_loss(t(np.zeros(0)), t(np.zeros(0)))
    assert math.isnan(ce.item()) and math.isnan(mse.item())


def test_cross_entropy_of_huge_logits_is_finite_as_pytorchs():
    loss = F.cross_entropy(t([[1e30, -1e30, 0.0]]), backend.asarray(np.array([1])))
    np.testing.assert_allclose(loss.item(), 2e30, rtol=1e-6)


def test_dropout_with_p_1_zeroes_everything_as_pytorchs():
    x = t(np.ones((3, 4)), requires_grad=True)
    y = nn.Dropout(1.0)(x)
    y.sum().backward()
    np.testing.assert_array_equal(host(y.data), np.zeros((3, 4)))
    np.testing.assert_array_equal(host(x.grad), np.zeros((3, 4)))
    np.testing.assert_array_equal(host(F.dropout(x, 1.0).data), np.zeros((3, 4)))


def test_mse_of_0_d_tensors_is_their_squared_difference():
    assert F.mse_loss(t(1.0), t(3.0)).item() == 4.0


@pytest.mark.parametrize("call, error, words", [
    (lambda: F.cross_entropy(t(np.zeros((2, 3))), t([0.0, 1.0])), TypeError,
     "cross_entropy: expected integer labels, got float32"),
    (lambda: F.cross_entropy(t(np.zeros(3)), backend.asarray(np.array(0))), ValueError,
     r"cross_entropy: expected logits \(N, classes\), got \(3,\)"),
    (lambda: F.mse_loss(t(np.zeros(2)), t(np.zeros(3))), ValueError,
     r"mse_loss: pred \(2,\) and target \(3,\) differ"),
    (lambda: F.batch_norm([1.0, 2.0], None, None, training=True), TypeError,
     r"batch_norm: input must be a Tensor of shape \(N, C, \.\.\.\)"),
    (lambda: nn.Dropout(1.5), ValueError, r"Dropout: p must be a finite number in \[0, 1\]"),
])
def test_bad_inputs_name_the_callable_what_was_expected_and_what_arrived(call, error, words):
    with pytest.raises(error, match=words):
        call()
