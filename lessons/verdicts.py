"""The rules behind the lessons' verdicts: pure functions of the numbers a lesson prints.

A verdict in a lesson's closing table is "yes", "partly", "NO", "unclear" (or True /
False, printed as yes / NO). Each rule here has its thresholds as named constants, and the
lesson's prose states each one where the rule is used, so that a reader can redo the
verdict from the printed numbers. tests/test_verdicts.py checks every rule on fixed
inputs. Where a lesson prints both its own quick run and the store's paper-scale rows
(lessons/results/sweeps.sqlite), the verdict reads the store's rows: evidence() picks.
"""
import math
import numbers
from dataclasses import dataclass

MOST = 0.5  # "most" of a count: more than this share of it
# A difference (a gain, a gap, a log-MSE) counts only where it is larger than its noise
# (lessons 1, 2, 3 and 5): more than this many standard errors.
NOISE_SE = 2.0


def most(k, n) -> bool:
    """Whether k of n is "most" (more than MOST of n; never of nothing)."""
    return n > 0 and k > MOST * n


def evidence(stored, quick):
    """The best evidence a lesson prints for a verdict: the store's paper-scale value
    when it holds every one of its rows from the current code (stored is not None),
    else this run's. -> (value, "store" or "this run")."""
    return (stored, "store") if stored is not None else (quick, "this run")


@dataclass(frozen=True)
class Evidence:
    """What a verdict read, as its one line prints it: n values, their mean, the spread
    (std over the n) and/or the standard error its rule uses, and their source ("store" or
    "this run", with any detail: "store, 5 seeds"). Evidence.of(values, source) measures
    all of them from the values; a rule that counts against another standard error (of a
    difference, of a proportion) gives its own: Evidence(n, gap, source, se=se)."""
    n: int
    mean: float
    source: str
    se: float = None
    spread: float = None
    fmt: str = "{:.3g}"

    def __post_init__(self):
        if not isinstance(self.n, numbers.Integral) or self.n < 1 or self.mean is None \
                or not self.source:
            raise ValueError(f"Evidence: needs n (a count >= 1), a mean and a source, got "
                             f"n={self.n!r}, mean={self.mean!r}, source={self.source!r}")

    @classmethod
    def of(cls, values, source: str, fmt: str = "{:.3g}") -> "Evidence":
        """n, mean, std (n - 1) and standard error of the mean (std / sqrt(n)) of values;
        one value has neither spread nor standard error (None, not 0)."""
        values = [float(v) for v in values]
        n = len(values)
        if n == 0:
            raise ValueError(f"Evidence.of: no values to measure (source {source!r})")
        mean = sum(values) / n
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
        return cls(n, mean, source, std / math.sqrt(n) if n > 1 else None, std, fmt)

    def __str__(self):
        f = self.fmt.format
        parts = [f"n={self.n}", f"mean {f(self.mean)}"]
        parts += [f"std {f(self.spread)}"] if self.spread is not None else []
        parts += [f"se {f(self.se)}"] if self.se is not None else []
        if self.spread is None and self.se is None:
            parts.append("no spread" + (" (one run)" if self.n == 1 else ""))
        return ", ".join(parts) + f"; {self.source}"


def counts(groups, labels):
    """(successes of each label..., runs per label) from the store's groups of 0/1 outcomes
    ({label: values}, as _lesson.stored returns them) when they hold every label with
    as many runs each; else None (the verdict then reads this run's counts)."""
    if any(label not in groups for label in labels):
        return None
    runs = {len(groups[label]) for label in labels}
    return (*(int(sum(groups[label])) for label in labels), runs.pop()) if len(runs) == 1 else None


# Lesson 1, Theorem C.1: a trained fit of a PL_k is "exact" below this error (MSE divided by
# the MSE of the best straight line).
EXACT_FIT = 1e-3


# Lesson 1, Figures 3 and 4: test MSEs are compared on the log scale the paper plots, as the
# mean log-MSE over seeds (one seed: its log-MSE).
def mean_log(values) -> float:
    return sum(math.log(v) for v in values) / len(values)


def doubling_gains(mse, w) -> tuple:
    """Figures 3 and 4 at baseline width w. mse: {(w, net): test MSEs over seeds}, net one of
    lesson 1's "base w", "DAC w/sqrt2", "base w*sqrt2", "DAC w". -> (the DAC twin at the
    same parameters, doubling by biases, doubling by weights): each one's mean log-MSE minus
    the baseline's, in nats (below 0: lower MSE than the baseline)."""
    base = mean_log(mse[w, "base w"])
    return tuple(mean_log(mse[w, net]) - base for net in ("DAC w/sqrt2", "DAC w", "base w*sqrt2"))


