"""Lesson 1's closing rows (lessons/closing/__init__.py says what each function does).

Every row reads the store's paper-scale runs when it holds the grid whole from the current
code, else this run's (verdicts.evidence picks; lesson 1 says so once); its verdict line
prints what it read (verdicts.Evidence: n, mean, spread and standard error, source). The
store's table is printed where it says more than that line (the fits' errors of Theorem
C.1); the regression's and the convnet's runs are drawn in the lesson's figures."""
import math

import numpy as np

from _lesson import held_whole, stored
from lessons import verdicts
from lessons.trials import dac as trials

Evidence = verdicts.Evidence
# The rows of Figure 7 and Theorem C.1 share one rule.
CAN = ("'can': the hand-set net or construction shown does it (to 1e-5) and a trained one does "
       f"from some seed; 'cannot': no trained one does (PL_k: an error below {verdicts.EXACT_FIT:g})")


def _yes(flag):
    return "yes" if flag else "NO"


def _outcomes(held, runs):
    """The store's 0/1 outcomes per model when it holds every model of runs whole, else
    this run's. -> ({model: outcomes}, source)."""
    return verdicts.evidence({m: held[m] for m in runs} if set(runs) <= set(held) else None, runs)


def figure_7a(results, hand_ok, runs):
    """Figure 7a: one DAC unit separates the three points, one standard unit cannot.
    hand_ok: whether the hand-set unit does; runs: {"dac", "standard"}: this run's 0/1
    outcomes (1: the trained unit separates), one per seed."""
    held = held_whole(trials, "dac-fig7a", lambda s: s["model"], lambda r: float(r["separates"]))
    won, source = _outcomes(held, runs)
    dac, std = (int(sum(won[m])) for m in ("dac", "standard"))
    results.add("Fig 7a: 1 DAC unit separates", f"hand-set {_yes(hand_ok)}; trained {dac}/{len(won['dac'])}",
                hand_ok and dac > 0, rule=CAN, evidence=Evidence.of(won["dac"], source),
                measured=f"the hand-set unit separates: {hand_ok}; {dac} of {len(won['dac'])} "
                         f"trained ones do ({source})")
    results.add("Fig 7a: 1 standard unit cannot", f"trained {std}/{len(won['standard'])}", std == 0,
                rule=CAN,
                evidence=Evidence.of(won["standard"], source),
                measured=f"{std} of {len(won['standard'])} trained standard units separate ({source})")


def figure_7b(results, hand_ok, runs, steps):
    """Figure 7b: two DAC units separate the points, two standard units cannot, four can.
    hand_ok: whether the hand-set net does; runs: {"dac2", "standard2", "standard4"}: this
    run's 0/1 outcomes (1: 100 % training accuracy), one per seed, of `steps` steps."""
    held = held_whole(trials, "dac-fig7b", lambda s: s["model"], lambda r: float(r["accuracy"] == 1.0))
    won, source = _outcomes(held, runs)
    dac2, std2, std4 = (int(sum(won[m])) for m in ("dac2", "standard2", "standard4"))
    n = len(won["dac2"])
    if source == "store":  # --full's runs: 7b trains three times Figure 7a's steps
        steps = 3 * trials.SIZES["full"]["figure7"][1]
    results.add("Fig 7b: 2 DAC units can", f"hand-set {_yes(hand_ok)}; trained {dac2}/{n}",
                hand_ok and dac2 > 0, rule=CAN, evidence=Evidence.of(won["dac2"], source),
                measured=f"{dac2} of {n} seeds reach 100 % ({source}, {steps} steps)")
    results.add("Fig 7b: 2 standard cannot, 4 can", f"2: {std2}/{n}, 4: {std4}/{n}",
                std2 == 0 and std4 > 0,
                rule=CAN,
                evidence=f"2 units: {Evidence.of(won['standard2'], source)}; 4 units: "
                         f"{Evidence.of(won['standard4'], source)}",
                measured=f"{std2} of {n} seeds of 2 standard units and {std4} of 4 reach 100 % "
                         f"({source}, {steps} steps)")


