"""Gradcheck cases for the diagonal and tri-diagonal TMAF (tinyunits/units/tmaf.py).

A TMAF jumps at every breakpoint (the levels change there), so inputs are drawn
inside the intervals, at least MARGIN from every breakpoint: a central
difference across a jump would see the jump, not the slope. Levels (and the
off-diagonals) are random, so every term of the backward is exercised.
"""
from ... import backend
from ...units.tmaf import TMAF
from . import register

BREAKPOINTS = (-0.5, 0.0, 0.5)
MARGIN = 0.1


def between_breakpoints(*shape):
    """Seeded float64 data in the four intervals of BREAKPOINTS, MARGIN from their ends."""
    rng = backend.host_rng()
    starts = rng.choice([-1.0, -0.5, 0.0, 0.5], size=shape)
    return backend.asarray(starts + rng.uniform(MARGIN, 0.5 - MARGIN, size=shape), "float64")


def _case(name, kind, shape):
    @register(name)
    def _():
        layer = TMAF(shape[1], BREAKPOINTS, kind=kind, init="random")
        return layer, [between_breakpoints(*shape)], layer


_case("tmaf_diagonal_dense", "diagonal", (6, 5))
_case("tmaf_diagonal_conv", "diagonal", (2, 3, 4, 4))
_case("tmaf_tridiagonal_dense", "tridiagonal", (6, 5))
_case("tmaf_tridiagonal_conv", "tridiagonal", (2, 3, 4, 4))
