"""Reliability: no silent wrong answer, no lost model, no raw traceback from a bad argument.

One test per CLASS of failure, parametrised over every public callable it applies
to: a new layer, unit, optimiser or scheduler is covered by adding it to a list
below. The examples that started issue 15 come first, each as its own test.
"""
import math
import os

import numpy as np
import pytest

import datasets
import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.train import accuracy, evaluate, fit

host = tu.backend.to_host


def leaves(*values):
    return [nn.Parameter(np.array(v, dtype=np.float32)) for v in values]


# ---------------------------------------------------------------------------- the examples
def test_failed_load_changes_nothing(tmp_path):
    small = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    tu.save(small, tmp_path / "small.npz")
    other = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 5))  # same class, last layer differs
    before = {k: host(v).copy() for k, v in other.state_dict().items()}
    with pytest.raises(ValueError, match="1.weight has shape"):
        tu.load(tmp_path / "small.npz", other)
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])


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


def test_pruned_focusing_linear_round_trips(tmp_path):
    tu.manual_seed(0)
    layer = nn.FocusingLinear(12, 3, sigma_init=0.1)
    assert layer.prune(0.5) > 0
    x = tu.tensor(np.random.default_rng(0).normal(size=(4, 12)))
    tu.save(layer, tmp_path / "pruned.npz")
    tu.manual_seed(0)
    fresh = nn.FocusingLinear(12, 3, sigma_init=0.1)
    tu.load(tmp_path / "pruned.npz", fresh)
    np.testing.assert_array_equal(host(fresh(x).data), host(layer(x).data))
    # and an unpruned checkpoint clears a mask: the loaded layer computes what was saved
    layer.prune(None)
    tu.save(layer, tmp_path / "unpruned.npz")
    tu.load(tmp_path / "unpruned.npz", fresh)
    assert fresh.mask is None
    np.testing.assert_array_equal(host(fresh(x).data), host(layer(x).data))


def test_a_buffer_assigned_anew_is_still_saved():
    bn = nn.BatchNorm1d(2)
    bn.running_mean = tu.backend.asarray(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(host(bn.state_dict()["running_mean"]), [1.0, 2.0])


def test_mask_of_wrong_shape_is_refused_before_anything_changes(tmp_path):
    layer = nn.FocusingLinear(6, 2)
    state = {k: host(v) for k, v in layer.state_dict().items()}
    state["weight"] = state["weight"] + 1
    state["mask"] = np.ones((2, 5), np.float32)
    before = host(layer.weight.data).copy()
    with pytest.raises(ValueError, match="mask has shape"):
        layer.load_state_dict(state)
    np.testing.assert_array_equal(host(layer.weight.data), before)
    assert layer.mask is None


def test_batchnorm_running_stats_round_trip(tmp_path):
    bn = nn.BatchNorm1d(3)
    bn(tu.tensor(np.random.default_rng(1).normal(2.0, 3.0, size=(16, 3))))
    tu.save(bn, tmp_path / "bn.npz")
    fresh = tu.load(tmp_path / "bn.npz", nn.BatchNorm1d(3))
    x = tu.tensor(np.random.default_rng(2).normal(size=(5, 3)))
    np.testing.assert_array_equal(host(fresh.eval()(x).data), host(bn.eval()(x).data))


@pytest.mark.parametrize("n_labels", [40, 10])
def test_fit_refuses_labels_that_do_not_match_rows(n_labels):
    x = np.random.default_rng(0).normal(size=(20, 2)).astype(np.float32)
    y = np.zeros(n_labels, np.int64)
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match=r"fit: train_data y must be one row per row of X \(20\)"):
        fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), (x, y))


def test_sgd_typo_and_nan_learning_rate_are_refused():
    params = nn.Linear(2, 2).parameters()
    with pytest.raises(TypeError, match="SGD: unknown argument 'momentun'"):
        optim.SGD(params, lr=0.1, momentun=0.9)
    with pytest.raises(ValueError, match="SGD: lr must be finite, got nan"):
        optim.SGD(params, lr=float("nan"))


@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm1d, (0, 3)), (nn.BatchNorm1d, (1, 3)),
                                        (nn.BatchNorm2d, (0, 3, 2, 2))])
