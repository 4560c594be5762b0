"""Lesson 2's closing rows (lessons/closing/__init__.py says what each function does)."""
import math

import numpy as np

from _lesson import bookkeeping, held_whole
from lessons import verdicts
from lessons.trials import two_argument as trials
from lessons.trials.two_argument import NAMES
from lessons.verdicts import Evidence

SETTLE_BY = 5  # Figure 5: f matures "within 1-5 epoch in general"
# f has settled once its correlation with the kept f is above verdicts.SETTLED; a run must
# last this many times SETTLE_BY epochs for its kept f to tell settled from merely last.
LONG_RUN = 2
COIN = 0.05  # a count of negative curvatures refutes "a minority" where a fair coin's is rarer


def evidence(runs):
    """The runs the sessions' claims read (session I's fit, the learning curves, f's settling
    and shape): the store's --full runs when it holds every run of every model from the
    current code, else this run's. runs: {n_args: this run's session_trial results}.
    -> ({n_args: results}, "store" or "this run")."""
    held = held_whole(trials, "two_argument-sessions", lambda s: s["n_args"], lambda r: r)
    return verdicts.evidence(held if len(held) == len(NAMES) else None, runs)


def sessions(results, compared, source, mode):
    """Print the store's session III accuracies and session I fits in one line; then the
    verdict that session I fits the random map (the mean R^2 above FIT_R2). compared,
    source: what evidence() returned; mode: this run's (for the pretraining epochs a
    reason cites)."""
    _store_line("two_argument-sessions", compared if source == "store" else None,
                {"session III test accuracy %": (lambda r: 100 * r["test3"], "{:.2f}"),
                 "session I R^2": (lambda r: r.get("r2"), "{:.3f}")})
    r2s = [r["r2"] for r in compared[2]]
    r2 = float(np.mean(r2s))
    epochs = trials.SIZES["full" if source == "store" else mode]["pre_epochs"]
    results.add("session I fits the map (R^2)", f"{r2:.3f}", r2 > verdicts.FIT_R2,
                rule=f"mean R^2 above {verdicts.FIT_R2:g}",
                evidence=Evidence.of(r2s, f"{source}, {epochs} pretraining epochs"),
                measured=f"mean R^2 {r2:.3f} after {epochs} pretraining epochs")


def _store_line(sweep, held, quantities):
    """One line of what the store holds of a sweep: per quantity, each model's mean +- SD
    over its --full runs. held: {n_args: results} when the store holds them all, else
    None; quantities: {name: (result -> value or None for a model without it, format)}."""
    with bookkeeping("store"):
        if held is None:
            print(f"Paper-scale rows of {sweep!r}: the store does not hold them all from the "
                  f"current code (`python -m lessons.trials two_argument` runs them)")
            return
        parts = []
        for name, (of, fmt) in quantities.items():
            values = {n: [of(r) for r in held[n]] for n in NAMES}
            parts.append(f"{name} " + ", ".join(
                f"{NAMES[n]} {fmt.format(np.mean(v))} +- {fmt.format(np.std(v, ddof=1))}"
                for n, v in values.items() if None not in v))
        print(f"Paper-scale rows of {sweep!r} (--full, {len(held[2])} runs each, mean +- SD): "
              + "; ".join(parts))


def described(runs, source) -> str:
    """Which runs a figure draws, for its title."""
    epochs = max(len(r["curve2"]) for rs in runs.values() for r in rs)
    return f"{source}: {len(runs[2])} run(s) per model, up to {epochs} epochs"


def mean_curves(runs):
    """Figure 4d's curves: {"II", "III": {name: (mean, SD) of validation accuracy %, per
    epoch}}, each model's cut to its shortest run (early stopping ends runs apart).
    runs: {n_args: session_trial results}, of the models to draw."""
    out = {}
    for session, key in (("II", "curve2"), ("III", "curve3")):
        out[session] = {}
        for n_args, rs in runs.items():
            a = _cut([r[key] for r in rs]) * 100
            out[session][NAMES[n_args]] = a.mean(axis=0), a.std(axis=0)
    return out


def learning_curves(results, runs, source, n_val):
    """Figure 4d: the 2-arg nets' mean validation curve above ReLU's in every epoch, each
    epoch's gap against its noise. runs, source: what evidence() returned; n_val: the
    validation images (one run's noise is that of two accuracies on them)."""
    for session, key in (("II", "curve2"), ("III", "curve3")):
        two, relu = (_cut([r[key] for r in runs[n]]) for n in (2, 0))
        both = min(two.shape[1], relu.shape[1])  # early stopping can end them at different epochs
        two, relu = two[:, :both], relu[:, :both]
        gaps = 100 * (two.mean(axis=0) - relu.mean(axis=0))
        ses = [verdicts.accuracy_difference_se(100 * a, 100 * b, n_val)
               for a, b in zip(two.T, relu.T)]
        ahead = int((gaps > 0).sum())
        beyond = sum(g > verdicts.NOISE_SE * s for g, s in zip(gaps, ses))
        results.add(f"2-arg above ReLU, session {session}",
                    f"{ahead} of {both} epochs",
                    verdicts.above_throughout(gaps, ses),
                    rule=f"per epoch, the mean curves' gap 2-arg - ReLU in standard errors "
                         f"(se): NO if one is below -{verdicts.NOISE_SE:g}, yes if none is and "
                         f"most are above +{verdicts.NOISE_SE:g}, else unclear",
                    evidence=Evidence(len(two), float(gaps.mean()),
                                      f"{source}; per-epoch gap in points, {gaps.min():+.2f} to "
                                      f"{gaps.max():+.2f}, {beyond} above +{verdicts.NOISE_SE:g} se",
                                      se=float(np.mean(ses))),
                    measured=f"gaps from {gaps.min():+.2f} to {gaps.max():+.2f} points, "
                             f"{beyond} of {both} beyond {verdicts.NOISE_SE:g} se")


