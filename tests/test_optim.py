"""Optimisers against their textbook update rules, written independently here; a step
between forward and backward refused, leaves only, every optimiser on the list; and
the arguments of every optimiser, scheduler and of clip_grad_norm."""
import inspect
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, optim


def quadratic_steps(make_opt, steps=5):
    """Minimise 0.5 ||p - t||^2 from p = 0; return the trajectory of p."""
    p = nn.Parameter(np.zeros(3), dtype="float64")
    target = tu.tensor([1.0, -2.0, 0.5], dtype="float64")
    opt = make_opt([p])
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (((p - target) ** 2).sum() * 0.5).backward()
        opt.step()
        out.append(p.numpy().copy())
    return np.array(out), np.array([1.0, -2.0, 0.5])


def test_sgd_momentum_nesterov_weight_decay_match_reference():
    lr, mu, wd = 0.1, 0.9, 0.01
    for nesterov in (False, True):
        got, t = quadratic_steps(lambda ps: optim.SGD(ps, lr=lr, momentum=mu, nesterov=nesterov,
                                                      weight_decay=wd))
        p, v, want = np.zeros(3), None, []
        for _ in range(5):
            g = (p - t) + wd * p
            v = g.copy() if v is None else mu * v + g
            p = p - lr * (g + mu * v if nesterov else v)
            want.append(p)
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("cls,decoupled", [(optim.Adam, False), (optim.AdamW, True)])
def test_adam_and_adamw_match_reference(cls, decoupled):
    lr, b1, b2, eps, wd = 0.05, 0.9, 0.999, 1e-8, 0.1
    got, t = quadratic_steps(lambda ps: cls(ps, lr=lr, weight_decay=wd))
    p, m, v, want = np.zeros(3), np.zeros(3), np.zeros(3), []
    for k in range(1, 6):
        g = (p - t) + (0 if decoupled else wd * p)
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        if decoupled:
            p = p * (1 - lr * wd)
        p = p - lr * (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps)
        want.append(p)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_parameter_groups_have_their_own_learning_rates():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = tu.backend.asarray(np.ones(2, np.float32)), tu.backend.asarray(np.ones(2, np.float32))
    opt.step()
    np.testing.assert_allclose(a.numpy(), 0.9, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), 0.5, rtol=1e-6)


def test_parameters_without_grad_are_skipped():
    p = nn.Parameter(np.ones(2))
    optim.Adam([p], lr=1.0).step()
    np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])


def test_schedulers():
    opt = optim.SGD([nn.Parameter(np.ones(1))], lr=1.0)
    step = optim.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        step.step()
        lrs.append(step.get_last_lr()[0])
    assert lrs == [1.0, 0.5, 0.5, 0.25, 0.25]
    opt = optim.SGD([nn.Parameter(np.ones(1))], lr=1.0)
    multi = optim.MultiStepLR(opt, milestones=[2, 4], gamma=0.2)
    lrs = []
    for _ in range(5):
        multi.step()
        lrs.append(round(multi.get_last_lr()[0], 10))
    assert lrs == [1.0, 0.2, 0.2, 0.04, 0.04]


def test_clip_grad_norm_scales_to_max_norm():
    p, q = nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(1))
    p.grad = tu.backend.asarray(np.array([3.0, 0.0], np.float32))
    q.grad = tu.backend.asarray(np.array([4.0], np.float32))
    assert optim.clip_grad_norm([p, q], 1.0) == pytest.approx(5.0)
    total = np.sqrt((tu.backend.to_host(p.grad) ** 2).sum() + (tu.backend.to_host(q.grad) ** 2).sum())
    assert total == pytest.approx(1.0, rel=1e-5)


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="SGD: params must be a non-empty list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="SGD: lr must be a finite number"):
        optim.SGD([nn.Parameter(np.ones(1))], lr=-1)


# -------------------------------------------- a step between forward and backward; leaves only
def test_optimiser_step_between_forward_and_backward_makes_backward_raise():
    layer = nn.Linear(3, 2)
    opt = optim.SGD(layer.parameters(), lr=0.1)
    loss = layer(tu.tensor(np.ones((4, 3)))).sum()
    for p in layer.parameters():
        p.grad = tu.backend.get_array_module(p.data).ones_like(p.data)
    opt.step()
    with pytest.raises(RuntimeError, match="Parameter of shape .* was changed after Linear"):
        loss.backward()


