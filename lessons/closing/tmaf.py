"""Lesson 3's closing rows (lessons/closing/__init__.py says what each function does)."""
import numpy as np

from _lesson import stored
from lessons import verdicts
from lessons.trials import tmaf as trials


def _column(s):
    """A tmaf-widths trial's row of the store's table: activation, depth x width."""
    return f"{s['kind']} {s['depth']}x{s['width']}"


def table_31(results, smooth, columns, n_seeds, epochs):
    """Table 3.1: in how many columns TMAF's median error is below ReLU's, and below PReLU's.
    smooth: {kind: this run's median error per column}; columns: [(depth, width)]; n_seeds,
    epochs: this run's."""
    full_smooth = trials.SIZES["full"]["smooth"]
    full_columns = [(depth, width) for depth in (1, 2) for width in full_smooth[3]]
    paper = {f"{kind} {depth}x{width}": trials.PAPER_T31[kind][i]
             for kind in trials.PAPER_T31 for i, (depth, width) in enumerate(full_columns)}
    held = stored(trials, "tmaf-widths", _column, lambda r: r["error"], paper, "{:.3f}",
                  "relative L2 error on the smooth target")
    cells = {kind: [held.get(f"{kind} {d}x{w}") for d, w in full_columns] for kind in smooth}
    whole = all(e is not None for errs in cells.values() for e in errs)
    errors, source = verdicts.evidence(
        {kind: [float(np.median(e)) for e in errs] for kind, errs in cells.items()} if whole
        else None, smooth)
    if whole:
        columns, n_seeds, epochs = full_columns, len(full_smooth[2]), full_smooth[1]
    for other in ("ReLU", "PReLU"):
        below = [t < o for t, o in zip(errors["TMAF"], errors[other])]
        k, n = sum(below), len(below)
        lost = ", ".join(f"{d}x{w}: {t:.4f} vs {o:.4f}" for (d, w), t, o, b in
                         zip(columns, errors["TMAF"], errors[other], below) if not b)
        results.add(f"Table 3.1: columns where TMAF < {other}", f"{k} of {n} ({source})",
                    verdicts.columns_won(k, n),
                    rule=f"TMAF's median error below {other}'s in every column: yes; in most "
                         f"(> {verdicts.MOST:.0%}): partly; else NO (the store's 5 seeds when it "
                         "holds them all)",
                    measured=f"TMAF is below {other} in {k} of {n} columns ({source}: medians "
                             f"over {n_seeds} seeds of {epochs} epochs)"
                             + (f"; not in {lost}" if lost else ""))


def oscillatory(results, osc, sizes):
    """The two-sine target: ReLU and PReLU miss its fast part, the TMAFs fit it. osc: {kind:
    this run's result}; sizes: this run's (samples, epochs)."""
    kinds = list(osc)
    held = stored(trials, "tmaf-oscillatory", lambda s: s["kind"], lambda r: r["error"],
                  {kind: trials.PAPER[f"oscillatory: {kind} error"][0] for kind in kinds},
                  "{:.3f}", "relative L2 error on the two-sine target")
    here = {kind: [run["error"]] for kind, run in osc.items()}
    errs, source = verdicts.evidence(held if len(held) == len(kinds) else None, here)
    error = {kind: float(np.median(e)) for kind, e in errs.items()}
    scale = (f"{source}: median of {len(errs['ReLU'])} seed(s), " + "{1} epochs on {0} samples"
             .format(*(trials.SIZES["full"]["oscillatory"] if source == "store" else sizes)))
    read = "; the medians of the store's seeds when it holds every kind's, else this run's"
    for kind in ("ReLU", "PReLU"):  # the paper: both miss the fast part
        results.add(f"oscillatory: {kind} error", f"{error[kind]:.3f} ({source})",
                    verdicts.misses_fast_part(error[kind]),
                    rule=f"misses the fast sine: yes at an error >= {verdicts.SLOW_ONLY:.3f} (the "
                         f"slow sine alone), partly at >= {verdicts.SLOW_ONLY / 2:.3f} (half its "
                         f"amplitude followed), else NO{read}",
                    measured=f"our {kind} net's error is {error[kind]:.3f} ({scale}), "
                             f"{error[kind] / verdicts.SLOW_ONLY:.2f} of the slow sine's alone: it "
                             f"follows about {1 - error[kind] / verdicts.SLOW_ONLY:.0%} of the fast "
                             "sine's amplitude")
    for kind in ("TMAF", "tri-TMAF"):
        results.add(f"oscillatory: {kind} error", f"{error[kind]:.3f} ({source})",
                    verdicts.fits_fast_part(error[kind], error["ReLU"]),
                    rule=f"fits the fast sine: yes below {verdicts.FAST_FIT:g}, partly if only "
                         f"below ReLU's error, else NO{read}",
                    measured=f"our {kind} net's error is {error[kind]:.3f} ({scale}), ReLU's "
                             f"{error['ReLU']:.3f}")


