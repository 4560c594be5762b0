"""Lesson 3's closing rows (lessons/closing/__init__.py says what each function does).

Each function prints its claim's table (the paper's numbers, this run's, and as "store"
text the store's --full runs), then adds one verdict line per claim. A verdict reads the
store's runs when it holds the sweep whole from the current code, else this run's
(verdicts.evidence picks), and its line prints what it read. Each function returns that
evidence too, so that the figure of the claim plots the data its verdict read and says on
the figure whose runs they are."""
import numpy as np

from _lesson import bookkeeping, held_whole
from lessons import verdicts
from lessons.plots import table
from lessons.trials import tmaf as trials

KINDS_31 = ("ReLU", "PReLU", "TMAF")
COLUMNS_RULE = "TMAF's median below in all columns: yes; in most: partly; else NO"
MISSES_RULE = (f"median error >= {verdicts.SLOW_ONLY:.3f} (slow sine only): yes; >= "
               f"{verdicts.SLOW_ONLY / 2:.3f}: partly; else NO")
FITS_RULE = f"median error < {verdicts.FAST_FIT:g}: yes; only below ReLU's: partly; else NO"
GAIN_RULE = (f"gain > {verdicts.NOISE_SE:g} se: yes if >= half the paper's, else partly; if "
             f"not, NO if the paper's is > {verdicts.NOISE_SE:g} se above ours, else unclear")
COST_RULE = (f"lower bound and direct ratio both <= {verdicts.COMPARABLE:g}x: yes; lower bound "
             "above: NO; else unclear")


def _print_split(rows, n_store, note):
    """rows as one aligned table; its last n_store rows and the note counted as store text."""
    lines = table(rows).splitlines()
    print("\n".join(lines[:len(lines) - n_store]))
    with bookkeeping("store"):
        print("\n".join(lines[len(lines) - n_store:] + [note]))


def table_31(results, here, columns, sizes):
    """Table 3.1 (the paper's errors, this run's medians over seeds, the store's), then in
    how many columns TMAF's median error is below ReLU's, and below PReLU's. here: {kind:
    [[error per seed] per column]} of this run; columns: its [(depth, width)]; sizes:
    S["smooth"], this run's (samples, epochs, seeds, widths).
    -> (columns, {kind: [[error per seed] per column]}, where): what the verdicts read."""
    full = trials.SIZES["full"]["smooth"]
    full_columns = [(depth, width) for depth in (1, 2) for width in full[3]]
    held = held_whole(trials, "tmaf-widths", lambda s: f"{s['kind']} {s['depth']}x{s['width']}",
                      lambda r: r["error"])
    cells = {kind: [held.get(f"{kind} {d}x{w}") for d, w in full_columns] for kind in KINDS_31}
    whole = all(e is not None for errs in cells.values() for e in errs)
    scale = {"store": f"{len(full[2])} seeds of {full[1]} epochs on {full[0]} samples",
             "this run": f"{len(sizes[2])} seed(s) of {sizes[1]} epochs on {sizes[0]} samples"}
    mine = dict(zip(columns, zip(*here.values())))  # (depth, width) -> each kind's seeds
    rows = [("median error", *(f"{d}x{w}" for d, w in full_columns))]
    rows += [(f"paper {kind}", *(f"{e:.3f}" for e in errs))
             for kind, errs in trials.PAPER_T31.items()]
    rows += [(f"this run {kind}", *(f"{np.median(mine[c][k]):.3f}" if c in mine else ""
                                    for c in full_columns)) for k, kind in enumerate(here)]
    rows += [(f"store {kind}", *(f"{np.median(e):.3f}" if e else "-" for e in cells[kind]))
             for kind in KINDS_31]
    print(f"\nTable 3.1, relative L2 error (this run: {scale['this run']}; the paper's "
          "column settings are lost)")
    _print_split(rows, len(KINDS_31), f"(store: {scale['store']}"
                 + ("" if whole else "; not held whole, so the verdicts read this run") + ")")
    errors, source = verdicts.evidence(cells if whole else None, here)
    columns = full_columns if whole else columns
    median = {kind: [float(np.median(e)) for e in errs] for kind, errs in errors.items()}
    for other in ("ReLU", "PReLU"):
        below = [t < o for t, o in zip(median["TMAF"], median[other])]
        k, n = sum(below), len(below)
        ratio = [t / o for t, o in zip(median["TMAF"], median[other])]
        lost = ", ".join(f"{d}x{w}: {t:.4f} vs {o:.4f}" for (d, w), t, o, b in
                         zip(columns, median["TMAF"], median[other], below) if not b)
        results.add(f"T3.1: columns TMAF < {other}", f"{k} of {n}", verdicts.columns_won(k, n),
                    rule=COLUMNS_RULE,
                    evidence=f"n={n} columns x {len(errors['TMAF'][0])} seed(s), TMAF's median / "
                             f"{other}'s {min(ratio):.2f} to {max(ratio):.2f}; {source}",
                    measured=f"{k} of {n}" + (f"; not in {lost}" if lost else ""))
    return columns, errors, f"{source}: {scale[source]}"


