"""tinyunits.fast.optim: the optimisers' drop-ins (their last line as BLAS's axpy) against
their references (tinyunits.optim's `p -= lr * direction`), step by step."""
import contextlib

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, optim
from tinyunits.fast import blas
from tinyunits.fast import optim as fast_optim

KINDS = {  # name: (reference, drop-in, hyper-parameters)
    "sgd": (optim.SGD, fast_optim.SGD, dict(lr=0.1)),
    "momentum+wd": (optim.SGD, fast_optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    "nesterov": (optim.SGD, fast_optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    "adam": (optim.Adam, fast_optim.Adam, dict(lr=0.01, weight_decay=0.01)),
    "adamw": (optim.AdamW, fast_optim.AdamW, dict(lr=0.01)),
}
SIZES = ((3, 5), (31,), (10_001,), (627, 1001))  # all but the last under MIN_AXPY_ELEMENTS


def params(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [nn.Parameter(rng.standard_normal(s), dtype=dtype) for s in shapes]


def gradients(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    return [backend.asarray(rng.standard_normal(s).astype(dtype)) for s in shapes]


def uses_blas(p) -> bool:
    """Does the drop-in's axpy call BLAS for parameter p here? Not for a small one, not on
    the strict backend, nor without an axpy to call."""
    return (p.size >= fast_optim.MIN_AXPY_ELEMENTS and backend.get_backend() == "numpy"
            and blas._routine(p.dtype.name) is not None)


@pytest.mark.parametrize("kind", KINDS)
def test_the_reference_classes_build_their_drop_ins(kind):
    reference, drop_in, hyper = KINDS[kind]
    assert type(reference(params([(2,)], "float32"), **hyper)) is drop_in
    with tu.fast.disabled():
        assert type(reference(params([(2,)], "float32"), **hyper)) is reference


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", KINDS)
def test_each_step_of_the_drop_in_is_the_references_but_for_axpys_rounding(kind, dtype):
    """From the same parameters and state, a step of each. Everything before the last line
    is the same code, so the state (momentum, Adam's moments) has the same bits. The last
    line: the reference rounds lr * d, then p - lr * d; BLAS's axpy rounds the exact
    p - lr * d once (a fused multiply-add) in its vector loop, so p may differ by half a
    unit in the last place of lr * d plus one of the larger of p before and after (the
    bound of tests/test_fast_blas.py). Where axpy does not call BLAS (parameters under
    MIN_AXPY_ELEMENTS, strict arrays), it runs the reference's line: the same bits."""
    reference, drop_in, hyper = KINDS[kind]
    ps, qs = params(SIZES, dtype), params(SIZES, dtype)
    fast = reference(ps, **hyper)
    with tu.fast.disabled():
        ref = reference(qs, **hyper)
    assert type(fast) is drop_in and type(ref) is reference
    directions, descend = [], ref.descend

    def recorded(p, lr, d):  # the reference's last line, keeping its lr * d for the bound
        directions.append(lr * d)
        descend(p, lr, d)
    ref.descend = recorded
    for t in range(3):
        before = [backend.to_host(q.data).copy() for q in qs]
        for p, q, g in zip(ps, qs, gradients(SIZES, dtype, seed=t + 1)):
            p.grad, q.grad = g, g.copy()
        directions.clear()
        fast.step()
        ref.step()
        for p, q, q0, lr_d in zip(ps, qs, before, directions):
            got, want = backend.to_host(p.data), backend.to_host(q.data)
            if not uses_blas(q):
                np.testing.assert_array_equal(got, want)
                continue
            lr_d = backend.to_host(lr_d)
            bound = 0.5 * np.spacing(np.abs(lr_d)) + np.spacing(np.maximum(np.abs(want),
                                                                           np.abs(q0)))
            assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)
            p.data[...] = q.data  # the next step starts from the same parameters again
        for key, value in ref.state_dict().items():
            other = fast.state_dict()[key]
            if backend.is_array(value):
                np.testing.assert_array_equal(backend.to_host(other), backend.to_host(value))
            else:
                assert other == value, key


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("kind", ["momentum+wd", "adam"])
def test_a_reloaded_optimiser_goes_on_bit_for_bit_on_either_path(kind, fast):
    """Six steps, or three, state_dict, a fresh optimiser over the same parameters that
    loads it, three more: the same bits, drop-in or reference (fit's backups rely on it)."""
    reference, _, hyper = KINDS[kind]

    def run(stop):
        ps = params(SIZES[:2], "float32")
        opt = reference(ps, **hyper)
        for t in range(6):
            if t == stop:
                state = opt.state_dict()
                opt = reference(ps, **hyper)
                opt.load_state_dict(state)
            for p, g in zip(ps, gradients(SIZES[:2], "float32", seed=t)):
                p.grad = g
            opt.step()
        return [backend.to_host(p.data) for p in ps]

    with contextlib.nullcontext() if fast else tu.fast.disabled():
        whole, resumed = run(None), run(3)
    for a, b in zip(resumed, whole):
        np.testing.assert_array_equal(a, b)
