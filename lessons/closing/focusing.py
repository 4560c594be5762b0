"""Lesson 5's closing rows (lessons/closing/__init__.py says what each function does)."""
import os

import numpy as np

from _lesson import held_whole, stored
from lessons import verdicts
from lessons.trials import focusing as trials


def moved(run):
    """(foci that moved onto the informative inputs, foci that started outside them)."""
    return verdicts.moved_onto(run["mu"][0], run["mu"][-1], run["lo"], run["hi"])


def travelled(runs):
    """How far (|mu's end - start|) the foci that started outside the informative inputs
    moved, and how far outside they started: (those that ended inside, those that stayed
    outside, the starting distances of those that stayed)."""
    onto, stayed, away = [], [], []
    for run in runs:
        lo, hi = run["lo"], run["hi"]
        for start, end in zip(run["mu"][0], run["mu"][-1]):
            if not lo <= start <= hi:
                (onto if lo <= end <= hi else stayed).append(abs(float(end - start)))
                if not lo <= end <= hi:
                    away.append(float(max(lo - start, start - hi)))
    return onto, stayed, away


def stuck(runs):
    """The travelled() of `runs` in words, for a reason."""
    onto, stayed, away = travelled(runs)
    if not stayed:
        return "every one moved onto them"
    text = (f"the {len(stayed)} that stayed outside had started a median {np.median(away):.3f} "
            f"outside the informative inputs and moved a median {np.median(stayed):.3f} (at most "
            f"{max(stayed):.3f})")
    return text + (f"; the {len(onto)} that crossed moved {min(onto):.3f}-{max(onto):.3f}"
                   if onto else "")


def share(k, n, source):
    """The Evidence of k of n foci: n, the share k / n and its standard error as a
    binomial proportion (sqrt(p (1 - p) / n)), the source."""
    p = k / n if n else float("nan")
    return verdicts.Evidence(max(n, 1), p, source, se=float(np.sqrt(p * (1 - p) / n)) if n else None,
                             fmt="{:.2f}")


def learning_to_focus(results, ltf, mode):
    """Figure 2: most foci that started outside the informative inputs end inside them,
    pooled over the seeds; the apertures widen. ltf: {side: this run's runs, by seed};
    mode: this run's (for the epochs a reason cites). Seed 0, the figure's run, is shown
    beside them with no verdict of its own: the seeds differ too much for one to say it."""
    held = stored(trials, "focusing-ltf", lambda s: s["side"],
                  {"moved on": lambda r: moved(r)[0], "started outside": lambda r: moved(r)[1]},
                  {("left", "moved on"): "most (Fig. 2b)", ("both", "moved on"): "most (Fig. 2a)"},
                  "{:.2f}", "foci per seed that started outside the informative inputs, and of "
                  "them those that moved onto them")
    rule = (f"more than {verdicts.MOST:.0%} of the foci that started outside the informative "
            "inputs end inside them, pooled over the seeds")
    whole = len(held) == 2 * len(ltf)  # both quantities of both sides: the whole sweep
    runs = held_whole(trials, "focusing-ltf", lambda s: s["side"], lambda r: r) if whole else ltf
    source = "store" if whole else "this run"
    k, n = moved(ltf["left"][0])  # seed 0, the run in the figure
    per_seed = [a / b for a, b in map(moved, runs["left"]) if b]
    results.add("noise left, seed 0: foci onto informative", f"{k} of {n}", None,
                evidence=f"this run's seed 0, the figure's; one run, where the share per seed "
                         f"ranges {min(per_seed):.2f}-{max(per_seed):.2f} over {len(per_seed)} "
                         f"seeds ({source})")
    for side, side_runs in runs.items():
        k, n = (int(sum(c)) for c in zip(*map(moved, side_runs)))
        seeds = f"{len(side_runs)} seed{'s' * (len(side_runs) != 1)}"
        results.add(f"noise {side}: foci onto informative", f"{k} of {n}",
                    verdicts.most(k, n), rule=rule, evidence=share(k, n, f"{source}, {seeds}"),
                    measured=f"{n - k} of the {n} foci that started outside the informative inputs "
                             f"ended outside them ({source}, {seeds} of "
                             f"{trials.SIZES['full' if whole else mode]['ltf'][1]} epochs): "
                             + stuck(side_runs))
    every = runs["left"] + runs["both"]
    wider, n_foci = sum(int((run["sigma"][-1] > 0.08).sum()) for run in every), 4 * len(every)
    results.add("apertures widened (sigma > 0.08)", f"{wider} of {n_foci}",
                verdicts.most(wider, n_foci), evidence=share(wider, n_foci, f"{source}, both sides"),
                rule=f"more than {verdicts.MOST:.0%} of the foci end with sigma above its start, "
                     "0.08",
                measured=f"{n_foci - wider} of {n_foci} foci ended no wider than they started "
                         f"({source})")