def test_optimiser_refuses_a_non_leaf_tensor():
    w = nn.Linear(2, 2).weight
    with pytest.raises(ValueError, match="SGD: params must be leaf tensors.*Mul"):
        optim.SGD([w * 2.0], lr=0.1)  # was: a step that changed a copy


OPTIMISERS = {
    "SGD": (optim.SGD, dict(lr=0.1)),
    "SGD-nesterov-decay": (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True,
                                           weight_decay=0.01)),
    "Adam": (optim.Adam, dict(lr=1e-3)),
    "Adam-decay": (optim.Adam, dict(lr=1e-3, weight_decay=0.01)),
    "AdamW": (optim.AdamW, dict(lr=1e-3)),
}


def test_every_optimiser_is_in_the_list():
    defined = {c for c in vars(optim).values() if inspect.isclass(c)
               and issubclass(c, optim.Optimizer) and c is not optim.Optimizer}
    assert defined == {cls for cls, _ in OPTIMISERS.values()}


@pytest.mark.parametrize("cls, kwargs", OPTIMISERS.values(), ids=OPTIMISERS)
def test_every_optimisers_step_between_forward_and_backward_is_refused(cls, kwargs):
    layer = nn.Linear(3, 2)
    opt = cls(layer.parameters(), **kwargs)
    layer(tu.tensor(np.ones((4, 3)))).sum().backward()
    opt.step()  # after backward: fine
    loss = layer(tu.tensor(np.ones((4, 3)))).sum()
    opt.step()  # the old gradients, between this forward and its backward
    with pytest.raises(RuntimeError, match="was changed after Linear"):
        loss.backward()


def test_clipping_gradients_changes_no_version():
    x = tu.tensor([3.0, 4.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    optim.clip_grad_norm([x], 1.0)
    y.backward()  # gradients are not saved by any op


@pytest.mark.parametrize("cls, kwargs", OPTIMISERS.values(), ids=OPTIMISERS)
@pytest.mark.parametrize("make", [lambda w: w * 2.0, lambda w: w.reshape(-1),
                                  lambda w: w[0], lambda w: w + 0.0],
                         ids=["mul", "reshape", "getitem", "add"])
def test_every_optimiser_refuses_a_non_leaf(cls, kwargs, make):
    w = nn.Linear(2, 2).weight
    with pytest.raises(ValueError, match=f"{cls.__name__}: params must be leaf tensors"):
        cls([w, make(w)], **kwargs)
    with pytest.raises(ValueError, match=f"{cls.__name__}: params must be leaf tensors"):
        cls([{"params": [w]}, {"params": [make(w)]}], **kwargs)


# ---------------------------------------- bad arguments of optimisers, schedulers and clipping
def test_sgd_typo_and_nan_learning_rate_are_refused():
    params = nn.Linear(2, 2).parameters()
    with pytest.raises(TypeError, match="SGD: unknown argument 'momentun'"):
        optim.SGD(params, lr=0.1, momentun=0.9)
    with pytest.raises(ValueError, match="SGD: lr must be finite, got nan"):
        optim.SGD(params, lr=float("nan"))


HYPER_PARAMETERS = [
    (optim.SGD, dict(lr=0.1, momentum=0.9), ["lr", "momentum", "weight_decay"]),
    (optim.Adam, dict(lr=1e-3), ["lr", "eps", "weight_decay"]),
    (optim.AdamW, dict(lr=1e-3), ["lr", "eps", "weight_decay"]),
]


def _optimiser_cases():
    for cls, good, hypers in HYPER_PARAMETERS:
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


@pytest.mark.parametrize("cls", [entry[0] for entry in HYPER_PARAMETERS])
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
    ("list", 0.0, ValueError), ("list", math.nan, ValueError), ("list", -1.0, ValueError),
    ("list", "1", TypeError), ("a module", 1.0, TypeError)])
def test_clip_grad_norm_arguments(params, max_norm, error):
    layer = nn.Linear(2, 2)
    with pytest.raises(error, match="clip_grad_norm"):
        optim.clip_grad_norm(layer if params == "a module" else [layer.weight], max_norm)