def test_batchnorm_refuses_a_batch_without_variance_and_keeps_its_stats(cls, shape):
    bn = cls(3)
    mean, var = host(bn.running_mean).copy(), host(bn.running_var).copy()
    with pytest.raises(ValueError, match="at least 2 values per feature"):
        bn(tu.tensor(np.zeros(shape)))
    np.testing.assert_array_equal(host(bn.running_mean), mean)
    np.testing.assert_array_equal(host(bn.running_var), var)
    bn.eval()(tu.tensor(np.zeros(shape)))  # eval mode uses the running stats: fine


# ------------------------------------------------------------ class: bad constructor arguments
# (class, good keyword arguments, integer size arguments, finite-number arguments,
#  choice arguments, flag arguments)
LAYERS = [
    (nn.Linear, dict(in_features=3, out_features=2), ["in_features", "out_features"], [],
     ["init_weight"], ["bias"]),
    (nn.Conv2d, dict(in_channels=2, out_channels=3, kernel_size=3),
     ["in_channels", "out_channels", "kernel_size", "stride"], [], ["init_weight"], ["bias"]),
    (nn.BatchNorm1d, dict(num_features=3), ["num_features"], ["momentum", "eps"], [],
     ["shift"]),
    (nn.BatchNorm2d, dict(num_features=3), ["num_features"], ["momentum", "eps"], [],
     ["shift"]),
    (nn.LayerNorm, dict(shape=4), ["shape"], ["eps"], [], ["affine"]),
    (nn.Dropout, dict(p=0.5), [], ["p"], [], []),
    (nn.LeakyReLU, dict(slope=0.1), [], ["slope"], [], []),
    (nn.MaxPool2d, dict(k=2), ["k"], [], [], []),
    (nn.AvgPool2d, dict(k=2), ["k"], [], [], []),
    (nn.DACLinear, dict(in_features=3, out_features=2), ["in_features", "out_features"], [],
     ["activation"], []),
    (nn.DACConv2d, dict(in_channels=2, out_channels=3, kernel_size=3),
     ["in_channels", "out_channels", "kernel_size", "stride"], [], ["activation"], []),
    (nn.InnerNet, dict(n_args=2, hidden=(4,)), ["n_args", "hidden"], [], ["init_weight"], []),
    (nn.TMAF, dict(num_features=3, breakpoints=[0.0, 1.0]), ["num_features"],
     ["negative_slope"], ["kind", "init"], []),
    (nn.HanLayer, dict(dim=4), ["dim"], [], ["activation"], ["bias"]),
    (nn.HanMixerBlock, dict(num_tokens=3, channels=4), ["num_tokens", "channels"], [], [], []),
    (nn.FocusingLinear, dict(in_features=5, out_features=2), ["in_features", "out_features"],
     ["sigma_init"], ["mu_init"], []),
]
NO_ARGUMENT_LAYERS = [nn.ReLU, nn.Abs, nn.Tanh, nn.Sigmoid, nn.GELU, nn.Flatten,
                      nn.GlobalAvgPool2d]


def _cases(kind):
    for cls, good, sizes, numbers, choices, flags in LAYERS:
        if kind == "size":
            for name in sizes:
                for bad, error in [(0, ValueError), (-2, ValueError), (2.5, TypeError),
                                   ("3", TypeError), (None, TypeError)]:
                    yield pytest.param(cls, good, name, bad, error,
                                       id=f"{cls.__name__}-{name}={bad!r}")
        if kind == "number":
            for name in numbers:
                for bad, error in [(math.nan, ValueError), (math.inf, ValueError),
                                   (-math.inf, ValueError), ("0.1", TypeError),
                                   (None, TypeError)]:
                    yield pytest.param(cls, good, name, bad, error,
                                       id=f"{cls.__name__}-{name}={bad!r}")
        if kind == "choice":
            for name in choices:
                for bad in ["no-such-choice", 3]:
                    yield pytest.param(cls, good, name, bad, (ValueError, TypeError),
                                       id=f"{cls.__name__}-{name}={bad!r}")
        if kind == "flag":
            for name in flags:
                yield pytest.param(cls, good, name, "yes", TypeError,
                                   id=f"{cls.__name__}-{name}='yes'")


@pytest.mark.parametrize("cls, good, name, bad, error",
                         [*_cases("size"), *_cases("number"), *_cases("choice"),
                          *_cases("flag")])
def test_bad_constructor_argument_names_layer_and_argument(cls, good, name, bad, error):
    cls(**good)  # the good arguments build
    with pytest.raises(error, match=fr"{cls.__name__}.*: {name}\b.* got"):
        cls(**{**good, name: bad})


