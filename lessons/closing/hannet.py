"""Lesson 4's closing rows (lessons/closing/__init__.py says what each function does).

Each function adds one row per claim with the evidence its verdict read: n, the mean (or
median) and the spread, and whose runs ("this run" or "store"); its rule, in short (the
lesson's prose says why, the thresholds are lessons/verdicts.py's constants)."""
import numpy as np

from _lesson import STORE
from lessons import verdicts
from lessons.trials import stored_rows
from lessons.trials import hannet as trials


def landscapes(results, flat, rows):
    """Figure 1: the deepest sigmoid and ReLU landscapes collapse, ABS's and the HanNet's do
    not. flat: {(kind, L): range / max of this draw's landscape}; rows: [(kind, depths)]."""
    def over_depth(*kinds):  # what a row's reason cites
        return "; ".join(f"{kind} at L = {', '.join(map(str, depths))}: " + ", ".join(
            f"{flat[kind, L]:.0e}" for L in depths) for kind, depths in rows if kind in kinds)
    deep = {kind: flat[kind, depths[-1]] for kind, depths in rows}
    one = "n=1 draw, no spread; this run"
    flat_ones = sum(deep[kind] < verdicts.COLLAPSED for kind in ("sigmoid", "relu"))
    results.add("Fig. 1: sigmoid L=15, ReLU L=60 flat", f"{deep['sigmoid']:.0e} / {deep['relu']:.0e}",
                ("NO", "partly", "yes")[flat_ones], evidence=one,
                rule=f"range/max < {verdicts.COLLAPSED:g} for both (partly: one)",
                measured=over_depth("sigmoid", "relu"))
    results.add("Fig. 1: ABS, Han L=60 alive", f"{deep['abs']:.0e} / {deep['han']:.0e}",
                min(deep["abs"], deep["han"]) > verdicts.ALIVE, evidence=one,
                rule=f"both range/max > {verdicts.ALIVE:g}", measured=over_depth("abs", "han"))


def v3(results, v3_rows, depths, samples):
    """Figure 2: ReLU's V3 peaks near L ~ 16 and reaches 0, ABS's never does, the HanNet's
    stays high. v3_rows: {kind: [(L, d, V3, collapsed samples)] by depth}."""
    def collapsed(kind):  # what a row's reason cites
        return (f"{kind}: {sum(r[3] for r in v3_rows[kind])} of {samples * len(depths)} samples "
                f"collapsed, V3 from {min(r[2] for r in v3_rows[kind]):.3g} to "
                f"{max(r[2] for r in v3_rows[kind]):.3g}")

    def seen(kind):  # the evidence: samples, and how many collapsed over all depths
        return (f"n={samples} samples x {len(depths)} depths, "
                f"{sum(r[3] for r in v3_rows[kind])} collapsed; this run")
    relu_peak = max(v3_rows["relu"], key=lambda r: r[2])[0]  # the depth of the highest V3
    relu_zero = [r[0] for r in v3_rows["relu"] if r[2] == 0]
    results.add("Fig. 2: ReLU V3 peak, then 0", f"peak L = {relu_peak}, 0 from "
                f"{relu_zero[0] if relu_zero else 'never'}",
                bool(relu_zero) and verdicts.RELU_PEAK[0] <= relu_peak <= verdicts.RELU_PEAK[1],
                rule="V3 = 0 at some L, peak at L in {} .. {}".format(*verdicts.RELU_PEAK),
                evidence=seen("relu"), measured=collapsed("relu"))
    han_min, abs_min = (min(r[2] for r in v3_rows[kind]) for kind in ("han", "abs"))
    abs_zero = [r[0] for r in v3_rows["abs"] if r[2] == 0]
    results.add("Fig. 2: ABS, HanNet V3 never 0", f"least {abs_min:.3g} / {han_min:.3g}",
                not abs_zero and han_min >= abs_min > 0,
                evidence=f"n={samples} samples x {len(depths)} depths each, collapsed: ABS "
                         f"{sum(r[3] for r in v3_rows['abs'])}, HanNet "
                         f"{sum(r[3] for r in v3_rows['han'])}; this run",
                rule="V3 > 0 at every L for both, the HanNet's least >= ABS's",
                measured=f"{collapsed('han')}; {collapsed('abs')}")


def c_and_g(results, ratios, relu_c, abs_c, depth):
    """Figure 6: ReLU's C ~ 100x below its G, ABS's C > 1000x ReLU's, at the last depth.
    ratios: ReLU's C / G of this run's draws, the plotted one first; relu_c, abs_c: the
    plotted draws' ||C||."""
    median = float(np.median(ratios))
    results.add("Fig. 6: ReLU C / G", f"median C / G {median:.0e}",
                median < verdicts.C_BELOW_G, rule=f"median C / G < {verdicts.C_BELOW_G:g}",
                evidence=f"n={len(ratios)} draws, median {median:.0e}, range {min(ratios):.0e}"
                         f" - {max(ratios):.0e}; this run",
                measured=f"C / G from {min(ratios):.0e} to {max(ratios):.0e}")
    results.add("Fig. 6: ABS C / ReLU C", f"{abs_c / relu_c:.0e}",
                abs_c / relu_c > verdicts.ABS_OVER_RELU,
                rule=f"ABS's ||C|| > {verdicts.ABS_OVER_RELU:g}x ReLU's",
                evidence="n=1 draw of each net, no spread; this run",
                measured=f"||C|| at L = {depth}: ABS {abs_c:.1e}, ReLU {relu_c:.1e}")


