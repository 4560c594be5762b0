"""How a wrong gradient is wrong: one diagnosis, shared by gradcheck and the course grader.

    compare(analytic, numeric) -> (max_abs, max_rel, ok)
    shape_story(got, want) -> str     a gradient of the wrong shape
    diagnose(analytic, numeric, others=None, known=(), alone=None, without=...,
             elementwise=True) -> Diagnosis(index, story)

`compare` is the verdict: the normwise relative error max|a - n| / max(max|a|, max|n|)
below TOLERANCE, or an absolute error below ATOL (as numpy.allclose has one: a
gradient that is exactly zero has a numerical twin of rounding noise only).

`diagnose` explains a failed one. `index` is the entry with the largest error (() when
the shapes differ); `story` is one line when one simple story explains the error, else
"". The stories, in the order they are tried:

    shapes differ:  "transposed (its last two axes are swapped)",
                    "broadcast axes not summed back"
    "it holds NaN at 3 of 12 entries" (or inf, or NaN and inf)
    "it is zero everywhere, where it should not be"
    "wrong sign"
    known[k][0]     a mistake the caller knows how to compute, e.g. a missing term
    "it depends on a value changed in place (right when computed without ...)"
                    alone: the same gradient computed with nothing else requiring one
    "swapped with dW: it holds the right dW"      others: the right gradients of the
                    other inputs, by name
    "transposed (its last two axes are swapped)"  a square matrix
    "off by a constant factor: it is 1/12 times the right gradient"
                    only where the right gradient has two nonzero entries or more
                    (of one, as of a one-element gradient, any error is "a factor");
                    a simple fraction is printed as one
    "zero at 3 of 12 entries where it should not be"   (and right at the others)

With elementwise=False (gradcheck's random directions, where the two vectors are
projections, not gradients) only the NaN, zero, sign and factor stories are tried.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .. import backend

TOLERANCE = 1e-6  # normwise relative error of a passing gradient
ATOL = 1e-8       # or an absolute error this small (a gradient that is zero)
SAME = 1e-5       # two arrays this close (normwise) are "the same" for a story


@dataclass(frozen=True)
class Diagnosis:
    index: tuple  # the entry with the largest error; () when the shapes differ
    story: str    # one line, "" when no simple story explains the error


def distance(a, b) -> float:
    """Normwise relative distance max|a - b| / max(max|a|, max|b|), 0 for two zeros
    (NaN where either holds NaN or inf: never within a tolerance)."""
    with backend.host_module().errstate(invalid="ignore", over="ignore"):
        worst = float(abs(a - b).max(initial=0))
        scale = max(float(abs(a).max(initial=0)), float(abs(b).max(initial=0)))
        return worst / scale if worst else 0.0


def compare(analytic, numeric, tol=TOLERANCE, atol=ATOL):
    """(max abs error, normwise relative error, ok) of one gradient against its reference."""
    with backend.host_module().errstate(invalid="ignore", over="ignore"):
        max_abs = float(abs(analytic - numeric).max(initial=0))
    max_rel = distance(analytic, numeric)
    return max_abs, max_rel, max_rel < tol or max_abs <= atol


def factor_text(c: float) -> str:
    """c as a simple fraction when it is one (1/12, -2, 3/2), else to four digits."""
    f = Fraction(c).limit_denominator(100)
    if f and abs(float(f) - c) <= 1e-7 * abs(c):
        return str(f)
    return f"{c:.4g}"


def diagnose(analytic, numeric, others=None, known=(), alone=None,
             without="the other gradients", elementwise=True) -> Diagnosis:
    """Where and, if one simple story explains it, how `analytic` differs from `numeric`.

    others:  {name: the right gradient of another input} (a swap shows as equal to one)
    known:   [(story, array)]: wrong answers the caller can compute (a missing term)
    alone:   the same gradient computed when nothing else needs one; right alone and
             wrong here means another gradient's lines change in place what this one
             reads (`without` names what was left out, for the story)
    """
    np = backend.host_module()
    a, n = np.asarray(analytic, dtype="float64"), np.asarray(numeric, dtype="float64")
    if a.shape != n.shape:
        return Diagnosis((), shape_story(a.shape, n.shape))
    with np.errstate(invalid="ignore", over="ignore"):
        err = abs(a - n)
    index = ()
    if elementwise and err.size:
        index = tuple(int(k) for k in np.unravel_index(int(err.argmax()), err.shape))
    return Diagnosis(index, _story(np, a, n, others or {}, known, alone, without, elementwise))


def shape_story(got, want) -> str:
    """The story of a gradient of shape `got` for an input of shape `want`, or ""."""
    if len(got) >= 2 and got[:-2] + got[:-3:-1] == tuple(want):
        return "transposed (its last two axes are swapped)"
    if math.prod(got) > math.prod(want):
        return "broadcast axes not summed back"
    return ""


def _story(np, a, n, others, known, alone, without, elementwise) -> str:
    bad = ~np.isfinite(a)
    if bad.any():
        what = " and ".join(name for name, found in (("NaN", np.isnan(a)), ("inf", np.isinf(a)))
                            if found.any())
        return f"it holds {what} at {int(bad.sum())} of {a.size} entries"
    if not abs(a).any():
        return "it is zero everywhere, where it should not be"
    if distance(a, -n) < SAME:
        return "wrong sign"
    if not elementwise:
        return _factor(a, n)
    for story, wrong in known:
        wrong = np.asarray(wrong)
        if wrong.shape == a.shape and distance(a, wrong) < SAME:
            return story
    if alone is not None and compare(np.asarray(alone, dtype="float64"), n)[2]:
        return f"it depends on a value changed in place (right when computed without {without})"
    for name, right in others.items():
        right = np.asarray(right)
        if right.shape == a.shape and abs(right).any() and distance(a, right) < SAME:
            return f"swapped with {name}: it holds the right {name}"
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and distance(a.swapaxes(-1, -2), n) < SAME:
        return "transposed (its last two axes are swapped)"
    story = _factor(a, n)
    if story:
        return story
    zero = (a == 0) & (abs(n) > 1e-8 * abs(n).max())
    if zero.any() and distance(a[~zero], n[~zero]) < SAME:
        return f"zero at {int(zero.sum())} of {a.size} entries where it should not be"
    return ""


def _factor(a, n) -> str:
    """The constant-factor story, or "" where the right gradient has fewer than two
    nonzero entries: a multiple of one entry is no story (any error is 'a factor')."""
    n2 = float((n * n).sum())
    if n2 == 0 or int((abs(n) > 1e-8 * abs(n).max()).sum()) < 2:
        return ""
    c = float((a * n).sum()) / n2
    if distance(a, c * n) < SAME:
        return f"off by a constant factor: it is {factor_text(c)} times the right gradient"
    return ""