@pytest.mark.parametrize("cls", [entry[0] for entry in LAYERS] + NO_ARGUMENT_LAYERS
                         + [nn.MultiArgActivation])
def test_unknown_keyword_names_the_argument(cls):
    with pytest.raises(TypeError, match="bogus"):
        cls(bogus=1)


@pytest.mark.parametrize("cls, kwargs, words", [
    (nn.Conv2d, dict(in_channels=1, out_channels=1, kernel_size=2, padding=-1), "padding"),
    (nn.DACConv2d, dict(in_channels=1, out_channels=1, kernel_size=2, padding=-1), "padding"),
    (nn.TMAF, dict(num_features=2, breakpoints=[1.0, 0.0]), "strictly increasing"),
    (nn.TMAF, dict(num_features=2, breakpoints=[0.0, math.nan]), "finite"),
    (nn.TMAF, dict(num_features=2, breakpoints=[]), "non-empty"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, sigma_init=0.0), "sigma_init"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, sigma_init=2.0), "sigma_init"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, mu_init=[0.5]), "2 initial centres"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, mu_init=[0.5, math.nan]), "mu_init"),
    (nn.HanLayer, dict(dim=3, axis=0), "axis 0"),
    (nn.InnerNet, dict(hidden=()), "hidden"),
    (nn.LayerNorm, dict(shape=()), "shape"),
    (nn.Dropout, dict(p=1.0), "p must be"),
    (nn.BatchNorm1d, dict(num_features=2, momentum=1.5), "momentum"),
    (nn.BatchNorm1d, dict(num_features=2, eps=0.0), "eps"),
    (nn.MultiArgActivation, dict(inner="relu"), "InnerNet"),
])
def test_bad_constructor_value_is_a_clear_error(cls, kwargs, words):
    with pytest.raises((ValueError, TypeError), match=f"{cls.__name__}.*{words}"):
        cls(**kwargs)


def test_sequential_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="Sequential: argument 1 must be a Module"):
        nn.Sequential(nn.ReLU(), lambda x: x)


def test_prune_threshold_must_be_a_number():
    with pytest.raises(ValueError, match="FocusingLinear.prune: threshold must be finite"):
        nn.FocusingLinear(4, 2).prune(math.nan)


@pytest.mark.parametrize("name", sorted(nn.init.INITIALISERS))
@pytest.mark.parametrize("shape, error", [((), TypeError), ([3, 2], TypeError),
                                          ((0, 3), ValueError), ((3, 0), ValueError),
                                          ((2, 2.0), TypeError)])
def test_initialiser_shapes(name, shape, error):
    nn.init.get(name)((3, 2))
    with pytest.raises(error, match="nn.init: shape must be"):
        nn.init.get(name)(shape)


# ------------------------------------------------------------- class: bad input to a layer
# (layer, a good input shape, a wrong input shape)
FORWARD = [
    (lambda: nn.Linear(3, 2), (4, 3), (4, 5)),
    (lambda: nn.Conv2d(2, 3, 3), (1, 2, 5, 5), (1, 3, 5, 5)),
    (lambda: nn.BatchNorm1d(3), (4, 3), (4, 2)),
    (lambda: nn.BatchNorm2d(3), (2, 3, 2, 2), (2, 2, 2, 2)),
    (lambda: nn.LayerNorm(4), (2, 4), (2, 3)),
    (lambda: nn.DACLinear(3, 2), (4, 3), (4, 5)),
    (lambda: nn.DACConv2d(2, 3, 3), (1, 2, 5, 5), (1, 2, 2, 2)),
    (lambda: nn.InnerNet(2, (4,)), (5, 2), (5, 3)),
    (lambda: nn.MultiArgActivation(nn.InnerNet(2, (4,))), (4, 6), (4, 5)),
    (lambda: nn.TMAF(3, [0.0]), (4, 3), (4, 2)),
    (lambda: nn.TMAF(3, [0.0], kind="tridiagonal"), (4, 3), (4, 2)),
    (lambda: nn.HanLayer(4), (2, 4), (2, 3)),
    (lambda: nn.HanMixerBlock(3, 4), (2, 3, 4), (2, 4, 3)),
    (lambda: nn.FocusingLinear(5, 2), (3, 5), (3, 4)),
]


