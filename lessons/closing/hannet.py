"""Lesson 4's closing rows (lessons/closing/__init__.py says what each function does)."""
import numpy as np

from _lesson import STORE
from lessons import verdicts
from lessons.trials import stored_rows
from lessons.trials import hannet as trials


def landscapes(results, flat, rows):
    """Figure 1: the deepest sigmoid and ReLU landscapes collapse, ABS's and the HanNet's do
    not. flat: {(kind, L): range / max of this draw's landscape}; rows: [(kind, depths)]."""
    def over_depth(*kinds):  # what a row's reason cites
        return "; ".join(f"{kind} range / max at L = {', '.join(map(str, depths))}: " + ", ".join(
            f"{flat[kind, L]:.0e}" for L in depths) for kind, depths in rows if kind in kinds)
    deep = {kind: flat[kind, depths[-1]] for kind, depths in rows}
    collapsed = f"range / max below {verdicts.COLLAPSED:g}"
    results.add("Fig. 1: deepest sigmoid (L=15) landscape", f"range/max {deep['sigmoid']:.0e}",
                deep["sigmoid"] < verdicts.COLLAPSED, rule=collapsed, measured=over_depth("sigmoid"))
    results.add("Fig. 1: ReLU at L=60 (one draw)", f"range/max {deep['relu']:.0e}",
                deep["relu"] < verdicts.COLLAPSED, rule=collapsed, measured=over_depth("relu"))
    results.add("Fig. 1: ABS and HanNet at L=60", f"range/max {deep['abs']:.0e} / {deep['han']:.0e}",
                min(deep["abs"], deep["han"]) > verdicts.ALIVE,
                rule=f"both range / max above {verdicts.ALIVE:g}", measured=over_depth("abs", "han"))


def v3(results, v3_rows, depths, samples):
    """Figure 2: ReLU's V3 peaks near L ~ 16 and reaches 0, ABS's never does, the HanNet's
    stays high. v3_rows: {kind: [(L, d, V3, collapsed samples)] by depth}."""
    def collapsed(kind):  # what a row's reason cites
        return (f"{kind}'s collapsed samples of {samples} per depth: "
                + ", ".join(f"L={L}: {r[3]}" for L, r in zip(depths, v3_rows[kind])))
    relu_peak = max(v3_rows["relu"], key=lambda r: r[2])[0]  # the depth of the highest V3
    relu_zero = [r[0] for r in v3_rows["relu"] if r[2] == 0]
    results.add("Fig. 2: ReLU V3 peak depth", f"L = {relu_peak}, 0 from "
                f"{relu_zero[0] if relu_zero else 'never'}",
                bool(relu_zero) and verdicts.RELU_PEAK[0] <= relu_peak <= verdicts.RELU_PEAK[1],
                rule="V3 reaches 0 at some depth, and peaks at L in {} .. {}".format(
                    *verdicts.RELU_PEAK), measured=collapsed("relu"))
    han_min, abs_min = (min(r[2] for r in v3_rows[kind]) for kind in ("han", "abs"))
    abs_zero = [r[0] for r in v3_rows["abs"] if r[2] == 0]
    results.add("Fig. 2: ABS V3 after its peak", f"0 at L = {abs_zero[0]}" if abs_zero else "never 0",
                not abs_zero, rule="V3 is 0 at no depth", measured=collapsed("abs"))
    results.add("Fig. 2: HanNet V3", f"min {han_min:.3g} vs ABS min {abs_min:.3g}",
                han_min > 0 and han_min >= abs_min,
                rule="the HanNet's least V3 above 0 and at least ABS's",
                measured=f"{collapsed('han')}; {collapsed('abs')}")


def c_and_g(results, ratios, relu_c, abs_c, depth):
    """Figure 6: ReLU's C ~ 100x below its G, ABS's C > 1000x ReLU's, at the last depth.
    ratios: ReLU's C / G of this run's draws, the plotted one first; relu_c, abs_c: the
    plotted draws' ||C||."""
    median = float(np.median(ratios))
    results.add("Fig. 6 left: ReLU C vs G at the last depth", f"C / G = {ratios[0]:.0e} at L = "
                f"{depth} (median of {len(ratios)}: {median:.0e})", median < verdicts.C_BELOW_G,
                rule=f"the median C / G below {verdicts.C_BELOW_G:g}",
                measured=f"C / G at L = {depth} ranges {min(ratios):.0e} - {max(ratios):.0e} over "
                         f"{len(ratios)} draws (median {median:.0e})")
    results.add("Fig. 6 right: ABS C / ReLU C at the last depth", f"{abs_c / relu_c:.0e} at L = {depth}",
                abs_c / relu_c > verdicts.ABS_OVER_RELU, rule=f"above {verdicts.ABS_OVER_RELU:g}",
                measured=f"||C|| at L = {depth}: ABS {abs_c:.1e}, ReLU {relu_c:.1e}")


