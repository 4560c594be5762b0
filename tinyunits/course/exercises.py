"""The exercises: one per hand-written backward (or one gradient inside one).

Each is a region of the library's own source between `# BEGIN SOLUTION <name>`
and `# END SOLUTION <name>`; the student copy replaces it by a stub. Everything a
course page needs is here: name, points, hint, the equation it comes from (with
the paper page that explains it) and the lesson that works through it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    name: str
    points: int
    source: str      # the file that holds the marked region
    equation: str    # what to implement, as the paper (or the engine lesson) numbers it
    paper: str       # docs/papers/<unit>.md, or "" for the engine
    lesson: str
    hint: str
    gradients: tuple  # the input gradients the grader checks, by name

    @property
    def reference(self) -> str:
        """The equation and where to read about it, in one line (stubs and feedback)."""
        where = f", {self.paper}" if self.paper else ""
        return f"{self.equation}{where}; explained in {self.lesson}"


ENGINE = "lessons/00_engine.py"
DAC, TWO_ARGUMENT, TMAF = "lessons/01_dac.py", "lessons/02_two_argument.py", "lessons/03_tmaf.py"
HANNET, FOCUSING = "lessons/04_hannet.py", "lessons/05_focusing.py"

EXERCISES = (
    Exercise("engine_mul", 1, "tinyunits/ops/arithmetic.py", "y = a * b (broadcasting)",
             "", ENGINE, "Differentiate one element a * b by each factor in turn; return the "
             "gradients in the output's broadcast shape, the engine sums them down.",
             ("da", "db")),
    Exercise("engine_div", 1, "tinyunits/ops/arithmetic.py", "y = a / b (broadcasting)", "", ENGINE,
             "Write a / b as a times b to the power -1: da is the easy one.", ("da", "db")),
    Exercise("engine_sigmoid", 1, "tinyunits/ops/elementwise.py",
             "y = sigmoid(x) = 1 / (1 + exp(-x))", "", ENGINE,
             "sigmoid'(x) can be written with y = sigmoid(x) alone.", ("dx",)),
    Exercise("engine_sum_to", 2, "tinyunits/tensor.py",
             "sum_to(g, shape): undo broadcasting", "", ENGINE,
             "Sum over the leading axes broadcasting added, and (keeping them) over "
             "the axes where shape has size 1 but g does not.", ("da",)),
    Exercise("engine_matmul", 2, "tinyunits/ops/matmul.py", "Y = A @ B, batched over leading axes",
             "", ENGINE, "Check the shapes: dA has A's shape, dB has B's; swap the last "
             "two axes, leading (batch) axes broadcast.", ("da", "db")),
    Exercise("engine_softmax_ce", 2, "tinyunits/ops/loss.py",
             "L = mean_n [logsumexp(z_n) - z_n[y_n]]", "", ENGINE,
             "The gradient of logsumexp is softmax; the picked logit and the mean over "
             "the N rows add the rest.", ("dz",)),
    Exercise("dac_dW", 2, "tinyunits/units/dac.py", "DAC eq. (7), dW", "docs/papers/dac.md",
             DAC, "y is linear in W: each W[i,j] multiplies one activation per batch row; "
             "weight each by its output's g and sum over the batch.",
             ("dW",)),
    Exercise("dac_dB", 2, "tinyunits/units/dac.py", "DAC eq. (7), dB", "docs/papers/dac.md",
             DAC, "B[i,j] sits inside phi, which W[i,j] multiplies: the chain rule gives "
             "both factors.", ("dB",)),
    Exercise("dac_dx", 3, "tinyunits/units/dac.py", "DAC eq. (7), dx", "docs/papers/dac.md",
             DAC, "x[b,j] reaches every output i through its own phi(B[i,j] + x[b,j]): "
             "each term of the sum over i has its own mask, not one shared mask.", ("dx",)),
    Exercise("dac_conv", 4, "tinyunits/units/dac.py",
             "DAC conv eq. (5) and its backward (dW, dA, dB, dx)", "docs/papers/dac.md", DAC,
             "Place g once per kernel tap, then dW and dA are two matrix products; "
             "drop dA's padding, then multiply by phi'.", ("dx", "dW", "dB")),
    Exercise("two_argument_inner", 3, "tinyunits/units/two_argument.py",
             "inner-net backward through the shared f, eqs. (6)-(9) (ours: the paper "
             "writes none)", "docs/papers/two_argument.md", TWO_ARGUMENT,
             "Walk the layers backwards: a layer's error comes from the next one's through "
             "its weights, masked where its ReLU was off; f is shared, so its weight "
             "gradients sum over every point of every unit.",
             ("dx", "dW0", "db0", "dW1", "db1", "dW2", "db2")),
    Exercise("tmaf_levels", 2, "tinyunits/units/tmaf.py", "TMAF eq. (B2): d levels (diagonal)",
             "docs/papers/tmaf.md", TMAF, "Each level t[i, k] is used only by the elements whose "
             "value fell in interval k, each time as a factor of that element's value.",
             ("dlevels",)),
    Exercise("tmaf_tridiagonal", 3, "tinyunits/units/tmaf.py",
             "TMAF eq. (B4): d lower, d levels, d upper (tri-diagonal)", "docs/papers/tmaf.md",
             TMAF, "As eq. (B2), with x_{i-1} for lower and x_{i+1} for upper; the bin is always "
             "that of x_i.", ("dlower", "dlevels", "dupper")),
    Exercise("hannet_du", 4, "tinyunits/units/hannet.py",
             "Han-layer eq. (6), Algorithm 1: du through u_hat = u / ||u||",
             "docs/papers/hannet.md", HANNET, "z depends on u_hat through s u_hat; then project "
             "out the u_hat direction and divide by ||u|| for the normalisation.", ("du",)),
    Exercise("hannet_dx", 2, "tinyunits/units/hannet.py", "Han-layer eq. (6), Algorithm 1: dx",
             "docs/papers/hannet.md", HANNET, "H(u) is symmetric, so dx is H applied to the "
             "gradient that reaches z: one dot product, never the d x d matrix.", ("dx",)),
    Exercise("focusing_dmu", 3, "tinyunits/units/focusing.py",
             "focusing neuron eq. (8), dmu, with the normaliser of eq. (7)",
             "docs/papers/focusing.md", FOCUSING, "u divides phi by its norm, and the norm "
             "depends on mu too: the gradient has a second term, from the normaliser, "
             "beside the one through phi.",
             ("dmu",)),
    Exercise("focusing_dsigma", 3, "tinyunits/units/focusing.py",
             "focusing neuron eq. (8), dsigma, with the normaliser of eq. (7)",
             "docs/papers/focusing.md", FOCUSING, "As dmu, with d^2 / sigma^3 in place of "
             "d / sigma^2, the normaliser term included.", ("dsigma",)),
)

BY_NAME = {e.name: e for e in EXERCISES}
TOTAL_POINTS = sum(e.points for e in EXERCISES)

# Old names, from before each unit had one name in every folder: a teacher's hidden
# cases and command lines may still use them.
RENAMED = {"multiarg_inner": "two_argument_inner", "han_du": "hannet_du", "han_dx": "hannet_dx",
           "focus_dmu": "focusing_dmu", "focus_dsigma": "focusing_dsigma"}


def current_name(name: str) -> str:
    """The exercise's name now: a renamed one's new name (with a deprecation warning),
    any other name unchanged (an unknown one is the caller's to refuse)."""
    if name in RENAMED:
        # FutureWarning, not DeprecationWarning: it is meant for the teacher at the
        # command line, and Python shows only the former by default
        warnings.warn(f"exercise {name!r} is deprecated: it is now called {RENAMED[name]!r}",
                      FutureWarning, stacklevel=2)
        return RENAMED[name]
    return name