@pytest.mark.parametrize("make, good, wrong", FORWARD)
def test_layer_input_wrong_shape_dtype_or_type(make, good, wrong):
    layer = make()
    name = type(layer).__name__
    layer(tu.tensor(np.ones(good)))
    with pytest.raises(ValueError, match=f"(?s){name}.*expected input"):
        layer(tu.tensor(np.ones(wrong)))
    with pytest.raises(TypeError, match=f"(?s){name}.*float32"):
        layer(tu.tensor(np.ones(good), dtype="float64"))
    with pytest.raises(TypeError, match=f"(?s){name}.*expected a tinyunits Tensor"):
        layer(np.ones(good, np.float32))


@pytest.mark.parametrize("layer", [cls() for cls in NO_ARGUMENT_LAYERS]
                         + [nn.Dropout(0.5), nn.LeakyReLU(), nn.MaxPool2d(2), nn.AvgPool2d(2)])
def test_layer_without_parameters_refuses_what_is_not_a_tensor(layer):
    layer(tu.tensor(np.ones((2, 3, 4, 4))))
    with pytest.raises(TypeError, match=f"{type(layer).__name__}.*expected a tinyunits Tensor"):
        layer(np.ones((2, 3, 4, 4), np.float32))


@pytest.mark.parametrize("layer", [nn.MaxPool2d(2), nn.AvgPool2d(2), nn.GlobalAvgPool2d()])
def test_pooling_needs_four_axes(layer):
    with pytest.raises(ValueError, match=fr"{type(layer).__name__}.*expected input \(B, C, H, W\)"):
        layer(tu.tensor(np.ones((2, 4))))


@pytest.mark.parametrize("layer, shape", [(nn.MaxPool2d(3), (1, 1, 2, 2)),
                                          (nn.AvgPool2d(3), (1, 1, 2, 5)),
                                          (nn.Conv2d(1, 1, 4), (1, 1, 3, 3)),
                                          (nn.DACConv2d(1, 1, 4), (1, 1, 3, 3))])
def test_window_larger_than_input_is_a_clear_error(layer, shape):
    with pytest.raises(ValueError, match=f"(?i){type(layer).__name__}"):
        layer(tu.tensor(np.ones(shape)))


# ------------------------------------------------------- class: bad optimiser arguments
OPTIMISERS = [
    (optim.SGD, dict(lr=0.1, momentum=0.9), ["lr", "momentum", "weight_decay"]),
    (optim.Adam, dict(lr=1e-3), ["lr", "eps", "weight_decay"]),
    (optim.AdamW, dict(lr=1e-3), ["lr", "eps", "weight_decay"]),
]


def _optimiser_cases():
    for cls, good, hypers in OPTIMISERS:
        for name in hypers:
            for bad in [math.nan, math.inf, -0.5]:
                yield pytest.param(cls, good, {name: bad}, ValueError, name,
                                   id=f"{cls.__name__}-{name}={bad}")
        for typo in ["momentun", "betas1", "learning_rate"]:
            if typo not in cls.defaults:
                yield pytest.param(cls, good, {typo: 0.9}, TypeError, typo,
                                   id=f"{cls.__name__}-{typo}")
        yield pytest.param(cls, good, {"lr": "0.1"}, TypeError, "lr",
                           id=f"{cls.__name__}-lr-str")
        if "betas" in cls.defaults:
            for bad, error in [((math.nan, 0.9), ValueError), ((1.0, 0.9), ValueError),
                               ((0.9, -0.1), ValueError), (0.9, TypeError)]:
                yield pytest.param(cls, good, {"betas": bad}, error, "betas",
                                   id=f"{cls.__name__}-betas={bad}")
            yield pytest.param(cls, good, {"eps": 0.0}, ValueError, "eps",
                               id=f"{cls.__name__}-eps=0")


@pytest.mark.parametrize("cls, good, bad, error, name", list(_optimiser_cases()))
def test_bad_hyper_parameter_names_optimiser_and_argument(cls, good, bad, error, name):
    params = nn.Linear(2, 2).parameters()
    cls(params, **good)
    with pytest.raises(error, match=f"{cls.__name__}.*{name}"):
        cls(params, **{**good, **bad})
    with pytest.raises(error, match=f"{cls.__name__}.*{name}"):  # in a group, too
        cls([{"params": params, **bad}], **good)