def random_trials(results, draws):
    """Figure 3: focus better on noisy sets, similar on clean ones. draws: this run's, each
    {"focus", "dense", "noisy"} best test accuracies. -> (the draws the verdicts read, their
    source): the store's 750 when it holds them all, else this run's (the figure plots them)."""
    held = stored(trials, trials.SWEEP, lambda s: "noisy" if s["n_noise"] > 0 else "clean",
                  lambda r: 100 * (r["focus"] - r["dense"]),
                  {"noisy": "focus better", "clean": "similar"}, "{:+.2f}",
                  "focus - dense, best test accuracy, in points")
    whole = len(held) == 2
    read = held_whole(trials, trials.SWEEP, lambda s: "all", lambda r: r)["all"] if whole else draws
    source = "store" if whole else "this run"
    rules = {"noisy": (verdicts.better, f"the mean focus - dense gap is above "
                                        f"{verdicts.NOISE_SE:g} standard errors of the mean"),
             "clean": (lambda gaps: verdicts.similar(np.mean(gaps)),
                       f"|mean focus - dense| < {verdicts.SIMILAR_PTS:g} pts")}
    for label, (holds, rule) in rules.items():
        gaps = [100 * (t["focus"] - t["dense"]) for t in read if t["noisy"] == (label == "noisy")]
        here = [100 * (t["focus"] - t["dense"]) for t in draws if t["noisy"] == (label == "noisy")]
        gap = float(np.mean(gaps)) if gaps else float("nan")
        std = float(np.std(gaps, ddof=1)) if len(gaps) > 1 else 0.0
        ours = f"{gap:+.2f} pts"
        if whole:
            ours += f" (this run {np.mean(here):+.2f}, n={len(here)})" if here else ""
        results.add(f"random trials, {label}: focus - dense", ours, holds(gaps) if gaps else False,
                    rule=rule,
                    evidence=verdicts.Evidence.of(gaps, source, "{:.2f}") if gaps else "no draws",
                    measured=f"mean {gap:+.2f} pts, std {std:.2f} (standard error "
                             f"{std / np.sqrt(max(len(gaps), 1)):.2f}), over {len(gaps)} {label} "
                             f"draws ({source}); focus better in {sum(g > 0 for g in gaps)}")
    return read, source


def fashion(results, curves, mode):
    """Table 2: the trained focused nets above Dense. curves: {net: this run's test accuracy
    per epoch, a list per repeat}; mode: this run's (for the scale a reason cites). -> (the
    curves the verdicts read, their source): the store's 5 repeats of each net when it holds
    them all, else this run's (the figure plots them)."""
    held = stored(trials, "focusing-fashion", lambda s: s["kind"],
                  lambda r: 100 * max(r["test_acc"]),
                  {kind: trials.PAPER[f"Fashion {kind}: best test acc"][0] for kind in curves},
                  "{:.2f}", "best test accuracy over the epochs, %")
    whole = len(held) == len(curves)
    read = held_whole(trials, "focusing-fashion", lambda s: s["kind"],
                      lambda r: r["test_acc"]) if whole else curves
    source = "store" if whole else "this run"
    accs = {kind: [100 * max(run) for run in runs] for kind, runs in read.items()}
    mean = {kind: float(np.mean(a)) for kind, a in accs.items()}
    scale = "{} training images, H = {}, {} epochs, {} repeat(s)".format(*np.take(
        trials.SIZES["full" if whole else mode]["fashion"], [0, 2, 3, 4]))
    n_test = trials.SIZES["full" if whole else mode]["fashion"][1]
    paper = {kind: float(trials.PAPER[f"Fashion {kind}: best test acc"][0].split()[0])
             for kind in curves}
    for kind in curves:  # the paper's claim is about its two trained focused nets
        claim = rule = None
        evidence = verdicts.Evidence.of(accs[kind], source, "{:.2f}")
        if kind in ("Focus-s", "Focus-c"):
            se = verdicts.accuracy_difference_se(accs[kind], accs["Dense"], n_test)
            gap = mean[kind] - mean["Dense"]
            claim = verdicts.gain(gap, paper[kind] - paper["Dense"], se)
            evidence = verdicts.Evidence(len(accs[kind]), gap, f"{source}; the gap to Dense, pts",
                                         se=se, fmt="{:.2f}")
            rule = (f"the gap to Dense (mean best accuracy) counts above {verdicts.NOISE_SE:g} "
                    f"standard errors (over the repeats; for one repeat, of two accuracies on "
                    f"the test images); {verdicts.GAIN_RULE}")
        results.add(f"Fashion {kind}: best test acc", f"{mean[kind]:.2f} %", claim, rule=rule,
                    evidence=evidence,
                    measured=f"{kind} {mean[kind]:.2f} % against Dense {mean['Dense']:.2f} % "
                             f"({source}: {scale}); " + (
                                 catching_up(kind) if whole and claim is not None
                                 else trials.SHORTER))
    return read, source