def board(results, han_run, fc_run, swept):
    """Figure 4: the HanNet reaches the paper's 99.5 %, the FCNet its 85.2 %, over the store's
    seeds (each seed's best learning rate) when it holds every trial of the sweep, and in
    this run's one run per net. swept: what paper_sweep returned (--full: (settings,
    results)), else None (the store's rows)."""
    wanted = trials.paper_trials()
    rows = (list(zip(*swept)) if swept else
            [(row["settings"], row["result"])
             for row in stored_rows(trials.SWEEP, STORE, trials.TRIAL, wanted)["current"]])
    whole = len(rows) == len(wanted)  # a seed's best of the lrs needs all its lrs
    best = {}  # (net, seed) -> the best test accuracy over the learning rates
    for s, r in rows if whole else ():  # else the one-run rows say what the store lacks
        if r is not None:
            best[s["net"], s["seed"]] = max(best.get((s["net"], s["seed"]), 0.0), r["test_acc"])
    over_seeds = {}  # net -> what the store measured, for the one-run rows' reasons
    for net in ("hannet", "fcnet"):
        accs = [a for (n, _), a in best.items() if n == net]
        if accs:
            median = float(np.median(accs))
            over_seeds[net] = (f"the store's best of the lrs over {len(accs)} seeds: median "
                               f"{median:.1%}, {min(accs):.1%} - {max(accs):.1%}")
            results.add(f"Fig. 4 over seeds 0-9: {net} best of the lrs, median", f"{median:.1%}",
                        verdicts.reaches_paper(net, median), rule=verdicts.BOARD_RULE[net] +
                        ", the median over the seeds when the store holds all the sweep's trials",
                        measured=over_seeds[net])
        else:
            over_seeds[net] = (f"not measured over seeds: the store holds {len(rows)} of the "
                               f"sweep's {len(wanted)} trials from the current code (the table "
                               "above says which)")
    for name, net, run in (("HanNet", "hannet", han_run), ("FCNet", "fcnet", fc_run)):
        results.add(f"Fig. 4: {name} test accuracy", f"{run['test_acc']:.1%} (lr {run['lr']})",
                    verdicts.reaches_paper(net, run["test_acc"]), rule=verdicts.BOARD_RULE[net],
                    measured=over_seeds[net])


def ablation(results, accuracy, width, steps):
    """Table 7: H+ABS above H+ReLU and FC+ABS. accuracy: {variant: this run's test accuracy}."""
    measured = ", ".join(f"{kind} {acc:.1%}" for kind, acc in accuracy.items())
    for kind, ours in accuracy.items():
        beaten = all(ours > accuracy[k] for k in accuracy if k != kind)
        results.add(f"Table 7: {kind}", f"{ours:.1%} (w{width}, {steps} steps)",
                    beaten if kind == "H+ABS" else ours < accuracy["H+ABS"],
                    rule="H+ABS above both others" if kind == "H+ABS" else "below H+ABS",
                    measured=measured)


def mixers(results, rows, n_test, mlp, han, both):
    """Table 2: Han-Mixer blocks vs an MLP-Mixer block. rows: {model: (parameters, test
    accuracy)}, "stem only" among them; mlp, han, both: the names of the three mixers."""
    acc = {name: a for name, (_, a) in rows.items()}
    gain = {name: a - acc["stem only"] for name, a in acc.items()}  # over the stem alone
    block_params = {name: n - rows["stem only"][0] for name, (n, _) in rows.items()}

    def against(name, other):  # the gap in standard errors on the n_test test images
        gap, se = 100 * (acc[name] - acc[other]), verdicts.difference_se(acc[name], acc[other], n_test)
        return (f"{name.removeprefix('+ ')} vs {other.removeprefix('+ ')}: {gap:+.1f} points, "
                f"{gap / se:+.1f} standard errors of {se:.1f} on {n_test} test images, with "
                f"{block_params[name]} vs {block_params[other]} block parameters")
    results.add("Tab. 2: Han-Mixer blocks vs MLP-Mixer block", f"{block_params[han]} vs "
                f"{block_params[mlp]} block params: {acc[han]:.1%} vs {acc[mlp]:.1%}",
                acc[han] >= acc[mlp] - verdicts.SIMILAR_ACC,
                rule=f"Han-Mixer's accuracy at most {100 * verdicts.SIMILAR_ACC:g} points below",
                measured=against(han, mlp))
    results.add("Tab. 2: Han-Mixer over the stem alone", f"{gain[han]:+.1%} accuracy (MLP-Mixer "
                f"{gain[mlp]:+.1%}, both {gain[both]:+.1%})", gain[han] > 0, rule="a gain above 0",
                measured=against(han, "stem only"))
    results.add("Tab. 2: MLP-Mixer (k) + Han-Mixer after it", f"{acc[both]:.1%} vs {acc[mlp]:.1%}",
                acc[both] > acc[mlp], rule="accuracy above the MLP-Mixer's",
                measured=against(both, mlp))