@pytest.mark.parametrize("cls", [entry[0] for entry in OPTIMISERS])
def test_optimiser_parameter_list_mistakes(cls):
    layer = nn.Linear(2, 2)
    w, b = layer.weight, layer.bias
    cases = [
        (w, TypeError, "a single Parameter"),
        ([], ValueError, "non-empty"),
        ([w, b, w], ValueError, "listed twice"),
        ([{"params": [w]}, {"params": [b, w], "lr": 0.1}], ValueError, "listed twice"),
        ([{"params": w}], TypeError, "single Tensor"),
        ([layer], TypeError, "Linear"),
        ([{"params": [w]}, b], TypeError, "groups"),
        (3, TypeError, "params"),
    ]
    for params, error, words in cases:
        with pytest.raises(error, match=f"{cls.__name__}.*{words}"):
            cls(params, lr=0.1)


def test_a_group_may_carry_initial_lr():
    opt = optim.SGD([{"params": nn.Linear(2, 2).parameters(), "initial_lr": 0.5}], lr=0.1)
    optim.StepLR(opt, step_size=1, gamma=0.5).step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.25)


def test_nesterov_needs_momentum():
    with pytest.raises(ValueError, match="SGD: momentum must be > 0 with nesterov=True"):
        optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, nesterov=True)


SCHEDULERS = [
    (optim.StepLR, dict(step_size=2), [("step_size", 0, ValueError),
                                        ("step_size", 1.5, TypeError)]),
    (optim.MultiStepLR, dict(milestones=[2, 4]), [("milestones", [0], ValueError),
                                                  ("milestones", "24", TypeError),
                                                  ("milestones", 3, TypeError),
                                                  ("milestones", [1.5], TypeError)]),
]


def _scheduler_cases():
    for cls, good, bad in SCHEDULERS:
        for name, value, error in bad + [("gamma", math.nan, ValueError),
                                         ("gamma", 0.0, ValueError),
                                         ("gamma", -0.1, ValueError),
                                         ("optimizer", "sgd", TypeError),
                                         ("bogus", 1, TypeError)]:
            yield pytest.param(cls, good, name, value, error, id=f"{cls.__name__}-{name}={value!r}")


@pytest.mark.parametrize("cls, good, name, value, error", list(_scheduler_cases()))
def test_bad_scheduler_argument(cls, good, name, value, error):
    opt = optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    cls(opt, **good)
    kwargs = {"optimizer": opt, **good, name: value}
    with pytest.raises(error, match=name):
        cls(**kwargs)


@pytest.mark.parametrize("params, max_norm, error", [
    ("single", 1.0, TypeError), ("list", 0.0, ValueError), ("list", math.nan, ValueError),
    ("list", -1.0, ValueError), ("list", "1", TypeError)])
def test_clip_grad_norm_arguments(params, max_norm, error):
    p = nn.Linear(2, 2).weight
    with pytest.raises(error, match="clip_grad_norm"):
        optim.clip_grad_norm(p if params == "single" else [p], max_norm)


# ------------------------------------------------------------ class: bad data at an entry point
def _data(n=20):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 2)).astype(np.float32), rng.integers(0, 2, n)


def _nan_x():
    x, y = _data()
    x[3, 1] = np.nan
    return x, y


def _inf_target():
    x, _ = _data()
    y = np.zeros((20, 2), np.float32)
    y[0, 0] = np.inf
    return x, y


BAD_DATA = [
    ("more labels", lambda: (_data()[0], np.zeros(40, np.int64)), ValueError, "one row per row"),
    ("fewer labels", lambda: (_data()[0], np.zeros(10, np.int64)), ValueError, "one row per row"),
    ("2-D labels", lambda: (_data()[0], np.zeros((20, 1), np.int64)), ValueError, "1-D"),
    ("negative labels", lambda: (_data()[0], -np.ones(20, np.int64)), ValueError, ">= 0"),
    ("string labels", lambda: (_data()[0], np.array(["a"] * 20)), TypeError, "numeric"),
    ("empty", lambda: (np.zeros((0, 2), np.float32), np.zeros(0, np.int64)), ValueError,
     "non-empty"),
    ("NaN in X", _nan_x, ValueError, "finite"),
    ("inf in target", _inf_target, ValueError, "finite"),
    ("lists", lambda: (_data()[0].tolist(), _data()[1]), TypeError, "an array"),
    ("not a pair", lambda: _data()[0], TypeError, "pair"),
]


def _fit(data):
    model = nn.Linear(2, 2)
    fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), data)


