"""Gradcheck cases for the diagonal and tri-diagonal TMAF (tinyunits/units/tmaf.py).

A TMAF jumps at every breakpoint (the levels change there), so x is drawn inside
the intervals, at least MARGIN from every breakpoint: a central difference across
a jump would see the jump, not the slope. At a point "on a breakpoint" about a
third of x (its first entry always) sits exactly on one (0 among them when 0 is a breakpoint, as after a
ReLU): there dx is not defined, but the levels (and off-diagonals) still are, as
y is linear in them, and only they are checked. Levels are random, so every term
of the backward is exercised.

The space (space.py): three sets of breakpoints, dense and conv-map inputs, a
batch of 1, one feature, float32.
"""
from ... import backend
from ...units.tmaf import TMAF, DiagonalTMAFFn, TridiagonalTMAFFn
from . import data, register
from .space import Call, Space, register_calls

BREAKPOINTS = (-0.5, 0.0, 0.5)
MARGIN = 0.1


def between_breakpoints(breakpoints, *shape):
    """Seeded float64 data in the intervals of `breakpoints` (the outer ones 0.5 wide),
    MARGIN from their ends."""
    rng = backend.host_rng()
    ends = (breakpoints[0] - 0.5,) + tuple(breakpoints) + (breakpoints[-1] + 0.5,)
    k = rng.integers(0, len(ends) - 1, size=shape)
    low, high = backend.host_module().asarray(ends[:-1]), backend.host_module().asarray(ends[1:])
    x = low[k] + MARGIN + rng.random(shape) * (high[k] - low[k] - 2 * MARGIN)
    return backend.asarray(x, "float64")


SPACE = Space({"breakpoints": (BREAKPOINTS, (0.0,), (-1.0, -0.25, 0.5, 2.0)),
               "x": ("between breakpoints", "some on a breakpoint"),
               "layout": ("dense", "conv map"), "batch": ("many", "of 1"), "features": (5, 1),
               "dtype": ("float64", "float32")})


def build(fn, n_params, names):
    def call(point):
        s = point["breakpoints"]
        batch = 6 if point["batch"] == "many" else 1
        shape = (batch, point["features"]) + ((4, 4) if point["layout"] == "conv map" else ())
        np = backend.host_module()
        x = backend.to_host(between_breakpoints(s, *shape))
        defined = tuple(range(n_params + 1))
        if point["x"] != "between breakpoints":
            rng = backend.host_rng()
            on = rng.random(shape) < 1 / 3
            on.flat[0] = True
            x[on] = np.asarray(s)[rng.integers(0, len(s), size=shape)][on]
            defined = defined[1:]
        params = [backend.to_host(data(shape[1], len(s) + 1)) for _ in range(n_params)]
        label = (f"x {shape}" + ("" if s == BREAKPOINTS else f", breakpoints {s}")
                 + ("" if point["x"] == "between breakpoints" else ", some x on a breakpoint")
                 + ("" if point["dtype"] == "float64" else ", float32"))
        device_s = backend.asarray(np.asarray(s, dtype="float64"))
        return Call(label, lambda: fn(device_s), [a.astype(point["dtype"]) for a in [x] + params],
                    names, defined, point)
    return call


build_diagonal = build(DiagonalTMAFFn, 1, ("dx", "dlevels"))
build_tridiagonal = build(TridiagonalTMAFFn, 3, ("dx", "dlower", "dlevels", "dupper"))
register_calls("tmaf_diagonal", SPACE, build_diagonal)
register_calls("tmaf_tridiagonal", SPACE, build_tridiagonal)


def _case(name, kind, shape):
    @register(name)
    def _():
        layer = TMAF(shape[1], BREAKPOINTS, kind=kind, init="random")
        return layer, [between_breakpoints(BREAKPOINTS, *shape)], layer


# the layer itself, once per kind: its forward calls the Functions checked above
_case("tmaf_diagonal_dense", "diagonal", (6, 5))
_case("tmaf_tridiagonal_conv", "tridiagonal", (2, 3, 4, 4))
