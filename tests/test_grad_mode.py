"""Grad mode (tu.no_grad, tu.is_grad_enabled) is per thread and per asyncio task, as
PyTorch's is per thread: one thread evaluating in no_grad must not stop another's graph.
The threads take turns on Events and a Barrier, so every interleaving is the one named."""
import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tinyunits as tu

WAIT = 30  # seconds: only a deadlock (a failed test) ever waits this long


def _in_thread(fn):
    """Start fn in a thread; the returned join() re-raises what it raised."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the main thread
            box["error"] = err
    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join():
        thread.join(WAIT)
        assert not thread.is_alive(), "the thread is stuck"
        if "error" in box:
            raise box["error"]
        return box.get("value")
    return join


def _step(w, x):
    """One training forward and backward; w's gradient of sum((w x)^2) is 2 (w x) x."""
    w.grad = None
    ((w * x) * (w * x)).sum().backward()
    return w.grad


def test_one_threads_no_grad_leaves_another_threads_training_recording():
    inside, trained = threading.Event(), threading.Event()

    def evaluate():
        with tu.no_grad():
            inside.set()
            assert trained.wait(WAIT)
            seen = tu.is_grad_enabled()
            y = tu.tensor([1.0], requires_grad=True) * 2
        return seen, y.requires_grad

    join = _in_thread(evaluate)
    assert inside.wait(WAIT)  # the other thread is inside no_grad now
    w = tu.tensor([3.0, -1.0], requires_grad=True, dtype="float64")
    x = tu.tensor([2.0, 5.0], dtype="float64")
    assert tu.is_grad_enabled()
    grad = _step(w, x)
    trained.set()
    np.testing.assert_array_equal(tu.backend.to_host(grad), [2 * 6.0 * 2, 2 * -5.0 * 5])
    assert join() == (False, False)  # and its own block stayed off throughout


def test_overlapping_no_grad_blocks_in_two_threads_leave_grad_mode_on():
    # A enters, B enters, A leaves, B leaves: a process-wide flag that each block saves
    # and restores ends False (B saved A's False); per thread, both end True
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with tu.no_grad():
            a_in.set()
            assert b_in.wait(WAIT)
        a_out.set()
        return tu.is_grad_enabled()

    def b():
        assert a_in.wait(WAIT)
        with tu.no_grad():
            b_in.set()
            assert a_out.wait(WAIT)
        return tu.is_grad_enabled()

    join_a, join_b = _in_thread(a), _in_thread(b)
    assert join_a() is True and join_b() is True
    assert tu.is_grad_enabled()
    assert tu.tensor([1.0], requires_grad=True).__mul__(2).requires_grad
    assert _in_thread(tu.is_grad_enabled)()  # a new thread starts with recording on


def test_threads_alternating_no_grad_and_training_step_by_step():
    # two threads, each alternating an evaluation in no_grad and a training step, out of
    # phase: at every step one evaluates while the other trains
    barrier = threading.Barrier(2, timeout=WAIT)
    rounds = 4

    def worker(phase):
        w = tu.tensor([1.5], requires_grad=True, dtype="float64")
        x = tu.tensor([2.0], dtype="float64")
        seen = []
        for r in range(rounds):
            if (r + phase) % 2:
                with tu.no_grad():
                    barrier.wait()  # the other thread is training now
                    seen.append(("eval", tu.is_grad_enabled(), (w * x).requires_grad))
                    barrier.wait()
            else:
                barrier.wait()
                seen.append(("train", tu.is_grad_enabled(), tu.backend.to_host(_step(w, x))[0]))
                barrier.wait()
        return seen

    joins = [_in_thread(lambda p=p: worker(p)) for p in (0, 1)]
    for seen in (join() for join in joins):
        assert len(seen) == rounds
        for kind, enabled, value in seen:
            assert (kind, enabled, value) == (("eval", False, False) if kind == "eval"
                                              else ("train", True, 2 * 3.0 * 2.0))


def test_a_parameter_update_in_place_is_refused_where_this_thread_records():
    # `p -= ...` is in place only where no graph is recorded: the check reads this
    # thread's mode, not the mode of a thread that happens to be inside no_grad
    inside, done = threading.Event(), threading.Event()

    def evaluate():
        with tu.no_grad():
            inside.set()
            assert done.wait(WAIT)

    join = _in_thread(evaluate)
    assert inside.wait(WAIT)
    p = tu.tensor([1.0], requires_grad=True)
    try:
        with pytest.raises(RuntimeError, match="in place while gradients are recorded"):
            p -= 0.5
    finally:
        done.set()
        join()
    assert tu.backend.to_host(p.data)[0] == 1.0


def test_asyncio_tasks_each_see_their_own_grad_mode():
    async def main():
        entered, trained = asyncio.Event(), asyncio.Event()

        async def evaluate():
            with tu.no_grad():
                entered.set()
                await trained.wait()  # the other task trains while this one waits here
                return tu.is_grad_enabled(), (tu.tensor([1.0], requires_grad=True) * 2).requires_grad

        async def train():
            await entered.wait()
            seen = tu.is_grad_enabled()
            w = tu.tensor([2.0], requires_grad=True, dtype="float64")
            grad = _step(w, tu.tensor([3.0], dtype="float64"))
            trained.set()
            return seen, tu.backend.to_host(grad)[0]

        return await asyncio.gather(evaluate(), train())

    (eval_enabled, eval_records), (train_enabled, grad) = asyncio.run(main())
    assert (eval_enabled, eval_records) == (False, False)
    assert train_enabled is True and grad == 2 * 6.0 * 3.0
    assert tu.is_grad_enabled()


def test_thread_pool_workers_record_while_the_caller_is_in_no_grad():
    # a pool's worker threads have their own mode: the caller's no_grad is not theirs,
    # as in PyTorch (whose mode is per thread too)
    with tu.no_grad(), ThreadPoolExecutor(2) as pool:
        seen = list(pool.map(lambda _: tu.is_grad_enabled(), range(4)))
        assert not tu.is_grad_enabled()
    assert seen == [True] * 4
