"""Lesson 1's closing rows (lessons/closing/__init__.py says what each function does)."""
import math

import numpy as np

from _lesson import stored
from lessons import verdicts
from lessons.trials import dac as trials

_READS = "the store's seeds when it holds them all, else this run's"  # which evidence a rule reads


def figure_7a(results, hand_ok, runs, seeds):
    """Figure 7a: one DAC unit separates the three points, one standard unit cannot.
    hand_ok: whether the hand-set unit does; runs: {"DAC unit", "standard unit"}: this
    run's trained units, one per seed."""
    held = stored(trials, "dac-fig7a", lambda s: s["model"], lambda r: float(r["separates"]),
                  {"dac": "separates (hand-set)", "standard": "cannot"}, "{:.2f}",
                  "1 if the trained unit separates the points, else 0")
    (dac_wins, std_wins, n), source = verdicts.evidence(
        verdicts.counts(held, ("dac", "standard")),
        (*(sum(r["separates"] for r in rs) for rs in runs.values()), seeds))
    results.add("Fig 7a: 1 DAC unit separates", f"hand {hand_ok}; learned {dac_wins}/{n} ({source})",
                hand_ok and dac_wins > 0, rule="the hand-set unit separates, and a trained one does "
                f"from at least one seed ({_READS})",
                measured=f"the hand-set unit separates: {hand_ok}; {dac_wins} of {n} trained "
                         f"ones do ({source})")
    results.add("Fig 7a: 1 standard unit cannot", f"learned {std_wins}/{n} ({source})",
                std_wins == 0, rule=f"no seed's trained standard unit separates ({_READS})",
                measured=f"{std_wins} of {n} trained standard units separate ({source})")