def log_se(a, b):
    """The standard error of mean_log(a) - mean_log(b) over seeds; None with fewer than 2
    seeds of either (one seed has no spread to measure)."""
    if min(len(a), len(b)) < 2:
        return None
    return mean_difference_se([math.log(v) for v in a], [math.log(v) for v in b])


LOWER_RULE = (f"yes if more than {NOISE_SE:g} standard errors over seeds below 0, NO if as far "
              "above, else (or from one seed) unclear")


def lower(difference, se) -> str:
    """A difference the paper reports only as lower (below 0): "yes" below -NOISE_SE
    standard errors, NO above +NOISE_SE of them, "unclear" between, or with no se."""
    if se is None or abs(difference) <= NOISE_SE * se:
        return "unclear"
    return "yes" if difference < 0 else "NO"


def above_throughout(gaps, ses) -> str:
    """Figure 4d's "above in every epoch", each epoch's gap (points) against its standard
    error: NO if some epoch lies more than NOISE_SE standard errors below 0, "yes" if none
    does and most lie as far above it, else "unclear"."""
    if any(g < -NOISE_SE * s for g, s in zip(gaps, ses)):
        return "NO"
    return "yes" if most(sum(g > NOISE_SE * s for g, s in zip(gaps, ses)), len(gaps)) \
        else "unclear"


# Lesson 2: session I fits the random map, and f takes its shape early (Figure 5).
FIT_R2 = 0.9  # a session I fit "fits" the map above this R^2
SETTLED = 0.9  # f has "settled" when its correlation with the final f is above this


# Lesson 4: the landscapes (Fig. 1), V3 (Fig. 2), C and G (Fig. 6), Prop. 1 and 3, Table 8,
# D.3 and the Han-Mixer (Table 2).
COLLAPSED = 1e-3  # a landscape whose range is below this share of its max is constant
ALIVE = 1e-2  # one whose range is above this share still has peaks and valleys
RELU_PEAK = (9, 24)  # depths around the paper's L ~ 16 where ReLU's V3 may peak
C_BELOW_G = 0.1  # "C ~ 100x smaller than G": the median C / G below this
ABS_OVER_RELU = 1000  # "> 1000x": ABS's C over ReLU's
ROUNDING = 1e-8  # float64 rounding: an exact identity holds within this
WITHIN_SE = 4  # a simulation agrees with a probability within this many standard errors
AR_FACTOR = 10  # "34-42 % vs 0.6-2.3 %": the HanNet's AR at least this multiple
FLIP_MARGIN = 0.05  # D.3: the HanNet above the FCNet by more than this (95.2 vs 86.5 %)
SIMILAR_ACC = 0.005  # "similar": an accuracy at most this below the other's


# Lesson 4, Figure 4: the checkerboard's test accuracies.
HANNET_REACHES = 0.97  # the HanNet reproduces the paper's 99.5 % at this accuracy or above
FCNET_BAND = 0.04  # the FCNet reproduces the paper's 85.2 % within this of it
BOARD_RULE = {"hannet": f"test accuracy >= {HANNET_REACHES:.0%}",
              "fcnet": f"test accuracy within {100 * FCNET_BAND:g} points of 85.2 %"}


def reaches_paper(net, accuracy) -> bool:
    """Figure 4's claim for `net` ("hannet" or "fcnet") at a test accuracy (a fraction)."""
    return accuracy >= HANNET_REACHES if net == "hannet" else abs(accuracy - 0.852) < FCNET_BAND


# Lesson 5, section 2: a focus "learned" the informative inputs if it *moved* onto them.
def moved_onto(start, end, lo, hi) -> tuple:
    """Of the foci whose centre started outside [lo, hi], how many ended inside it.
    start, end: each focus's mu before and after training. -> (moved, started outside)."""
    outside = [not lo <= mu <= hi for mu in start]
    moved = sum(off and lo <= mu <= hi for off, mu in zip(outside, end))
    return moved, sum(outside)


# Lesson 5, section 3: "similar" accuracies of the focused and the dense net.
SIMILAR_PTS = 2.0  # |mean focus - dense| in points below which the two are "similar"


def similar(gap_pts) -> bool:
    return abs(gap_pts) < SIMILAR_PTS


def better(gaps_pts) -> bool:
    """Paired gaps (one per draw) whose mean lies above NOISE_SE standard errors of the
    mean (their std / sqrt(n)): better beyond the draws' own spread."""
    n = len(gaps_pts)
    if n < 2:
        return False  # one draw has no spread to measure against
    mean = sum(gaps_pts) / n
    std = math.sqrt(sum((g - mean) ** 2 for g in gaps_pts) / (n - 1))
    return mean > NOISE_SE * std / math.sqrt(n)


# Lesson 5, section 5: how far out-of-focus weights can be pruned.
SPARSITY_BAND = 0.5  # points of test accuracy the pruned net may lose against the unpruned
SPARSITY_CLAIM = 70.0  # % sparsity the paper keeps within that band (MNIST, Fig. 9b)


