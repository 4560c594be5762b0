"""Lesson 2's closing rows (lessons/closing/__init__.py says what each function does)."""
import numpy as np

from _lesson import held_whole, stored
from lessons import verdicts
from lessons.trials import two_argument as trials
from lessons.trials.two_argument import NAMES


_R2 = "session I R^2 of the random map"


def session_one(results, runs, data, mode):
    """Session I fits the random map (the mean R^2 above FIT_R2); one table of the store's
    rows gives each model's session III accuracy and, for the models with an inner net, that
    R^2. runs: {n_args: this run's session_trial results}; mode: this run's (for the
    pretraining epochs a reason cites)."""
    held = stored(trials, "two_argument-sessions", lambda s: NAMES[s["n_args"]],
                  {"session III test accuracy %": lambda r: 100 * r["test3"],
                   _R2: lambda r: r.get("r2")},  # ReLU has no inner net to pretrain
                  {(NAMES[2], _R2): "fits (Fig. 4b)"}, "{:.3f}",
                  f"session III test accuracy ({data}), and session I's fit")
    here = [r["r2"] for r in runs[2]]
    r2s, source = verdicts.evidence(held.get((NAMES[2], _R2)), here)
    r2 = float(np.mean(r2s))
    epochs = trials.SIZES["full" if source == "store" else mode]["pre_epochs"]
    also = (f"; this run's {np.mean(here):.3f} after {trials.SIZES[mode]['pre_epochs']}"
            if source == "store" else "")
    results.add("session I fit of random map (R^2)", f"{r2:.3f} ({source}, n={len(r2s)})",
                r2 > verdicts.FIT_R2, rule=f"mean R^2 above {verdicts.FIT_R2:g}, over the store's "
                "2-arg runs when it holds all of them, else this run's",
                measured=f"mean R^2 {r2:.3f} over {len(r2s)} runs of {epochs} pretraining epochs "
                         f"({source}){also}")


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


def learning_curves(results, runs, n_val):
    """Figure 4d: the 2-arg nets' mean validation curve above ReLU's in every epoch, each
    epoch's gap against its noise, over the store's runs when it holds every 2-arg and ReLU
    run, else this run's. runs: {n_args: this run's session_trial results}; n_val: the
    validation images (one run's noise is that of two accuracies on them)."""
    held = held_whole(trials, "two_argument-sessions",
                      lambda s: s["n_args"] if s["n_args"] in (2, 0) else None, lambda r: r)
    compared, source = verdicts.evidence(held if len(held) == 2 else None,
                                         {n: runs[n] for n in (2, 0)})
    for session, key in (("II", "curve2"), ("III", "curve3")):
        two, relu = (_cut([r[key] for r in compared[n]]) for n in (2, 0))
        both = min(two.shape[1], relu.shape[1])  # early stopping can end them at different epochs
        two, relu = two[:, :both], relu[:, :both]
        gaps = 100 * (two.mean(axis=0) - relu.mean(axis=0))
        ses = [verdicts.accuracy_difference_se(100 * a, 100 * b, n_val)
               for a, b in zip(two.T, relu.T)]
        ahead = int((gaps > 0).sum())
        beyond = sum(g > verdicts.NOISE_SE * s for g, s in zip(gaps, ses))
        results.add(f"epochs 2-arg above ReLU, session {session}",
                    f"{ahead} of {both}, {beyond} beyond {verdicts.NOISE_SE:g} se ({source})",
                    verdicts.above_throughout(gaps, ses),
                    rule=f"each epoch's gap of the mean validation curves, 2-arg - ReLU, against "
                         f"its standard error: NO if some epoch lies more than "
                         f"{verdicts.NOISE_SE:g} of them below 0, yes if none does and most lie "
                         "as far above, else unclear; over the store's runs when it holds every "
                         f"2-arg and ReLU run, else this run's (read here: {source})",
                    measured=f"the mean curves' gap, 2-arg - ReLU, runs from {gaps.min():+.2f} to "
                             f"{gaps.max():+.2f} points over the {both} epochs, {beyond} of them "
                             f"beyond {verdicts.NOISE_SE:g} standard errors: {len(two)} run(s) of "
                             f"each model ({source})")


def _cut(curves):
    """Runs' curves as one array (runs, epochs), cut to the shortest (early stopping)."""
    return np.array([c[:min(map(len, curves))] for c in curves])


def _training(robust) -> str:
    """How runs with the ROBUST settings `robust` (None: clean) trained session III."""
    if not robust:
        return "trained on clean images only"
    return ("adversarially trained (PGD-{robust_steps} at eps {robust_eps}, {robust_epochs} "
            "epochs)".format(**robust))


def robust_increment(results, accuracy, data, robust, n_images):
    """Table 1: the 2-arg nets keep more accuracy under attack than ReLU's. accuracy:
    {n_args: this run's accuracy under PGD at eps 0.3, per run, on n_images test images};
    robust: this run's ROBUST settings (None: its session III trained on clean images), so
    that the rule says what each source compares."""
    stored_runs = _training(trials.ROBUST["full"])
    # both radii in one table (the paper has numbers at 0.3 only); the rule reads 0.3
    held = stored(trials, "two_argument-robust", lambda s: NAMES[s["n_args"]],
                  {f"eps {eps}": (lambda r, i=i: 100 * r["pgd"][i])
                   for i, eps in enumerate(trials.EPSILONS)},
                  {(name, "eps 0.3"): paper
                   for name, paper in zip(NAMES.values(), ("39.8", "22.9", "26.7"))},
                  "{:.2f}", f"accuracy % under PGD, {stored_runs} ({data})")
    held = {name: values for (name, eps), values in held.items() if eps == "eps 0.3"}
    here = {NAMES[n]: [100 * a for a in accs] for n, accs in accuracy.items()}
    pgd, source = verdicts.evidence(held if len(held) == len(NAMES) else None, here)
    compared = stored_runs if source == "store" else _training(robust)
    two_arg, relu = pgd["2-arg"], pgd["ReLU"]
    increment = float(np.mean(two_arg) - np.mean(relu))
    se = verdicts.accuracy_difference_se(two_arg, relu, n_images)
    results.add("robust increment 2-arg - ReLU (eps .3)", f"{increment:+.2f} ({source})",
                verdicts.gain(increment, trials.PAPER_ROBUST_INCREMENT, se),
                rule=f"the mean accuracy under attack of the 2-arg nets above the ReLU nets' "
                     f"counts above {verdicts.NOISE_SE:g} standard errors of {se:.2f} pts; "
                     f"{verdicts.GAIN_RULE}; the store's runs, {stored_runs}, when it holds them "
                     f"all, else this run's, {_training(robust)} (read here: {source})",
                measured=f"2-arg {np.mean(two_arg):.2f} % and ReLU {np.mean(relu):.2f} % under "
                         f"PGD at eps 0.3 ({source}, {len(relu)} runs each, {compared}): "
                         + (f"{increment / se:+.1f} standard errors of {se:.2f} pts" if se else
                            "no spread to count against (standard error 0)"))