def theorem_c1(results, k, errors, n_params, exact_err, two_exact_err, mode):
    """Theorem C.1: a DAC unit of 2k parameters is PL_k; one standard layer cannot be; two need
    3k+1 parameters. errors: {net: this run's fit errors}, the four nets in the order DAC unit,
    one layer, two layers of k hidden, two layers of fewer; n_params: {net: parameters};
    exact_err, two_exact_err: the hand-built DAC unit's and 3k+1 net's errors."""
    dac_name, one_name, two_name, small_name = errors
    labels = dict(zip(("dac", "standard1", "standard2, k hidden", "standard2, fewer"), errors))
    held = stored(trials, "dac-plk", lambda s: "standard2, " + (
        "k hidden" if s["hidden"] == s["k"] else "fewer") if s["model"] == "standard2" else s["model"],
                  lambda r: r["error"], {"dac": "exact", "standard1": "cannot",
                                         "standard2, k hidden": "exact (3k+1 p.)"}, "{:.2g}",
                  "error (MSE / MSE of the best line; 'fewer': (2k - 1) // 3 hidden)")
    fits, source = verdicts.evidence(
        {labels[label]: errs for label, errs in held.items()} if len(held) == len(labels) else None,
        errors)
    exact = {name: [e < verdicts.EXACT_FIT for e in errs] for name, errs in fits.items()}
    won = {name: int(sum(e)) for name, e in exact.items()}
    k_fitted = trials.SIZES["full" if source == "store" else mode]["pl"][0]
    # the store's fits are of --full's k: this run's parameter counts are not theirs
    of_k = "" if k_fitted == k else f" (k={k_fitted})"
    small, fewer = ((f"{n_params[small_name]} p.", f"{n_params[small_name]} parameters")
                    if k_fitted == k else ("fewer", "(2k - 1) // 3 hidden units"))
    below = f"an error below {verdicts.EXACT_FIT:g}"
    results.add("Thm C.1(1): 1 DAC unit = PL_k",
                f"{n_params[dac_name]} p. exact; trained {won[dac_name]}/{len(fits[dac_name])}{of_k}",
                n_params[dac_name] == 2 * k and exact_err < 1e-5 and won[dac_name] > 0,
                rule=CAN,
                evidence=Evidence.of(exact[dac_name], source),
                measured=f"Adam reaches {below} on {won[dac_name]} of {len(fits[dac_name])} "
                         f"random PL_{k_fitted} ({source}); median error "
                         f"{np.median(fits[dac_name]):.2g}")
    results.add("Thm C.1(2): 1 layer cannot", f"{won[one_name]}/{len(fits[one_name])}, least err "
                f"{min(fits[one_name]):.2f}", won[one_name] == 0,
                rule=CAN, evidence=Evidence.of(exact[one_name], source),
                measured=f"{won[one_name]} of {len(fits[one_name])} one-layer fits reach {below} "
                         f"({source}; least {min(fits[one_name]):.2g})")
    results.add("Thm C.1(3): 2 layers need 3k+1", f"{n_params[two_name]} p. exact; {small}: "
                f"{won[small_name]}/{len(fits[small_name])}{of_k}",
                n_params[two_name] == 3 * k + 1 and two_exact_err < 1e-5 and won[small_name] == 0,
                rule=CAN,
                evidence=Evidence.of(exact[small_name], source),
                measured=f"the 3k+1 construction's error {two_exact_err:.0e}; {won[small_name]} "
                         f"of {len(fits[small_name])} fits{of_k} with {fewer} reach {below} ({source})")


