"""Lesson 1's figures (DAC): each function takes the lesson's numbers and returns a Figure
(growth_table, costs_text and fits_table, what the lesson prints, return text)."""
import matplotlib.pyplot as plt
import numpy as np

BASE, DAC = "tab:orange", "tab:blue"  # the paper's colours: baseline orange, DAC blue


def _points(ax, x, y, labels):
    """Figure 7's points: label 0 white, label 1 black."""
    ax.scatter(x, y, c=["white" if v == 0 else "black" for v in labels], edgecolors="k", s=60,
               zorder=3)


def figure7a_hand(stages, y, outputs):
    """Figure 7a's stages, title -> points (the points, plus the unit's biases, after ReLU),
    then the unit's outputs w . ReLU(x + b) against the threshold 1."""
    fig, axes = plt.subplots(1, len(stages) + 1, figsize=(13, 3.2))
    for ax, (title, P) in zip(axes, stages.items()):
        _points(ax, P[:, 0], P[:, 1], y)
        ax.axhline(0, color="gray", lw=0.5)
        ax.axvline(0, color="gray", lw=0.5)
        ax.set_title(title)
        ax.set_xlim(-1, 2.5)
        ax.set_ylim(-1, 3)
    _points(axes[-1], outputs, np.zeros(len(outputs)), y)
    axes[-1].axvline(1, color="blue")
    axes[-1].set_title("(iv) w . ReLU(...), threshold 1")
    return fig


def figure7a_learned(X, y, t, curves):
    """Learned units along the diagonal (t, t) through Figure 7a's points;
    curves: label -> the unit's output at each t, the DAC unit's first."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for (label, values), color in zip(curves.items(), (DAC, BASE)):
        ax.plot(t, values, label=label, color=color)
    _points(ax, X[:, 0], y, y)
    ax.axhline(0.5, color="gray", ls="--", lw=0.8, label="threshold 0.5")
    ax.set_xlabel("t, the point (t, t)")
    ax.set_ylabel("output")
    ax.set_title("Figure 7a, this run's trained units on the three collinear points")
    ax.legend(fontsize=7)
    return fig


def theorem_c1(x, target, fits, k):
    """A random PL_k and the fits of it, each minus the PL_k's best straight line;
    fits: label -> residual at x."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(x, target, "k", lw=3, alpha=0.3, label=f"random PL_{k}, seed 0")
    for label, residual in fits.items():
        ax.plot(x, residual, lw=1, label=label)
    ax.legend(fontsize=7)
    ax.set_title(f"Theorem C.1, this run's fits of a random PL_{k}, its best straight line "
                 "subtracted", fontsize=9)
    return fig


def granular_masking(shared_b, shared_mask, mask):
    """The ReLU masks phi'(.) side by side: a standard layer's (one per input j, the
    same for every unit i) and a DAC layer's (one per connection)."""
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.6))
    for ax, M, title in ((axes[0], shared_mask, f"standard, b = {shared_b}: one mask per input j"),
                         (axes[1], mask, "DAC: one mask per connection (i, j)")):
        ax.imshow(M, cmap="gray", vmin=0, vmax=1)
        for (i, j), v in np.ndenumerate(M):
            ax.text(j, i, f"{v:.0f}", ha="center", va="center", color="red")
        ax.set_xticks(range(M.shape[1]))
        ax.set_yticks(range(M.shape[0]))
        ax.set_xlabel("input j")
        ax.set_ylabel("unit i")
        ax.set_title(title, fontsize=8)
    return fig


def _mean_se(values):
    """Mean and standard error of the mean (None from one value) of values."""
    values = np.asarray(values, dtype=float)
    return values.mean(), (values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else None)