def sparsity_kept(curve, floor) -> float:
    """The largest sparsity (as a fraction) below which the pruned net's accuracy never
    falls under `floor`: walk curve, [(sparsity, accuracy %)] in the order of rising
    thresholds, and stop before the first point under floor. 0.0 if the unpruned
    net (the first point) is under it already."""
    kept = 0.0
    for sparsity, acc in curve:
        if acc < floor:
            break
        kept = sparsity
    return kept


# Lesson 5, section 6: the training step's overhead.
FOCUS_OVERHEAD = 1.3  # focus / dense step time, the top of the paper's 1.15-1.3x (GPU)


# Lesson 3, section 4: Table 3.1, one column per network shape.
def columns_won(k, n) -> str:
    """A claim that holds in every one of n columns: "yes" if it held in all (k = n),
    "partly" in most, else NO."""
    return "yes" if k == n else "partly" if most(k, n) else "NO"


# Lesson 3, section 5: the target sin(2 pi x) + 0.5 sin(20 pi x). A fit of the slow sine
# alone has relative error ||0.5 sin(20 pi x)|| / ||f|| = 0.5 / sqrt(1.25); a fit of the
# slow sine plus c times the fast one has error |1 - c| times that.
SLOW_ONLY = 0.5 / math.sqrt(1.25)  # 0.447
FAST_FIT = 0.05  # an error below this follows the fast sine (the paper's TMAFs: 0.033, 0.029)


def misses_fast_part(error) -> str:
    """The paper's claim about ReLU and PReLU: they miss the fast sine. "yes" at an
    error of SLOW_ONLY or more (no better than the slow sine alone), "partly" at
    SLOW_ONLY / 2 or more (at most half of the fast sine's amplitude followed), else NO."""
    return "yes" if error >= SLOW_ONLY else "partly" if error >= SLOW_ONLY / 2 else "NO"


def fits_fast_part(error, relu_error) -> str:
    """The paper's claim about the TMAFs: they fit the fast sine. "yes" below FAST_FIT,
    "partly" if only below ReLU's error, else NO."""
    return "yes" if error < FAST_FIT else "partly" if error < relu_error else "NO"


# The standard errors a difference is counted against (NOISE_SE of them), and the rule for
# a gain the paper reports as a number (lessons 1, 2, 3 and 5).
def difference_se(acc_a, acc_b, n) -> float:
    """The standard error, in points, of the difference of two accuracies (fractions)
    measured on the same n test images, each as a binomial proportion."""
    return 100 * math.sqrt((acc_a * (1 - acc_a) + acc_b * (1 - acc_b)) / n)


def mean_difference_se(a, b) -> float:
    """The standard error of mean(a) - mean(b), two independent samples (at least 2
    values each), from their spreads over seeds."""
    def variance_of_mean(values):
        mean = sum(values) / len(values)
        return sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values)
    return math.sqrt(variance_of_mean(a) + variance_of_mean(b))


def accuracy_difference_se(a, b, n) -> float:
    """The standard error, in points, of mean(a) - mean(b), accuracies in % per run: over the
    runs' spread when each has 2 or more, else that of two accuracies on the n images a run
    is scored on."""
    if min(len(a), len(b)) > 1:
        return mean_difference_se(a, b)
    return difference_se(sum(a) / len(a) / 100, sum(b) / len(b) / 100, n)


GAIN_RULE = ("yes if it counts and reaches half the paper's, partly if it counts; if it does "
             f"not, NO where the paper's is more than {NOISE_SE:g} standard errors above ours, "
             "else unclear")


def gain(ours, paper, se) -> str:
    """A gain (points) the paper reports as `paper`, ours with standard error se. Ours
    counts above NOISE_SE standard errors: "yes" if it does and reaches half the paper's,
    "partly" if it does but is smaller. One that does not count is NO only where the
    paper's gain lies more than NOISE_SE standard errors above it; else "unclear": a gain
    of the paper's size would not count either, so our runs tell neither apart from 0."""
    if ours > NOISE_SE * se:
        return "yes" if ours >= paper / 2 else "partly"
    return "NO" if paper - ours > NOISE_SE * se else "unclear"


# Lesson 3, section 7: "comparable" cost.
COMPARABLE = 1.5  # a step cost up to this multiple of ReLU's step is "comparable"


def comparable_cost(lower, direct) -> str:
    """The step-cost ratio to ReLU from a lower bound (CPU time) and a direct (wall)
    measurement: "yes" if both are within COMPARABLE, NO if even the lower bound is
    above, "unclear" if only the lower bound is within (the true cost lies between)."""
    if lower > COMPARABLE:
        return "NO"
    return "yes" if direct <= COMPARABLE else "unclear"
