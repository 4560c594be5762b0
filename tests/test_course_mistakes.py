"""Wrong backwards that are right on a narrow set of cases lose their points (issue 43).

Each mistake is planted as a student would make it, in one marked region of a copy
of the project, and that exercise graded. Each is right wherever the grader's
old hand-listed cases looked (3x3 kernels, paddings 0 and 1, no leaky_relu in the
conv, only the second operand broadcast, x off every breakpoint, sigmoid inputs in
[-4, 4], inner nets of two hidden layers, u without a zero entry), so each test
passes only because the cases now cover the Function's whole space: a FAIL line
names a case of the kind the mistake gets wrong. Not part of the student copy
(it holds solution lines).
"""
import re

import pytest

from tinyunits.course.grade import grade
from tinyunits.course.source import all_regions

from test_course import ROOT, plant, solved  # noqa: F401 - solved is a fixture
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy


def edited(region_name, old, new):
    """The library's solution of a region with the line starting `old` replaced by `new`."""
    (region,) = [r for r in all_regions(ROOT) if r.name == region_name]
    found = [line[len(region.indent):] for line in region.lines]
    (k,) = [k for k, line in enumerate(found) if line.strip().startswith(old)]
    return found[:k] + new + found[k + 1:]


CONV_M = "M = fn.backward(unpad2d(dA, self.padding))[0]"
UNROLLED = [  # the inner net's backward written out for two hidden layers
    "D = g.reshape(-1, 1)",
    "grads = [D.T @ self.H[2], D.sum(axis=0)]",
    "D = (D @ self.weights[2]) * (self.H[2] > 0)",
    "grads = [D.T @ self.H[1], D.sum(axis=0)] + grads",
    "D = (D @ self.weights[1]) * (self.H[1] > 0)",
    "grads = [D.T @ self.H[0], D.sum(axis=0)] + grads",
    "dX = D @ self.weights[0]",
    "return (self._from_points(dX),) + tuple(grads if self.param_grads else [None] * 6)"]
LEFT_BINS = "_flat_index(_bins(self.x, self.breakpoints)[1], self.shape[1])"

MISTAKES = {  # mistake -> (exercise, the region's new lines, a failing case's label has this)
    "DAC conv: a 3x3 kernel assumed": (
        "dac_conv", lambda: edited("dac_conv", "G = xp.zeros(", [
            "k = 3  # the examples' kernel size",
            "G = xp.zeros((A.shape[0], k * k) + A.shape[2:], dtype=g.dtype)"]),
        r"W \(\d, \d, [12], [12]\)"),
    "DAC conv: a padding of at most 1 unpadded": (
        "dac_conv", lambda: edited("dac_conv", "M = fn.backward(", [
            "M = fn.backward(unpad2d(dA, min(self.padding, 1)))[0]"]),
        r"padding 2"),
    "DAC conv: leaky_relu's slope dropped (a step mask for both kinked activations)": (
        "dac_conv", lambda: edited("dac_conv", "M = fn.backward(", [
            "if self.activation in ('relu', 'leaky_relu'):",
            "    M = unpad2d(dA, self.padding) * (unpad2d(A, self.padding) > 0)",
            "else:",
            f"    {CONV_M}"]),
        r"^leaky_relu, "),
    "div: da cut to a's shape instead of summed (a broadcast first operand)": (
        "engine_div", lambda: ["gb = g / self.b",
                               "ga = gb[tuple(slice(0, n) for n in self.a.shape)]",
                               "return ga, -gb * self.a / self.b"],
        r"(a|both) broadcast"),
    "sigmoid: its derivative clipped 'for stability'": (
        "engine_sigmoid", lambda: ["y = self.y.clip(0.01, 0.99)", "return (g * y * (1 - y),)"],
        r"extreme"),
    "TMAF levels: x on a breakpoint given the left interval's level": (
        "tmaf_levels", lambda: [f"dlevels = _accumulate({LEFT_BINS}, g * self.x, self.shape)"],
        r"some x on a breakpoint"),
    "TMAF tri-diagonal: x = 0 (after a ReLU) given the left interval's off-diagonals": (
        "tmaf_tridiagonal", lambda: [
            f"index = {LEFT_BINS}",
            "dlower = _accumulate(index, g * self.x_prev, self.shape)",
            "dlevels = _accumulate(index, g * self.x, self.shape)",
            "dupper = _accumulate(index, g * self.x_next, self.shape)"],
        r"breakpoints \(0\.0,\), some x on a breakpoint"),
    "inner net: the backward unrolled for the default two hidden layers": (
        "two_argument_inner", lambda: UNROLLED, r"^hidden \("),
    "Han du: a guard that zeroes du where an entry of u is 0": (
        "hannet_du", lambda: edited("hannet_du", "gu = ", [
            "gu = xp.where(u_hat != 0, (g_u_hat - u_hat * (u_hat @ g_u_hat)) / self.norm, 0.0)"]),
        r"u with an entry 0"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_right_only_on_the_old_cases_loses_its_points(solved, tmp_path, mistake):
    name, new_lines, kind = MISTAKES[mistake]
    result = grade(plant(solved, tmp_path, name, *new_lines()), [name])[1][0]
    assert result.score < result.max_score, result.output
    # a float64 case must catch it: float32 verdicts are judged at a looser tolerance
    failed = [line[len("FAIL  "):] for line in result.output.splitlines()
              if line.startswith("FAIL") and "float32" not in line]
    assert any(re.search(kind, line) for line in failed), \
        f"no failing case matches {kind!r}:\n{result.output}"