def _fit_val(data):
    model = nn.Linear(2, 2)
    fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), _data(),
        val_data=data)


def _evaluate(data):
    evaluate(nn.Linear(2, 2), *data) if isinstance(data, tuple) else evaluate(
        nn.Linear(2, 2), data, None)


ENTRY_POINTS = [("fit", _fit), ("fit", _fit_val), ("evaluate", _evaluate)]


@pytest.mark.parametrize("where, call, make, error, words", [
    pytest.param(where, call, make, error, words, id=f"{call.__name__}-{label}")
    for where, call in ENTRY_POINTS for label, make, error, words in BAD_DATA
    if not (where == "evaluate" and label == "not a pair")])  # evaluate takes X, y apart
def test_bad_data_at_every_entry_point(where, call, make, error, words):
    with pytest.raises(error, match=f"{where}: .*{words}"):
        call(make())


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(epochs=-1), ValueError, "epochs"), (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=2.5), TypeError, "batch_size"), (dict(patience=0), ValueError, "patience"),
    (dict(loss_fn=None), TypeError, "loss_fn"), (dict(optimizer=None), TypeError, "optimizer"),
    (dict(metric="accuracy"), TypeError, "metric"), (dict(scheduler=3), TypeError, "scheduler"),
    (dict(after_step=1), TypeError, "after_step"), (dict(seed=-1), ValueError, "seed"),
    (dict(shuffle="no"), TypeError, "shuffle"), (dict(progress="no"), TypeError, "progress")])
def test_fit_arguments(kwargs, error, name):
    model = nn.Linear(2, 2)
    args = dict(model=model, loss_fn=nn.functional.cross_entropy,
                optimizer=optim.SGD(model.parameters(), lr=0.1), train_data=_data())
    with pytest.raises(error, match=f"fit: {name}"):
        fit(**{**args, **kwargs})


@pytest.mark.parametrize("logits, labels, error, name", [
    ((4, 3), np.zeros(5, np.int64), ValueError, "labels"),
    ((4, 3), np.zeros((4, 1), np.int64), ValueError, "labels"),
    ((4, 3), np.zeros(4, np.float32), TypeError, "labels"),
    ((4, 3), [0, 1, 2, 0], TypeError, "labels"),
    ((4,), np.zeros(4, np.int64), ValueError, "logits"),
    ((0, 3), np.zeros(0, np.int64), ValueError, "logits")])
def test_accuracy_arguments(logits, labels, error, name):
    with pytest.raises(error, match=f"accuracy: {name}"):
        accuracy(tu.tensor(np.zeros(logits)), labels)


def test_evaluate_batch_size():
    with pytest.raises(ValueError, match="evaluate: batch_size"):
        evaluate(nn.Linear(2, 2), *_data(), batch_size=0)


# ------------------------------------------------------------------ class: backward(grad=...)
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


# ------------------------------------------------------------ class: top-level functions
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


# ------------------------------------------------------------------------ class: save / load
def test_save_reports_the_users_path(tmp_path):
    target = tmp_path / "no-such-folder" / "m.npz"
    with pytest.raises(FileNotFoundError) as err:
        tu.save(nn.Linear(2, 2), target)
    assert str(target) in str(err.value) and ".tmp" not in str(err.value)


def test_stale_temporary_of_the_same_target_is_removed(tmp_path):
    stale = tmp_path / ".m.npz.tmp-killed.npz"
    stale.write_bytes(b"\0" * 4096)  # what a save killed mid-write leaves behind
    hour_ago = os.stat(stale).st_mtime - 3600  # past STALE_AFTER: no live save writes it
    os.utime(stale, (hour_ago, hour_ago))
    other = tmp_path / ".other.npz.tmp-killed.npz"
    other.write_bytes(b"\0")
    os.utime(other, (hour_ago, hour_ago))
    tu.save(nn.Linear(2, 2), tmp_path / "m.npz")
    assert not stale.exists() and other.exists()
    assert sorted(os.listdir(tmp_path)) == [".other.npz.tmp-killed.npz", "m.npz"]


def _write(path, **arrays):
    np.savez(path, **arrays)
    return path


