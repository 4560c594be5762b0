"""Adam and AdamW against Algorithm 1 of Kingma & Ba as PyTorch computes it (eps added
after the bias correction), written out here, and against torch.optim itself where torch
is importable: 20 steps over gradients from 1e-8 to 1e2, where the two forms of eps part."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, optim

STEPS = 20
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8


def gradient_steps(seed=0):
    """(STEPS, 11) gradients: each column keeps one scale of 1e-8 ... 1e2, signs random."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(-8, 2, 11)
    return scales * rng.choice([-1.0, 1.0], size=(STEPS, 11)) * rng.uniform(0.5, 1.5, (STEPS, 11))


def algorithm_1(p, grads, weight_decay, decoupled):
    """The paper's Algorithm 1, PyTorch's order: p after each step."""
    b1, b2 = BETAS
    m, v, out = np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - LR * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        p = p - LR * m_hat / (np.sqrt(v_hat) + EPS)
        out.append(p)
    return np.array(out)


def tinyunits_steps(cls, p0, grads, weight_decay):
    p = nn.Parameter(p0.copy(), dtype="float64")
    opt = cls([p], lr=LR, betas=BETAS, eps=EPS, weight_decay=weight_decay)
    out = []
    for g in grads:
        p.grad = backend.asarray(g)
        opt.step()
        out.append(p.numpy().copy())
    return np.array(out)


CASES = [(optim.Adam, 0.0, False), (optim.Adam, 0.1, False), (optim.AdamW, 0.01, True),
         (optim.AdamW, 0.0, True)]


@pytest.mark.parametrize("cls,weight_decay,decoupled", CASES)
def test_twenty_steps_are_algorithm_1s_over_gradients_from_1e_8_to_1e2(cls, weight_decay,
                                                                      decoupled):
    grads = gradient_steps()
    p0 = np.linspace(-1.0, 1.0, 11)
    with tu.fast.disabled():  # the reference's own arithmetic
        got = tinyunits_steps(cls, p0, grads, weight_decay)
    want = algorithm_1(p0, grads, weight_decay, decoupled)
    np.testing.assert_allclose(got - p0, want - p0, rtol=1e-10, atol=1e-18)
    np.testing.assert_allclose(tinyunits_steps(cls, p0, grads, weight_decay), want,
                               rtol=1e-12)  # the drop-in too


def test_a_gradient_near_eps_moves_the_parameter_as_far_as_pytorchs():
    """With |g| = 1e-8 = eps, the first step is lr * g / (|g| + eps) = lr / 2; eps added
    before the bias correction made it lr * 0.031 (the 10-18 times smaller steps)."""
    p = nn.Parameter(np.zeros(1), dtype="float64")
    p.grad = backend.asarray(np.array([1e-8]))
    optim.Adam([p], lr=LR).step()
    np.testing.assert_allclose(p.numpy(), [-LR / 2], rtol=1e-12)


@pytest.mark.parametrize("cls,weight_decay,decoupled", CASES)
def test_twenty_steps_are_torch_optims(cls, weight_decay, decoupled):
    torch = pytest.importorskip("torch")
    grads = gradient_steps(seed=1)
    p0 = np.linspace(-1.0, 1.0, 11)
    q = torch.tensor(p0, dtype=torch.float64, requires_grad=True)
    opt = getattr(torch.optim, cls.__name__)([q], lr=LR, betas=BETAS, eps=EPS,
                                             weight_decay=weight_decay)
    want = []
    for g in grads:
        q.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        want.append(q.detach().numpy().copy())
    got = tinyunits_steps(cls, p0, grads, weight_decay)
    np.testing.assert_allclose(got - p0, np.array(want) - p0, rtol=1e-10, atol=1e-18)


def test_a_state_dict_resumes_to_the_same_steps():
    """The stored m, v and t mean what they meant before (the raw moments and the step
    count): a run cut after 7 steps and loaded into a fresh optimiser ends where one run does."""
    grads, p0 = gradient_steps(seed=2), np.linspace(-1.0, 1.0, 11)
    whole = tinyunits_steps(optim.Adam, p0, grads, 0.0)[-1]
    p = nn.Parameter(p0.copy(), dtype="float64")
    first = optim.Adam([p], lr=LR)
    for g in grads[:7]:
        p.grad = backend.asarray(g)
        first.step()
    second = optim.Adam([p], lr=LR)
    second.load_state_dict(first.state_dict())
    for g in grads[7:]:
        p.grad = backend.asarray(g)
        second.step()
    np.testing.assert_array_equal(p.numpy(), whole)