def figure_7b(results, hand_ok, runs, seeds, steps):
    """Figure 7b: two DAC units separate the points, two standard units cannot, four can.
    hand_ok: whether the hand-set net does; runs: {"dac2", "standard2", "standard4"}: this
    run's trained nets, one per seed, of `steps` steps."""
    held = stored(trials, "dac-fig7b", lambda s: s["model"], lambda r: float(r["accuracy"] == 1.0),
                  {"dac2": "can (hand-set)", "standard2": "cannot", "standard4": "can"}, "{:.2f}",
                  "1 if the trained net reaches 100 % training accuracy, else 0")
    (dac2, std2, std4, n), source = verdicts.evidence(  # seeds at 100 %
        verdicts.counts(held, list(runs)),
        (*(sum(r["accuracy"] == 1.0 for r in rs) for rs in runs.values()), seeds))
    if source == "store":  # --full's runs: 7b trains three times Figure 7a's steps
        steps = 3 * trials.SIZES["full"]["figure7"][1]
    results.add("Fig 7b: 2 DAC units can", f"hand {hand_ok}; learned {dac2}/{n} ({source})",
                hand_ok and dac2 > 0, rule="the hand-set net separates, and a trained one reaches "
                f"100 % from at least one seed ({_READS})",
                measured=f"{dac2} of {n} seeds reach 100 % ({source}, {steps} steps)")
    results.add("Fig 7b: 2 standard cannot, 4 can", f"{std2} / {std4} of {n} ({source})",
                std2 == 0 and std4 > 0,
                rule=f"no seed of 2 standard units reaches 100 %, at least one of 4 does ({_READS})",
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
    exact = {name: sum(e < verdicts.EXACT_FIT for e in errs) for name, errs in fits.items()}
    k_fitted = trials.SIZES["full" if source == "store" else mode]["pl"][0]
    # the store's fits are of --full's k: this run's parameter counts are not theirs
    of_k = "" if k_fitted == k else f" of PL_{k_fitted}"
    small, fewer = ((f"{n_params[small_name]} p.", f"{n_params[small_name]} parameters")
                    if k_fitted == k else ("fewer hidden", "(2k - 1) // 3 hidden units"))
    results.add("Thm C.1(1): 1 DAC unit = PL_k",
                f"k={k}: {n_params[dac_name]} p., exact {exact_err:.0e}; trained "
                f"{exact[dac_name]}/{len(fits[dac_name])}{of_k} ({source})",
                n_params[dac_name] == 2 * k and exact_err < 1e-5 and exact[dac_name] > 0,
                rule=f"2k parameters rebuild PL_k to rounding (< 1e-5), and training reaches an "
                     f"error below {verdicts.EXACT_FIT:g} on at least one target ({_READS})",
                measured=f"Adam reaches an error below {verdicts.EXACT_FIT:g} on "
                         f"{exact[dac_name]} of {len(fits[dac_name])} random PL_{k_fitted} "
                         f"({source}); median error {np.median(fits[dac_name]):.2g}")
    results.add("Thm C.1(2): 1 layer cannot", f"min err {min(fits[one_name]):.2f} ({source})",
                exact[one_name] == 0,
                rule=f"no fit reaches an error below {verdicts.EXACT_FIT:g} ({_READS})",
                measured=f"{exact[one_name]} of {len(fits[one_name])} one-layer fits reach an error "
                         f"below {verdicts.EXACT_FIT:g} ({source}; least {min(fits[one_name]):.2g})")
    results.add("Thm C.1(3): 2 layers need 3k+1", f"{n_params[two_name]} p.: exact "
                f"{two_exact_err:.0e}; {small}: {exact[small_name]}/"
                f"{len(fits[small_name])}{of_k} ({source})",
                n_params[two_name] == 3 * k + 1 and two_exact_err < 1e-5 and exact[small_name] == 0,
                rule=f"3k+1 parameters rebuild PL_k (< 1e-5), and no fit with fewer hidden units "
                     f"reaches an error below {verdicts.EXACT_FIT:g} ({_READS})",
                measured=f"the 3k+1 construction's error {two_exact_err:.0e}; {exact[small_name]} "
                         f"of {len(fits[small_name])} fits{of_k} with {fewer} "
                         f"reach an error below {verdicts.EXACT_FIT:g} ({source})")


def vgg(results, runs, settings):
    """Section 6: DAC lowers the VGG's test error (the paper: by 0.65 points on CIFAR-10).
    runs: {"baseline", "DAC"}: this run's vgg_trial results, of `settings`."""
    paper = trials.PAPER_VGG_GAP
    held = stored(trials, "dac-vgg", lambda s: "DAC" if s["dac"] else "baseline",
                  lambda r: r["test_error"], {"DAC": f"{paper} +- 0.17 below baseline (CIFAR-10)"},
                  "{:.2f}", "test error % (Fashion-MNIST)")
    if len(held) == 2:  # the store's seeds: the gap of the means, and its noise over seeds
        base_err, dac_err = (float(np.mean(held[k])) for k in ("baseline", "DAC"))
        se = verdicts.mean_difference_se(held["baseline"], held["DAC"])
        source = f"store, {len(held['DAC'])} seeds"
    else:
        base_err, dac_err = runs["baseline"]["test_error"], runs["DAC"]["test_error"]
        se = verdicts.difference_se(1 - base_err / 100, 1 - dac_err / 100, settings["n_test"])
        source = f"this run, one seed, {settings['epochs']} epochs"
    gap = base_err - dac_err
    results.add("VGG test error: base - DAC (F-MNIST)", f"{base_err:.2f} - {dac_err:.2f} = "
                f"{gap:+.2f} % ({source})", verdicts.gain(gap, paper, se),
                rule=f"the gap counts above {verdicts.NOISE_SE:g} standard errors of {se:.2f} pts; "
                     f"{verdicts.GAIN_RULE} ({_READS})",
                measured=f"our gap {gap:+.2f} pts is {gap / se:+.1f} standard errors of {se:.2f} "
                         f"pts ({source}); the paper's {paper:+.2f} is {(paper - gap) / se:.1f} "
                         "standard errors above it")


def _noise(se):
    return "one seed: no spread" if se is None else f"standard error {se:.2f}"


def regression(results, mse, data, mode):
    """Figures 3 and 4 at the largest baseline width w: the DAC twin below the baseline at the
    same parameters, and doubling by biases lowering the log-MSE more than doubling by weights.
    mse: {(w, net): (this run's test MSE, parameters)}, net as trials.variants names them;
    mode: this run's (for the scale a reason cites)."""
    def group(width, dac):  # the store's table: one row per net, over its seeds
        return f"{'DAC' if dac else 'base'} width {width}"

    held = stored(trials, "dac-widths", lambda s: group(s["width"], s["dac"]),
                  lambda r: r["test_mse"], {}, "{:.4f}", f"test MSE ({data})")
    full = trials.SIZES["full"]
    nets = {(w, net): group(width, dac) for w in full["mlp"][0]
            for net, width, dac in trials.variants(w)}
    mses, source = verdicts.evidence(
        {key: held[g] for key, g in nets.items()} if all(g in held for g in nets.values())
        else None, {key: [m] for key, (m, _) in mse.items()})
    w = max(w for w, _ in mses)
    recipe = trials.SIZES["full" if source == "store" else mode]["mlp"][1]
    scale = (f"{source}: {len(mses[w, 'base w'])} seed(s) of {recipe['depth']} layers, "
             f"{recipe['epochs']} epochs, {data}")
    evidence = (f"at the largest w; the store's {len(nets) * full['replicates']} trials of "
                "dac-widths when it holds them all (w up to "
                f"{max(full['mlp'][0])}, means over seeds), else this run's")
    same, by_biases, by_weights = verdicts.doubling_gains(mses, w)
    se_same = verdicts.log_se(mses[w, "DAC w/sqrt2"], mses[w, "base w"])
    se_doubling = verdicts.log_se(mses[w, "DAC w"], mses[w, "base w*sqrt2"])
    results.add("Fig 3, same params: DAC vs base", f"w={w}: {same:+.2f} nats ({source})",
                verdicts.lower(same, se_same),
                rule=f"the DAC twin's mean log test MSE minus the baseline's: {verdicts.LOWER_RULE}; "
                     f"{evidence}",
                measured=f"at w={w} the DAC twin's mean log-MSE is {same:+.2f} nats from the "
                         f"baseline's ({_noise(se_same)}), an MSE {math.exp(same):.2f}x as large "
                         f"({scale})")
    results.add("Fig 4, x2 params: biases vs weights",
                f"w={w}: {by_biases:+.2f} vs {by_weights:+.2f} nats ({source})",
                verdicts.lower(by_biases - by_weights, se_doubling),
                rule=f"doubling by biases minus doubling by weights, in mean log-MSE: "
                     f"{verdicts.LOWER_RULE}; {evidence}",
                measured=f"at w={w} biases change the mean log-MSE by {by_biases:+.2f} nats, weights "
                         f"by {by_weights:+.2f} ({_noise(se_doubling)} of their difference; {scale})")