def catching_up(kind):
    """The paper reads Table 2 as: the dense net learns faster, the focused nets win later.
    What the store's mean test curves say of that, at --quick's length and at the last
    epoch, and each net's gain over the second half of training."""
    curves = held_whole(trials, "focusing-fashion", lambda s: s["kind"], lambda r: r["test_acc"])
    mean = {net: 100 * np.mean(curves[net], axis=0) for net in ("Dense", kind)}
    early, last = trials.SIZES["quick"]["fashion"][3], len(mean["Dense"])
    lead = {epoch: mean["Dense"][epoch - 1] - mean[kind][epoch - 1] for epoch in (early, last)}
    gain = {net: curve[-1] - curve[last // 2 - 1] for net, curve in mean.items()}
    closes = lead[last] < lead[early] and gain[kind] > gain["Dense"]
    return (f"Dense leads by {lead[early]:.2f} pt at epoch {early} and {lead[last]:.2f} at "
            f"{last}; over epochs {last // 2 + 1}-{last} {kind} gains {gain[kind]:+.2f} pt, Dense "
            f"{gain['Dense']:+.2f}: " + (
                f"the gap closes, as the paper's 'win later' says, but not in {last} epochs"
                if closes and lead[last] > 0 else
                "the gap closes, as the paper's 'win later' says" if closes else
                "the gap does not close (the paper: the focused nets win later)"))


def sparsity(results, curves, dense, source):
    """Figure 9b: pruning keeps the accuracy up to SPARSITY_CLAIM % sparsity, against the
    unpruned net's and against the dense net's. curves: one per Focus-s repeat,
    [(sparsity, accuracy %)] by rising threshold, the unpruned net first; dense: the dense
    net's last-epoch accuracy %, one per repeat; source: where both come from."""
    unpruned = [curve[0][1] for curve in curves]
    kept = [100 * verdicts.sparsity_kept(c, u - verdicts.SPARSITY_BAND)
            for c, u in zip(curves, unpruned)]
    above = [100 * verdicts.sparsity_kept(c, float(np.mean(dense))) for c in curves]
    for what, reached, against, floor, measured in (
            ("sparsity within 0.5 pt of unpruned", kept,
             f"unpruned {np.mean(unpruned):.2f} %", f"more than {verdicts.SPARSITY_BAND:g} pt "
             "under the unpruned net's", f"the accuracy first leaves the band above "
             f"{np.mean(kept):.1f} % sparsity (mean over {len(kept)} curve(s))"),
            ("sparsity with acc >= dense", above, f"dense {np.mean(dense):.2f} %",
             "under the dense net's",
             f"the focused net starts at {np.mean(unpruned):.2f} %, "
             f"{'below' if np.mean(unpruned) < np.mean(dense) else 'above'} the dense net's "
             f"{np.mean(dense):.2f} %, and stays >= it up to {np.mean(above):.1f} % sparsity")):
        results.add(what, f"{np.mean(reached):.1f} % ({against})",
                    bool(np.mean(reached) >= verdicts.SPARSITY_CLAIM),
                    evidence=verdicts.Evidence.of(reached, source, "{:.1f}"),
                    rule=f"the largest sparsity below which the accuracy never falls {floor}, "
                         f"mean over the Focus-s repeats, is >= {verdicts.SPARSITY_CLAIM:g} %",
                    measured=measured)


def fashion_runs(runs, source):
    """Each Fashion net's runs (dicts as fashion_trial returns them): the store's when it
    holds the sweep whole (source "store", as fashion() said), else runs, this run's."""
    return held_whole(trials, "focusing-fashion", lambda s: s["kind"], lambda r: r) \
        if source == "store" else runs


def step_overhead(results, times, batch):
    """Section 4.7: a focusing layer's training step at most FOCUS_OVERHEAD x a dense one's.
    times: {"dense", "focus"}: seconds of each repetition (_lesson.interleaved_times)."""
    fastest = {k: 1e3 * min(v) for k, v in times.items()}  # ms
    ratio = fastest["focus"] / fastest["dense"]
    median_ratio = float(np.median(times["focus"]) / np.median(times["dense"]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"training step 784->800, best of {len(times['dense'])}: dense {fastest['dense']:.1f} ms, "
          f"focus {fastest['focus']:.1f} ms; median ratio {median_ratio:.2f}x (load {load:.1f})")
    results.add("step time, focus / dense", f"{ratio:.2f}x (CPU, batch {batch})",
                ratio <= verdicts.FOCUS_OVERHEAD,
                evidence=f"n={len(times['dense'])} interleaved steps each; fastest ratio "
                         f"{ratio:.2f}, median {median_ratio:.2f}; this run",
                rule=f"the fastest step's ratio is at most {verdicts.FOCUS_OVERHEAD:g}x, the "
                     "largest ratio the paper reports",
                measured=f"fastest step {ratio:.2f}x, median {median_ratio:.2f}x, at a load average "
                         f"of {load:.1f} on {os.cpu_count()} cores")