def vgg(results, runs, settings):
    """Section 6: DAC lowers the VGG's test error (the paper: by 0.65 points on CIFAR-10).
    runs: {"baseline", "DAC"}: this run's vgg_trial results, of `settings`.
    -> ({net: [per-epoch histories]}, source): the runs the verdict read, for the figure."""
    paper = trials.PAPER_VGG_GAP
    net = lambda s: "DAC" if s["dac"] else "baseline"  # noqa: E731
    held = held_whole(trials, "dac-vgg", net, lambda r: r["test_error"])
    if len(held) == 2:  # the store's seeds: the gap of the means, and its noise over seeds
        base_err, dac_err = (float(np.mean(held[k])) for k in ("baseline", "DAC"))
        se = verdicts.mean_difference_se(held["baseline"], held["DAC"])
        n, source = len(held["DAC"]), "store"
        curves = held_whole(trials, "dac-vgg", net, lambda r: r["history"])
    else:
        base_err, dac_err = runs["baseline"]["test_error"], runs["DAC"]["test_error"]
        se = verdicts.difference_se(1 - base_err / 100, 1 - dac_err / 100, settings["n_test"])
        n, source = 1, f"this run, {settings['epochs']} epochs"
        curves = {name: [run["history"]] for name, run in runs.items()}
    gap = base_err - dac_err
    results.add("VGG: test error base - DAC", f"{base_err:.2f} - {dac_err:.2f} = "
                f"{gap:+.2f}", verdicts.gain(gap, paper, se),
                rule=f"the gap counts above {verdicts.NOISE_SE:g} standard errors (over seeds, or "
                     f"the test set's binomial one from one run); {verdicts.GAIN_RULE}",
                evidence=Evidence(n, gap, source, se=se),
                measured=f"our gap {gap:+.2f} pts is {gap / se:+.1f} standard errors of {se:.2f} "
                         f"pts ({source}); the paper's {paper:+.2f} is {(paper - gap) / se:.1f} "
                         "standard errors above it")
    return curves, source


def regression(results, mse, data, mode):
    """Figures 3 and 4 at the largest baseline width w: the DAC twin below the baseline at the
    same parameters, and doubling by biases lowering the log-MSE more than doubling by weights.
    mse: {(w, net): this run's test MSE}, net as trials.variants names them; mode: this
    run's (for the scale a reason cites). -> ({(w, net): test MSEs over seeds}, source):
    what the verdicts read, for the figure (which shows them with their spread)."""
    def group(width, dac):  # one group per net, over its seeds
        return f"{'DAC' if dac else 'base'} width {width}"

    full = trials.SIZES["full"]
    nets = {(w, net): group(width, dac) for w in full["mlp"][0]
            for net, width, dac in trials.variants(w)}
    held = held_whole(trials, "dac-widths", lambda s: group(s["width"], s["dac"]), lambda r: r["test_mse"])
    mses, source = verdicts.evidence(
        {key: held[g] for key, g in nets.items()} if all(g in held for g in nets.values())
        else None, {key: [m] for key, m in mse.items()})
    w = max(w for w, _ in mses)
    recipe = trials.SIZES["full" if source == "store" else mode]["mlp"][1]
    n = len(mses[w, "base w"])
    scale = f"{source}: {n} seed(s) of {recipe['depth']} layers, {recipe['epochs']} epochs, {data}"
    same, by_biases, by_weights = verdicts.doubling_gains(mses, w)
    se_same = verdicts.log_se(mses[w, "DAC w/sqrt2"], mses[w, "base w"])
    se_doubling = verdicts.log_se(mses[w, "DAC w"], mses[w, "base w*sqrt2"])
    results.add("Fig 3: DAC vs base, same params", f"w={w}: {same:+.2f} nats",
                verdicts.lower(same, se_same),
                rule=f"mean log test MSEs at the largest w: {verdicts.LOWER_RULE}",
                evidence=Evidence(n, same, source, se=se_same),
                measured=f"at w={w} the DAC twin's mean log-MSE is {same:+.2f} nats from the "
                         f"baseline's, an MSE {math.exp(same):.2f}x as large ({scale})")
    results.add("Fig 4: x2 by biases vs weights",
                f"w={w}: {by_biases:+.2f} vs {by_weights:+.2f}",
                verdicts.lower(by_biases - by_weights, se_doubling),
                rule=f"mean log test MSEs at the largest w: {verdicts.LOWER_RULE}",
                evidence=Evidence(n, by_biases - by_weights, source, se=se_doubling),
                measured=f"at w={w} biases change the mean log-MSE by {by_biases:+.2f} nats, weights "
                         f"by {by_weights:+.2f} ({scale})")
    return mses, source