def oscillatory(results, osc, sizes):
    """The two-sine target's errors (the paper's, this run's, the store's); then the verdicts:
    ReLU and PReLU miss its fast part, the TMAFs fit it. osc: {kind: this run's result, seed
    0}; sizes: this run's (samples, epochs).
    -> ({kind: the run a figure shows}, where): per kind the run of median error of what the
    verdicts read (the store's seeds when it holds every kind's, else this run's)."""
    kinds = list(osc)
    held = held_whole(trials, "tmaf-oscillatory", lambda s: s["kind"], lambda r: r)
    whole = set(kinds) <= set(held)
    store = {kind: [r["error"] for r in held[kind]] for kind in kinds} if whole else {}
    n_full, epochs_full = trials.SIZES["full"]["oscillatory"]
    rows = [("relative L2 error", *kinds),
            ("paper", *(trials.PAPER[f"oscillatory: {kind} error"][0] for kind in kinds)),
            ("this run, seed 0", *(f"{osc[kind]['error']:.3f}" for kind in kinds)),
            ("store median", *(f"{np.median(store[k]):.3f}" if whole else "-" for k in kinds))]
    print(f"\nThe two-sine target (this run: {sizes[1]} epochs on {sizes[0]} samples)")
    _print_split(rows, 1, f"(store: {len(held.get('ReLU', []))} seeds of {epochs_full} "
                 f"epochs on {n_full} samples; ranges in the verdict lines"
                 + ("" if whole else "; not held whole, so the verdicts read this run") + ")")
    runs, source = verdicts.evidence({k: held[k] for k in kinds} if whole else None,
                                     {kind: [run] for kind, run in osc.items()})
    n_samples, epochs = (n_full, epochs_full) if whole else sizes
    scale = f"{source}: {len(runs['ReLU'])} seed(s) of {epochs} epochs on {n_samples} samples"
    error = {kind: float(np.median([r["error"] for r in rs])) for kind, rs in runs.items()}

    def seen(kind):
        errs = [r["error"] for r in runs[kind]]
        return (f"n={len(errs)}, median {error[kind]:.3f}, "
                + (f"range {min(errs):.3f}-{max(errs):.3f}" if len(errs) > 1 else "one run")
                + f"; {source}")
    for kind in ("ReLU", "PReLU"):  # the paper: both miss the fast part
        results.add(f"oscillatory: {kind} error", f"{error[kind]:.3f}",
                    verdicts.misses_fast_part(error[kind]), rule=MISSES_RULE, evidence=seen(kind),
                    measured=f"it follows about {1 - error[kind] / verdicts.SLOW_ONLY:.0%} of "
                             "the fast sine's amplitude")
    for kind in ("TMAF", "tri-TMAF"):
        results.add(f"oscillatory: {kind} error", f"{error[kind]:.3f}",
                    verdicts.fits_fast_part(error[kind], error["ReLU"]), rule=FITS_RULE,
                    evidence=seen(kind),
                    measured=f"{error[kind]:.3f}, ReLU's {error['ReLU']:.3f}")
    shown = {kind: sorted(rs, key=lambda r: r["error"])[(len(rs) - 1) // 2]  # the median's run
             for kind, rs in runs.items()}
    return shown, scale + ("; each panel the seed of median error" if len(runs["ReLU"]) > 1 else "")


def table_33(results, image_runs, dataset, sizes):
    """Table 3.3 (the paper's accuracies, this run's, the store's), then TMAF's gain over
    ReLU with one and two hidden layers. image_runs: {(kind, depth): this run's result, seed
    0}; sizes: S["images"], this run's (training images, test images, epochs, width).
    -> ({"kind, depth hidden": [runs]}, where): the runs the verdicts read, for the curves."""
    n_train, n_test, epochs, width = sizes
    label = lambda s: f"{s['kind']}, {s['depth']} hidden"  # noqa: E731
    held = held_whole(trials, "tmaf-images", label, lambda r: r)
    labels = [f"{kind}, {depth} hidden" for depth in trials.PAPER_T33 for kind in ("ReLU", "TMAF")]
    whole = all(name in held for name in labels)  # every net at every depth
    full = trials.SIZES["full"]["images"]
    acc = {name: [100 * r["accuracy"] for r in held[name]] for name in labels} if whole else {}
    rows, store_rows = [("test accuracy %", "ReLU", "TMAF")], []
    for depth, paper in trials.PAPER_T33.items():
        rows += [(f"paper, {depth} hidden", *paper),
                 (f"this run, {depth} hidden", *(f"{100 * image_runs[kind, depth]['accuracy']:.2f}"
                                                 for kind in ("ReLU", "TMAF")))]
        cell = [acc[f"{kind}, {depth} hidden"] if whole else None for kind in ("ReLU", "TMAF")]
        store_rows.append((f"store, {depth} hidden", *(
            f"{np.mean(a):.2f} +- {np.std(a, ddof=1):.2f}" if a else "-" for a in cell)))
    print(f"\nTable 3.3: the paper on MNIST, ours on {dataset} (this run: {n_train} training and "
          f"{n_test} test images, width {width}, {epochs} epochs)")
    _print_split(rows + store_rows, len(store_rows),
                 f"(store: {len(held.get(labels[0], []))} seeds, mean +- std, {full[0]} "
                 f"training images, width {full[3]}, {full[2]} epochs"
                 + ("" if whole else "; not held whole, so the verdicts read this run") + ")")
    runs = held if whole else {f"{kind}, {depth} hidden": [run]
                               for (kind, depth), run in image_runs.items()}
    for depth, (paper_relu, paper_tmaf) in trials.PAPER_T33.items():
        relu, tmaf = ([100 * r["accuracy"] for r in runs[f"{kind}, {depth} hidden"]]
                      for kind in ("ReLU", "TMAF"))
        gain = float(np.mean(tmaf) - np.mean(relu))
        if whole:
            se, source = verdicts.mean_difference_se(tmaf, relu), f"store, {len(tmaf)} seeds each"
        else:  # one run: two binomial proportions on the same test images
            se, source = verdicts.difference_se(relu[0] / 100, tmaf[0] / 100, n_test), "this run"
        paper = paper_tmaf - paper_relu
        results.add(f"T3.3 {depth} hidden: TMAF - ReLU", f"{gain:+.2f} pts",
                    verdicts.gain(gain, paper, se), rule=GAIN_RULE,
                    evidence=verdicts.Evidence(len(tmaf), gain, source, se=se, fmt="{:.2f}"),
                    measured=f"ours {gain / se:+.1f} se, the paper's {(paper - gain) / se:.1f} se "
                             "above it")
    return runs, (f"store: {len(runs[labels[0]])} seeds of {full[2]} epochs, mean and range"
                  if whole else f"this run: one seed, {epochs} epochs")


def step_cost(results, cost, steps, repeats):
    """Section 7: a TMAF step's cost "comparable" to ReLU's. cost: trials.step_cost's, from
    `steps` steps and `repeats` repeats of the activation alone (this run's timing)."""
    act_ms, wall_ms = cost["activation_cpu"], cost["step_wall"]
    relu_step_ms = cost["step_cpu"]["ReLU"]
    for kind in ("TMAF", "tri-TMAF"):
        ratio = 1 + 2 * (act_ms[kind] - act_ms["ReLU"]) / relu_step_ms  # the lesson's lower bound
        direct, alone = wall_ms[kind] / wall_ms["ReLU"], act_ms[kind] / act_ms["ReLU"]
        results.add(f"step cost {kind}/ReLU", f">= {ratio:.2f}x, {direct:.2f}x",
                    verdicts.comparable_cost(ratio, direct), rule=COST_RULE,
                    evidence=f"lower bound, wall ratio: minima of n={repeats} activation and "
                             f"n={steps} step timings, no spread; this run",
                    measured=f"the activation alone costs {alone:.1f}x ReLU's")