def _best_of_lrs(rows):
    """{(net, seed): the best test accuracy over the learning rates} of (settings, result)."""
    best = {}
    for s, r in rows:
        key = s["net"], s["seed"]
        best[key] = max(best.get(key, 0.0), r["test_acc"])
    return best


def board(results, han_run, fc_run, swept):
    """Figure 4: the HanNet reaches the paper's 99.5 %, the FCNet its 85.2 %. The verdict
    reads the store's seeds (each seed's best over the learning rates, the median over the
    seeds) when it holds every trial of the sweep from the current code, else this run's
    one run per net (and says so). swept: what paper_sweep returned (--full: (settings,
    results)), else None (the store's rows)."""
    wanted = trials.paper_trials()
    rows = (list(zip(*swept)) if swept else
            [(row["settings"], row["result"])
             for row in stored_rows(trials.SWEEP, STORE, trials.TRIAL, wanted)["current"]])
    whole = len(rows) == len(wanted) and all(r is not None for _, r in rows)
    best = _best_of_lrs(rows) if whole else {}
    for name, net, run in (("HanNet", "hannet", han_run), ("FCNet", "fcnet", fc_run)):
        accs = [a for (n, _), a in best.items() if n == net]
        if accs:
            median = float(np.median(accs))
            results.add(f"Fig. 4: {name} test accuracy", f"median {median:.1%}",
                        verdicts.reaches_paper(net, median),
                        rule="median of the seeds' best: " + verdicts.BOARD_RULE[net],
                        evidence=f"n={len(accs)} seeds, median {median:.1%}, mean "
                                 f"{np.mean(accs):.1%}, range {min(accs):.1%} - "
                                 f"{max(accs):.1%}; store", measured=f"range {min(accs):.1%} - "
                                 f"{max(accs):.1%} over {len(accs)} seeds")
        else:
            results.add(f"Fig. 4: {name} test accuracy", f"{run['test_acc']:.1%} (lr {run['lr']})",
                        verdicts.reaches_paper(net, run["test_acc"]),
                        rule="one run: " + verdicts.BOARD_RULE[net],
                        evidence=f"n=1 run, seed 0, no spread; this run (the store holds "
                                 f"{len(rows)} of the sweep's {len(wanted)} trials)",
                        measured="one seed-0 run; seeds move the accuracy (--full's store)")


def ablation(results, accuracy, width, steps):
    """Table 7: H+ABS above H+ReLU and FC+ABS. accuracy: {variant: this run's test accuracy}."""
    ours = " / ".join(f"{accuracy[k]:.1%}" for k in ("H+ABS", "H+ReLU", "FC+ABS"))
    others = max(accuracy["H+ReLU"], accuracy["FC+ABS"])
    results.add("Tab. 7: H+ABS/H+ReLU/FC+ABS", ours, accuracy["H+ABS"] > others,
                rule="H+ABS above both others",
                evidence=f"n=1 run each (seed 0, width {width}, "
                f"{steps} steps), no spread; this run",
                measured=f"H+ABS {100 * (accuracy['H+ABS'] - others):+.1f} points over the better "
                         "other")


def mixers(results, rows, n_test, mlp, han, both):
    """Table 2: Han-Mixer blocks vs an MLP-Mixer block. rows: {model: (parameters, test
    accuracy)}, "stem only" among them; mlp, han, both: the names of the three mixers."""
    acc = {name: a for name, (_, a) in rows.items()}
    block_params = {name: n - rows["stem only"][0] for name, (n, _) in rows.items()}

    def against(name, other):  # the gap in points, with its standard error on n_test images
        gap = 100 * (acc[name] - acc[other])
        se = verdicts.difference_se(acc[name], acc[other], n_test)
        evidence = verdicts.Evidence(n_test, gap, "this run, test images", se=se, fmt="{:.2g}")
        return gap, se, evidence, (f"{gap:+.1f} points, {gap / se:+.1f} se, with {block_params[name]}"
                                   f" vs {block_params[other]} block parameters")
    above = f"yes above +{verdicts.NOISE_SE:g} se, NO below -{verdicts.NOISE_SE:g} se, else unclear"
    gap, se, evidence, why = against(han, mlp)
    results.add("Tab. 2: Han- vs MLP-Mixer", f"{gap:+.1f} pts", gap >= -verdicts.NOISE_SE * se, evidence=evidence,
                rule=f"not more than {verdicts.NOISE_SE:g} se below", measured=why)
    gap, se, evidence, why = against(han, "stem only")
    results.add("Tab. 2: Han-Mixer over stem", f"{gap:+.1f} pts", verdicts.lower(-gap, se),
                rule=above, evidence=evidence, measured=why)
    gap, se, evidence, why = against(both, mlp)
    results.add("Tab. 2: MLP- then Han-Mixer", f"{gap:+.1f} pts",
                verdicts.lower(-gap, se), rule=above, evidence=evidence, measured=why)
