"""Gradcheck cases, one module per group; tinyunits.gradcheck imports them all.

Builders draw their data from `data(shape)` (seeded, float64, on the backend) and
keep inputs of kinked functions (relu, abs, max) away from the kinks, where a
central difference straddles two slopes.
"""
from ... import backend

CASES: dict = {}


def register(name: str):
    """Decorator: register a builder returning (fn, inputs) or (fn, inputs, module)."""
    def decorate(build):
        if name in CASES:
            raise ValueError(f"gradcheck case {name!r} registered twice")
        CASES[name] = build
        return build
    return decorate


def data(*shape, low=-1.0, high=1.0, margin=0.0):
    """Seeded float64 data on the backend; |x| >= margin when margin > 0."""
    rng = backend.host_rng()
    x = rng.uniform(low, high, size=shape)
    if margin:
        x = backend.host_module().sign(x) * (margin + abs(x))
    return backend.asarray(x, dtype="float64")