def _raw(path, data):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make, error, words", [
    (lambda d: d / "missing.npz", FileNotFoundError, "no checkpoint file"),
    (lambda d: _raw(d / "junk.npz", b"not a zip"), ValueError, "not a readable"),
    (lambda d: _raw(d / "pk.npz", b"PK\x03\x04" + b"\0" * 40), ValueError, "not a readable"),
    (lambda d: _write(d / "nan.npz", weight=np.full((2, 2), np.nan), bias=np.zeros(2)),
     ValueError, "non-finite"),
    (lambda d: _write(d / "str.npz", weight=np.array([["a", "b"], ["c", "d"]]),
                      bias=np.zeros(2)), TypeError, "numeric"),
    (lambda d: _write(d / "extra.npz", weight=np.zeros((2, 2)), bias=np.zeros(2),
                      other=np.zeros(1)), KeyError, "unexpected keys"),
    (lambda d: _write(d / "short.npz", weight=np.zeros((2, 2))), KeyError, "missing keys"),
])
def test_bad_checkpoint_changes_nothing(tmp_path, make, error, words):
    model = nn.Linear(2, 2)
    before = {k: host(v).copy() for k, v in model.state_dict().items()}
    with pytest.raises(error, match=words):
        tu.load(make(tmp_path), model)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])


@pytest.mark.parametrize("call, error, words", [
    (lambda d: tu.save([1, 2], d / "x.npz"), TypeError, "save: obj"),
    (lambda d: tu.save({"a": object()}, d / "x.npz"), TypeError, "save: every entry"),
    (lambda d: tu.save(nn.Linear(2, 2), 3), TypeError, "save: path"),
    (lambda d: tu.load(3), TypeError, "load: path"),
    (lambda d: tu.load(d / "x.npz", model={}), TypeError, "load: model"),
    (lambda d: nn.Linear(2, 2).load_state_dict([1]), TypeError, "state must be a dict"),
    (lambda d: nn.Linear(2, 2).load_state_dict({"weight": [[1, 2], [3, 4]], "bias": [0, 0]}),
     TypeError, "must be an array"),
])
def test_save_load_arguments(tmp_path, call, error, words):
    with pytest.raises(error, match=words):
        call(tmp_path)


# -------------------------------------------------------------------------- class: datasets
@pytest.mark.parametrize("loader", [datasets.load_mnist, datasets.load_fashion_mnist,
                                    datasets.load_cifar10, datasets.load_sgemm])
def test_data_root_that_does_not_exist_is_an_error(tmp_path, loader):
    with pytest.raises(datasets.DatasetNotFoundError, match="root must be an existing directory"):
        loader(root=tmp_path / "typo")


@pytest.mark.parametrize("call, error, words", [
    (lambda: datasets.two_moons(n=0), ValueError, "two_moons: n"),
    (lambda: datasets.two_moons(n=2.5), TypeError, "two_moons: n"),
    (lambda: datasets.two_moons(noise=-1), ValueError, "two_moons: noise"),
    (lambda: datasets.two_moons(noise=math.nan), ValueError, "two_moons: noise"),
    (lambda: datasets.spirals(n_classes=0), ValueError, "spirals: n_classes"),
    (lambda: datasets.spirals(n=2, n_classes=3), ValueError, "spirals: n"),
    (lambda: datasets.tmaf_smooth_target(n=0), ValueError, "tmaf_smooth_target: n"),
    (lambda: datasets.tmaf_smooth_target(dim=0), ValueError, "tmaf_smooth_target: dim"),
    (lambda: datasets.tmaf_oscillatory_target(n=-1), ValueError, "tmaf_oscillatory_target: n"),
    (lambda: datasets.random_pl_function(0), ValueError, "random_pl_function: k"),
    (lambda: datasets.random_pl_function(2, n=1), ValueError, "random_pl_function: n"),
    (lambda: datasets.random_pl_function(2, interval=(1, 0)), ValueError, "interval"),
    (lambda: list(datasets.batches(np.zeros(3), np.zeros(3), 0)), ValueError,
     "batches: batch_size"),
    (lambda: list(datasets.batches(np.zeros(3), np.zeros(2), 1)), ValueError, "rows"),
    (lambda: datasets.load_mnist(normalize="z"), ValueError, "normalize"),
    (lambda: datasets.load_mnist(root=3), TypeError, "root"),
])
def test_dataset_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_datasets_cli_says_what_is_wrong(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert datasets.main(["download", "mnist", "--root", str(a_file)]) == 1
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        datasets.main(["download", "no-such-set"])
    assert exit_.value.code == 2
    assert "invalid choice: 'no-such-set'" in capsys.readouterr().err
