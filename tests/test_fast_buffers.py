"""tinyunits.fast.buffers: scratch arrays lent again for the same shape only, within the
cache's limits, never while a live graph holds them; and steady_allocator(), glibc's
heap kept from step to step when a program asks."""
import sys

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import buffers

from fast_support import empty_cache, run_python  # noqa: F401


def test_small_arrays_and_a_pile_of_one_shape_are_not_kept(empty_cache, monkeypatch):
    """Lesson 1 gave back more of one small shape than it borrowed, every step: the
    list grew without bound (and give_back, scanning it, took 48 s of a 60 s run)."""
    xp = backend.host_module()
    buffers.give_back(xp.empty(10, "float32"))
    assert buffers._State.bytes == 40
    monkeypatch.setattr(buffers, "MIN_BYTES", 41)
    buffers.give_back(xp.empty(10, "float32"))
    assert buffers._State.bytes == 40
    for _ in range(3 * buffers.PER_SHAPE):
        buffers.give_back(xp.empty(20, "float32"))
    assert buffers._State.bytes == 40 + 80 * buffers.PER_SHAPE


def test_a_buffer_given_back_is_lent_again_for_the_same_shape_only(empty_cache):
    xp = backend.host_module()
    a = buffers.borrow(xp, (3, 4), "float32")
    buffers.give_back(a)
    assert buffers.borrow(xp, (4, 3), "float32") is not a
    assert buffers.borrow(xp, (3, 4), "float64") is not a
    assert buffers.borrow(xp, (3, 4), "float32") is a
    assert buffers.borrow(xp, (3, 4), "float32") is not a  # lent once at a time


def test_the_cache_keeps_at_most_its_limit(empty_cache, monkeypatch):
    monkeypatch.setattr(buffers, "LIMIT", 600)
    xp = backend.host_module()
    first, second = (buffers.borrow(xp, (100,), "float32") for _ in range(2))
    buffers.give_back(first)
    buffers.give_back(second)  # 800 bytes > 600: the older one goes
    assert buffers._State.bytes == 400
    assert buffers.borrow(xp, (100,), "float32") is second
    assert buffers.borrow(xp, (100,), "float32") is not first


def test_a_shape_lent_out_leaves_the_cache_and_eviction_goes_on(empty_cache, monkeypatch):
    """Lending a shape's last buffer leaves no empty entry behind for eviction to trip
    on (lesson 1 raised IndexError), and a buffer given back twice is kept once."""
    monkeypatch.setattr(buffers, "LIMIT", 600)
    xp = backend.host_module()
    a, b = buffers.borrow(xp, (100,), "float32"), buffers.borrow(xp, (50,), "float32")
    buffers.give_back(a)
    buffers.give_back(a)
    assert buffers._State.bytes == 400
    assert buffers.borrow(xp, (100,), "float32") is a  # the (100,) entry is now empty
    buffers.give_back(b)
    buffers.give_back(buffers.borrow(xp, (120,), "float32"))  # 680 > 600: evicts b
    assert buffers._State.bytes == 480
    assert buffers.borrow(xp, (100,), "float32") is not a


def test_device_arrays_are_not_kept(empty_cache):
    a = backend.strict.zeros(3)
    buffers.give_back(a)
    assert buffers._State.bytes == 0


def test_two_live_graphs_do_not_share_scratch(rng, empty_cache):
    """Two forwards before either backward (scratch reused in between) give what two
    separate steps give: nothing a graph needs lives in a reused buffer."""
    x1, x2, W, b, g = (rng.normal(size=s).astype("float32") for s in
                       ((4, 3, 8, 8), (4, 3, 8, 8), (5, 3, 3, 3), (5,), (4, 5, 8, 8)))

    def leaves():
        return [tu.tensor(a, requires_grad=True) for a in (W, b)]

    separate = []
    for x in (x1, x2):
        Wt, bt = leaves()
        xt = tu.tensor(x, requires_grad=True)
        y = ops.conv2d(xt, Wt, bt, padding=1)
        y.backward(tu.tensor(g))
        separate.append([y.numpy(), backend.to_host(xt.grad), backend.to_host(Wt.grad)])
    (W1, b1), (W2, b2) = leaves(), leaves()
    xt1, xt2 = tu.tensor(x1, requires_grad=True), tu.tensor(x2, requires_grad=True)
    y1, y2 = ops.conv2d(xt1, W1, b1, padding=1), ops.conv2d(xt2, W2, b2, padding=1)
    y2.backward(tu.tensor(g))
    y1.backward(tu.tensor(g))
    for got, want in zip([[y1.numpy(), backend.to_host(xt1.grad), backend.to_host(W1.grad)],
                          [y2.numpy(), backend.to_host(xt2.grad), backend.to_host(W2.grad)]],
                         separate):
        for a, b_ in zip(got, want):
            np.testing.assert_array_equal(a, b_)


@pytest.mark.parametrize("op", [ops.relu, lambda x: ops.max_pool2d(x, 2)])
def test_saved_arrays_come_back_only_after_their_backward(rng, empty_cache, op):
    """ReLU's mask and max pooling's positions are lent to the Function and given back
    by release() after its backward: two live graphs, and a graph kept for a second
    backward (retain_graph) while others come and go, keep their own."""
    xs = [rng.normal(size=(4, 3, 6, 6)).astype("float32") for _ in range(3)]

    def grad(x):
        xt = tu.tensor(x, requires_grad=True)
        y = op(xt)
        y.backward(tu.tensor(np.ones(y.shape, "float32")))
        return backend.to_host(xt.grad)

    want = [grad(x) for x in xs]
    kept = tu.tensor(xs[0], requires_grad=True)
    y0 = op(kept)
    y0.backward(tu.tensor(np.ones(y0.shape, "float32")), retain_graph=True)
    first = backend.to_host(kept.grad).copy()
    live = [tu.tensor(x, requires_grad=True) for x in xs[1:]]
    ys = [op(t) for t in live]  # both forwards before either backward
    for t, y, w in zip(live[::-1], ys[::-1], want[:0:-1]):
        y.backward(tu.tensor(np.ones(y.shape, "float32")))
        np.testing.assert_array_equal(backend.to_host(t.grad), w)
    if backend.get_backend() == "numpy":
        assert buffers._State.bytes > 0  # given back, to be lent again
    grad(xs[2])  # borrows what the others gave back
    y0.backward(tu.tensor(np.ones(y0.shape, "float32")))  # the kept graph, again
    np.testing.assert_array_equal(first, want[0])
    np.testing.assert_array_equal(backend.to_host(kept.grad), 2 * want[0])


# --------------------------------------------------------------------------- allocator
STEP = ("import resource, numpy as np, tinyunits\n"
        "steady = tinyunits.fast.steady_allocator()\n"
        "def step():\n"
        "    arrays = [np.ones(2 ** 18) for _ in range(40)]  # 80 MB made, then freed\n"
        "step(); step()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(5): step()\n"
        "faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
        "print(steady, faults // 5)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_steady_allocator_keeps_a_steps_memory_when_asked():
    """glibc hands a step's freed memory back to the kernel; steady_allocator() keeps it,
    unless the environment already says how glibc should behave."""
    steady, faults = run_python(STEP)
    assert steady == "True" and int(faults) < 1000, faults  # 80 MB would be ~20000 faults
    for env in (dict(TINYUNITS_MALLOC="default"), dict(MALLOC_TRIM_THRESHOLD_="131072")):
        steady, faults = run_python(STEP, **env)
        assert steady == "False" and int(faults) > 10000, (env, faults)  # left as it is
