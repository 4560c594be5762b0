"""The space of calls of a Function, and the rule that picks the calls to check.

A unit declares its Function's space: each option with its values, the default
first. Options are the constructor's (activation, kernel size, stride, depth of an
inner net, bias, axis, a prune mask) and the kinds of its inputs (shapes, a batch of
1, which operand is broadcast, inputs on a kink or breakpoint, extreme values, dtype);
`allowed(point)` says which combinations exist. `covering(space)` picks points so
that every value of every option appears, and every pair of values of two options
appears together in some point (a pairwise covering design), wherever an allowed
point has that pair. It is greedy and deterministic: the default point first, then
each time the allowed point that covers the most pairs not covered yet (the first
in the options' order on a tie).

`calls(space, build)` builds each chosen point into a Call, the seed fixed per
point, so a point's inputs do not depend on which other points were built. Both
python -m tinyunits.gradcheck (`register_calls`) and the course grader
(tinyunits/course/cases.py) take their cases from these calls.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

from ... import backend
from . import register


@dataclass(frozen=True)
class Space:
    options: dict                                # name -> tuple of values, the default first
    allowed: Callable = lambda point: True

    def describe(self, point) -> str:
        """The point's options that are not the default, as words ("defaults" if none)."""
        return ", ".join(f"{name} {value}" for name, value in point.items()
                         if value != self.options[name][0]) or "defaults"

    def points(self) -> list:
        """Every allowed point, in the options' order (the default point first)."""
        names = list(self.options)
        every = (dict(zip(names, values)) for values in itertools.product(*self.options.values()))
        return [p for p in every if self.allowed(p)]


@dataclass
class Call:
    """One call of a Function at a point of its space. make() gives a fresh Function;
    inputs are host arrays (float64, or float32 at a float32 point); names[i] is the
    name of input i's gradient; `defined` lists the inputs whose gradient is defined
    and well conditioned at these inputs (an x on a TMAF breakpoint has none, its
    levels do), the only ones a check may compare with central differences."""
    label: str
    make: Callable
    inputs: list
    names: tuple
    defined: tuple
    point: dict


def _pairs(point) -> set:
    items = sorted(point.items())
    return {pair for pair in itertools.combinations(items, 2)} | {(item,) for item in items}


def covering(space: Space) -> list:
    """The points chosen from `space` (see the module doc)."""
    candidates = [(p, _pairs(p)) for p in space.points()]
    if not candidates:
        raise ValueError(f"covering: the space {space.options} allows no point")
    wanted = set().union(*(pairs for _, pairs in candidates))
    chosen = []
    while wanted:
        best, pairs = max(candidates, key=lambda c: len(c[1] & wanted))  # max keeps the first
        chosen.append(best)
        wanted -= pairs
    return chosen


def calls(space: Space, build: Callable, seed: int = 0) -> list:
    """[build(point)] for the covering's points, each drawn from its own seed."""
    out = []
    for k, point in enumerate(covering(space)):
        backend.manual_seed(seed + k)
        out.append(build(point))
    return out


def _checked(call):
    """gradcheck's (fn, inputs): the call in float64, through the engine, its defined
    inputs checked and the others held as constants."""
    fixed = [backend.asarray(x, dtype="float64") for x in call.inputs]

    def fn(*checked):
        args = list(fixed)
        for i, t in zip(call.defined, checked):
            args[i] = t
        return call.make()(*args)
    return fn, [fixed[i] for i in call.defined]


def register_calls(name: str, space: Space, build: Callable, seed: int = 0) -> None:
    """Register each call of the covering as gradcheck case '<name>: <its options>'."""
    for k, point in enumerate(covering(space)):
        def case(k=k, point=point):
            backend.manual_seed(seed + k)
            return _checked(build(point))
        register(f"{name}: {space.describe(point)}")(case)
