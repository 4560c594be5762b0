"""Lesson 1's figures (DAC): each function takes the lesson's numbers and returns a Figure
(growth_table, costs_text and fits_table, what the lesson prints, return text)."""
import matplotlib.pyplot as plt
import numpy as np


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
    curves: label -> the unit's output at each t."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for label, values in curves.items():
        ax.plot(t, values, label=label)
    _points(ax, X[:, 0], y, y)
    ax.axhline(0.5, color="gray", ls="--", lw=0.8, label="threshold 0.5")
    ax.set_xlabel("t, the point (t, t)")
    ax.set_ylabel("output")
    ax.set_title("Figure 7a learned: one unit on the three collinear points")
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
    ax.set_title("Theorem C.1: fits of a random PL_k, its best straight line subtracted", fontsize=9)
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


def regression(widths, reg, gain_w, gain_b):
    """Left: test MSE against parameters at matched counts (Figure 3); right: the change
    of log test MSE from doubling the parameters by weights or by biases (Figure 4's
    question). reg: (width, label) -> (test MSE, parameters)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, marker, color in (("base w", "o", "tab:orange"), ("DAC w/sqrt2", "s", "tab:blue")):
        axes[0].plot([reg[w, label][1] for w in widths], [reg[w, label][0] for w in widths],
                     marker=marker, color=color, label=label)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("parameters")
    axes[0].set_ylabel("test MSE")
    axes[0].set_title("matched parameters (Figure 3)")
    axes[0].legend()
    pos = np.arange(len(widths))
    axes[1].bar(pos - 0.2, gain_w, 0.4, label="double by weights (width x sqrt 2)", color="tab:orange")
    axes[1].bar(pos + 0.2, gain_b, 0.4, label="double by biases (DAC)", color="tab:blue")
    axes[1].axhline(0, color="k", lw=0.5)
    axes[1].set_xticks(pos, [str(w) for w in widths])
    axes[1].set_xlabel("baseline width w")
    axes[1].set_ylabel("change of log test MSE (nats)")
    axes[1].set_title("Figure 4's question")
    axes[1].set_ylim(1.8 * min(list(gain_w) + list(gain_b) + [-0.01]),
                     max(list(gain_w) + list(gain_b) + [0.0]) + 0.01)
    axes[1].legend(fontsize=7, loc="lower center")
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