def table_33(results, accuracy, dataset, n_test, epochs):
    """Table 3.3: TMAF's accuracy gain over ReLU with one and two hidden layers. accuracy:
    {(kind, depth): this run's test accuracy, %} on n_test images after `epochs`."""
    held = stored(trials, "tmaf-images", lambda s: f"{s['kind']}, {s['depth']} hidden",
                  lambda r: 100 * r["accuracy"],
                  {f"{kind}, {depth} hidden": f"{acc} (MNIST)" for depth, accs in
                   trials.PAPER_T33.items() for kind, acc in zip(("ReLU", "TMAF"), accs)},
                  "{:.2f}", f"test accuracy % ({dataset})")
    labels = [f"{kind}, {depth} hidden" for depth in trials.PAPER_T33 for kind in ("ReLU", "TMAF")]
    whole = all(label in held for label in labels)  # the store's seeds of every net at every depth
    for depth, (paper_relu, paper_tmaf) in trials.PAPER_T33.items():
        if whole:
            relu, tmaf = (held[f"{kind}, {depth} hidden"] for kind in ("ReLU", "TMAF"))
            gain, se = np.mean(tmaf) - np.mean(relu), verdicts.mean_difference_se(tmaf, relu)
            source = f"store, {len(tmaf)} seeds"
        else:
            gain = accuracy["TMAF", depth] - accuracy["ReLU", depth]
            se = verdicts.difference_se(accuracy["ReLU", depth] / 100,
                                        accuracy["TMAF", depth] / 100, n_test)
            source = f"this run, one seed, {epochs} epochs"
        results.add(f"Table 3.3, {depth} hidden: TMAF - ReLU", f"{gain:+.2f} pts ({dataset}; {source})",
                    verdicts.gain(gain, paper_tmaf - paper_relu, se),
                    rule=f"the gain counts above {verdicts.NOISE_SE:g} standard errors of {se:.2f} "
                         f"pts; {verdicts.GAIN_RULE}; the store's seeds when it holds every net's "
                         "at every depth (the whole tmaf-images sweep), else this run's",
                    measured=f"our gain {gain:+.2f} pts is {gain / se:+.1f} standard errors of "
                             f"{se:.2f} pts ({source}); the paper's {paper_tmaf - paper_relu:+.1f} is "
                             f"{(paper_tmaf - paper_relu - gain) / se:.1f} standard errors above it")


def step_cost(results, cost):
    """Section 7: a TMAF step's cost "comparable" to ReLU's. cost: trials.step_cost's."""
    act_ms, relu_step_ms, wall_ms = cost["activation_cpu"], cost["step_cpu"]["ReLU"], cost["step_wall"]
    parts = ", ".join(f"{part} {ms:.3f}" for part, ms in cost["tmaf_parts_cpu"].items())
    for kind in ("TMAF", "tri-TMAF"):
        ratio = 1 + 2 * (act_ms[kind] - act_ms["ReLU"]) / relu_step_ms  # the lesson's lower bound
        direct, alone = wall_ms[kind] / wall_ms["ReLU"], act_ms[kind] / act_ms["ReLU"]
        results.add(f"step cost {kind}/ReLU", f"{ratio:.2f}x lower bound, {direct:.2f}x direct "
                    f"(the activation alone {alone:.1f}x)",
                    verdicts.comparable_cost(ratio, direct),
                    rule=f"comparable: yes if the lower bound and the direct ratio are both "
                         f"<= {verdicts.COMPARABLE:g}x, NO if the lower bound is above, else unclear",
                    measured=f"the activation alone costs {alone:.1f}x ReLU's (CPU); in the step, "
                             f"{ratio:.2f}x at least, {direct:.2f}x by wall time; of the diagonal "
                             f"TMAF's {act_ms['TMAF']:.3f} ms, {parts} ms (ReLU's forward and "
                             f"backward: {act_ms['ReLU']:.3f} ms)")