def regression(mses, source):
    """Left: mean log test MSE over seeds at matched parameters, against the baseline width
    w (Figure 3); right: the change of mean log test MSE from doubling the parameters by
    weights or by biases (Figure 4). Error bars: one standard error over seeds, as the
    verdicts read them. mses: (w, net) -> test MSEs over seeds; source: whose runs."""
    widths = sorted({w for w, _ in mses})
    logs = {key: np.log(v) for key, v in mses.items()}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, marker, color in (("base w", "o", BASE), ("DAC w/sqrt2", "s", DAC)):
        stats = [_mean_se(logs[w, label]) for w in widths]
        axes[0].errorbar(widths, [m for m, _ in stats], yerr=[se or 0 for _, se in stats],
                         marker=marker, color=color, capsize=3, label=label)
    axes[0].set_xscale("log", base=2)
    axes[0].set_xticks(widths, [str(w) for w in widths])
    axes[0].set_xlabel("baseline width w (the DAC twin: same parameters)")
    axes[0].set_ylabel("mean log test MSE")
    axes[0].set_title("matched parameters (Figure 3)")
    axes[0].legend()
    pos = np.arange(len(widths))
    for shift, net, label, color in ((-0.2, "base w*sqrt2", "double by weights (width x sqrt 2)", BASE),
                                     (0.2, "DAC w", "double by biases (DAC at width w)", DAC)):
        stats = [_mean_se(logs[w, net] - logs[w, "base w"].mean()) for w in widths]
        axes[1].bar(pos + shift, [m for m, _ in stats], 0.4, yerr=[se or 0 for _, se in stats],
                    capsize=3, label=label, color=color)
    axes[1].axhline(0, color="k", lw=0.5)
    axes[1].set_xticks(pos, [str(w) for w in widths])
    axes[1].set_xlabel("baseline width w")
    axes[1].set_ylabel("change of mean log test MSE (nats)")
    axes[1].set_title("doubling the parameters (Figure 4)")
    axes[1].legend(fontsize=7, loc="upper left")
    n = len(next(iter(mses.values())))
    fig.suptitle(f"{source}: {n} seeds per net; error bars one standard error over seeds"
                 if n > 1 else f"{source}: one seed per net, no error bars", fontsize=9)
    return fig


def vgg_curves(curves, source):
    """Validation error (%) and training loss per epoch of the baseline and the DAC
    convnet: the mean over runs, shaded from its minimum to its maximum.
    curves: net -> [one fit history per run]; source: whose runs."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for name, color in (("baseline", BASE), ("DAC", DAC)):
        for ax, key, scale in ((axes[0], "val_metric", -100), (axes[1], "train_loss", 1)):
            values = np.array([h[key] for h in curves[name]], dtype=float) * scale
            values = values + 100 if scale < 0 else values
            epochs = np.arange(1, values.shape[1] + 1)
            ax.plot(epochs, values.mean(0), color=color, marker=".", label=name)
            if len(values) > 1:
                ax.fill_between(epochs, values.min(0), values.max(0), color=color, alpha=0.2)
    axes[0].set_ylabel("validation error %")
    axes[1].set_ylabel("training loss")
    for ax in axes:
        ax.set_xlabel("epoch")
        ax.legend()
    n = len(curves["DAC"])
    fig.suptitle(f"Fashion-MNIST, {source}: mean of {n} runs per net, shaded min to max"
                 if n > 1 else f"Fashion-MNIST, {source}: one run per net", fontsize=9)
    return fig


def growth_table(counted):
    """Section 1's counts as text; counted: layer name -> (section4_counts' dict,
    (the formulas' parameter and FLOP growth), the plain loop's FLOP growth or None)."""
    lines = [f"{'layer':<22}{'params x':>12}{'formula':>10}{'FLOPs x':>12}{'formula':>10}"
             f"{'by loop':>10}"]
    for name, (c, (formula_p, formula_f), loop) in counted.items():
        by_loop = "" if loop is None else f"{loop:.4f}"
        lines.append(f"{name:<22}{c['parameter_increase']:>12.4f}{formula_p:>10.4f}"
                     f"{c['flop_increase']:>12.4f}{formula_f:>10.4f}{by_loop:>10}")
    return "\n".join(lines)


def fits_table(errors, n_params, wins):
    """Theorem C.1's fits as text, one line per model: its parameter count, the error of
    each random PL_k, how many are below 1e-3. errors: model -> errors; n_params, wins: model -> int."""
    return "\n".join(f"{name:<34}{n_params[name]:>4} parameters   errors "
                     f"{' '.join(f'{e:.0e}' for e in errs)}   below 1e-3: {wins[name]}/{len(errs)}"
                     for name, errs in errors.items())


def costs_text(net, params, flops_section4, flops_ours):
    """A net's growth, DAC twin over baseline, as network_costs in lesson 1 counts it."""
    return (f"{net}, counted: parameters x{params:.3f}; FLOPs x{flops_section4:.3f} "
            f"(section 4's convention), x{flops_ours:.3f} (as our code computes)")
