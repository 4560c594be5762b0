"""Where a row's step goes: wall and CPU milliseconds per op, our side only.

    python tests/benchmarks/ops_time.py B2                 # the library's defaults
    python tests/benchmarks/ops_time.py B2 --threads 1     # set_num_threads(1)
    python tests/benchmarks/ops_time.py E1 --steps 2       # E rows: a step is an epoch
    python tests/benchmarks/ops_time.py E1 --by-shape      # each op per input shape and stride

Every Function's forward and backward is timed around its call (the time of the
ops it calls inside is its own: Functions do not nest; a drop-in's call of its
parent's forward or backward is timed once, as the drop-in's); `engine, optimiser` is the
step's rest. CPU is the process's (all threads, BLAS's spinning included), so on
several threads an op's CPU above its wall is work shared out, and wall above CPU
is waiting: for a core, for another thread, for memory. Measure on a quiet machine:
on a shared one the wall column measures the other jobs too. The process is set up
as run.py's side of ours is (--process training: OpenBLAS's thread timeout, glibc's
heap kept from step to step).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), HERE]
# set up as run.py sets up our side (--process training): before NumPy loads OpenBLAS
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "22")

import cases  # noqa: E402  (imports tinyunits before NumPy)
import run  # noqa: E402
import tinyunits as tu  # noqa: E402
from tinyunits.function import Function  # noqa: E402


def _functions(cls=Function):
    for sub in cls.__subclasses__():
        yield sub
        yield from _functions(sub)


def timing_every_op(totals, by_shape=False):
    """Wrap every forward and backward that a Function runs (its class's, its parents',
    a mixin's such as the pooling drop-ins' threads): totals[name] += [wall, cpu, 1], the
    name the class of the Function called; by_shape: one name per first input's shape
    (and stride, where the op has one)."""
    classes = {klass for cls in _functions() for klass in cls.__mro__}
    for cls in classes - {Function, object}:
        for method in ("forward", "backward"):
            if method in cls.__dict__:
                setattr(cls, method, _timed(cls.__dict__[method], totals, method, by_shape))


def _timed(method, totals, method_name, by_shape):
    def timed(self, *args):
        if getattr(self, "_ops_time_inside", False):  # a drop-in calling its parent's method
            return method(self, *args)
        key = f"{type(self).__name__}.{method_name}"
        if by_shape:
            if method.__name__ == "forward":
                stride = getattr(self, "stride", None)
                self._ops_time_shape = f" {tuple(args[0].shape)}" + (
                    f" s{stride}" if stride is not None else "")
            key += getattr(self, "_ops_time_shape", "")
        total = totals[key]
        wall, cpu = time.perf_counter(), time.process_time()
        self._ops_time_inside = True
        try:
            return method(self, *args)
        finally:
            self._ops_time_inside = False
            total[0] += time.perf_counter() - wall
            total[1] += time.process_time() - cpu
            total[2] += 1
    return timed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("row", help="a row id of run.py, e.g. B2")
    parser.add_argument("--threads", type=int, help="set_num_threads (default: the library's)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps (after 3 warm-up)")
    parser.add_argument("--by-shape", action="store_true",
                        help="each op per input shape (and stride): a conv layer by layer")
    args = parser.parse_args(argv)
    builders = {row_id: build for row_id, _, build, _ in run.rows(cases)}
    if args.row not in builders:
        parser.error(f"row {args.row!r}: expected one of {', '.join(builders)}")
    if args.threads is not None:
        tu.set_num_threads(args.threads)
    tu.fast.steady_allocator()  # with the thread timeout above: run.py's training process
    totals = collections.defaultdict(lambda: [0.0, 0.0, 0])
    step = builders[args.row]().ours  # every Function class exists once the model does
    timing_every_op(totals, args.by_shape)
    for _ in range(3):
        step()
    for total in totals.values():
        total[:] = [0.0, 0.0, 0]
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ms = 1e3 / args.steps
    print(f"{args.row}, {tu.get_num_threads()} threads, {args.steps} steps: {wall * ms:.1f} ms "
          f"wall, {cpu * ms:.1f} ms CPU a step; load average {load:.2f} -> "
          f"{os.getloadavg()[0]:.2f}")
    width = max(34, *(len(name) for name in totals))
    print(f"{'op':{width}s} {'wall ms':>8s} {'CPU ms':>8s} {'calls':>6s}")
    for name, (op_wall, op_cpu, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        if calls:
            print(f"{name:{width}s} {op_wall * ms:8.2f} {op_cpu * ms:8.2f} {calls / args.steps:6.0f}")
    rest_wall = wall - sum(t[0] for t in totals.values())
    rest_cpu = cpu - sum(t[1] for t in totals.values())
    print(f"{'engine, optimiser':{width}s} {rest_wall * ms:8.2f} {rest_cpu * ms:8.2f}")


if __name__ == "__main__":
    main()