def similarity_to_kept(run):
    """Figure 5: the correlation of f on trials.WATCH before session II and after each of its
    epochs with the f the run kept (the best epoch's, which session III froze)."""
    kept = trials.evaluate_f(trials.inner_net(run["inner"]), trials.WATCH).ravel()
    return [float(np.corrcoef(frame.ravel(), kept)[0, 1]) for frame in run["frames"]]


def settled(results, similarities, source):
    """Figure 5: f takes its final shape within SETTLE_BY epochs of session II.
    similarities: per run, similarity_to_kept(); source: whose runs they are."""
    first = [settling_epoch(c) for c in similarities]
    epochs = min(len(c) - 1 for c in similarities)
    within = sum(e is not None and e <= SETTLE_BY for e in first)
    results.add(f"f settled within {SETTLE_BY} epochs (Fig. 5)", f"{within} of {len(first)} runs",
                settles(first, epochs),
                rule=f"settled: correlation with the kept f above {verdicts.SETTLED:g}; yes if "
                     f"all runs settle by epoch {SETTLE_BY}, partly if most, else NO; unclear "
                     f"in runs < {LONG_RUN * SETTLE_BY} epochs",
                evidence=Evidence.of([c[1] for c in similarities],
                                     f"{source}; correlation after epoch 1, {epochs}+ epochs"),
                measured=f"settled at epochs {first}, runs of {epochs}+ epochs")


def settling_epoch(similarity):
    """The first epoch whose f correlates with the kept f above SETTLED (None: none does)."""
    return next((e for e, c in enumerate(similarity) if c > verdicts.SETTLED), None)


def settles(first, epochs) -> str:
    """The verdict of settled(): first, each run's settling_epoch(); epochs, the runs' length."""
    if epochs < LONG_RUN * SETTLE_BY:
        return "unclear"
    within = sum(e is not None and e <= SETTLE_BY for e in first)
    return "yes" if within == len(first) else "partly" if verdicts.most(within, len(first)) else "NO"


def curvatures(results, kappas, source):
    """Figure 7g, MLP: the paper finds a minority of the learned f curve negatively."""
    negative = sum(k < 0 for k in kappas)
    results.add("negative (XOR) curvature, MLP", f"{negative} of {len(kappas)}",
                minority(negative, len(kappas)),
                rule=f"yes if under half curve negatively; NO if a fair coin gives as many "
                     f"at p < {COIN:g}; else unclear",
                evidence=Evidence.of(kappas, f"{source}; curvature"),
                measured=f"{sum(k < 0 for k in kappas)} of {len(kappas)} negative")


def minority(negative, n) -> str:
    """The verdict of curvatures(): negative of n runs curve negatively."""
    if negative < n / 2:
        return "yes"
    tail = sum(math.comb(n, k) for k in range(negative, n + 1)) / 2 ** n  # P(>= negative)
    return "NO" if tail < COIN else "unclear"


def _cut(curves):
    """Runs' curves as one array (runs, epochs), cut to the shortest (early stopping)."""
    return np.array([c[:min(map(len, curves))] for c in curves])


def _training(robust) -> str:
    """How runs with the ROBUST settings `robust` (None: clean) trained session III."""
    if not robust:
        return "trained on clean images only"
    return ("adversarially trained (PGD-{robust_steps} at eps {robust_eps}, {robust_epochs} "
            "epochs)".format(**robust))


def robust_increment(results, attacked, robust, n_images):
    """Table 1: the 2-arg nets keep more accuracy under attack than ReLU's. attacked:
    {n_args: this run's session_trial results of the attacked models}, each with its
    accuracy under PGD per trials.EPSILONS, on n_images test images; robust: this run's
    ROBUST settings (None: its session III trained on clean images)."""
    stored_runs = _training(trials.ROBUST["full"])
    held = held_whole(trials, "two_argument-robust", lambda s: s["n_args"], lambda r: r)
    held = held if len(held) == len(NAMES) else None
    _store_line("two_argument-robust", held,  # both radii (the paper has numbers at 0.3 only)
                {f"PGD accuracy % at eps {eps}": ((lambda r, i=i: 100 * r["pgd"][i]), "{:.2f}")
                 for i, eps in enumerate(trials.EPSILONS)})
    at = trials.EPSILONS.index(0.3)
    runs, source = verdicts.evidence(held, attacked)
    compared = stored_runs if source == "store" else _training(robust)
    two_arg, relu = ([100 * r["pgd"][at] for r in runs[n]] for n in (2, 0))
    increment = float(np.mean(two_arg) - np.mean(relu))
    se = verdicts.accuracy_difference_se(two_arg, relu, n_images)
    results.add("robust gain 2-arg - ReLU, eps 0.3", f"{increment:+.2f}",
                verdicts.gain(increment, trials.PAPER_ROBUST_INCREMENT, se),
                rule=f"yes if the gain is above {verdicts.NOISE_SE:g} se and half the paper's, "
                     f"partly if above {verdicts.NOISE_SE:g} se only; else NO if the paper's is "
                     f"{verdicts.NOISE_SE:g} se above, else unclear",
                evidence=Evidence(len(relu), increment, f"{source}, {compared}", se=se),
                measured=f"2-arg {np.mean(two_arg):.2f} %, ReLU {np.mean(relu):.2f} %: "
                         + (f"{increment / se:+.1f} se" if se else "no spread (se 0)"))
