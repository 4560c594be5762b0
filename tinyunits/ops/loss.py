"""Losses: softmax cross-entropy on integer labels, and mean squared error.

cross_entropy checks that every label lies in [0, classes): reading the labels'
min and max back from the device is a host sync, every call. A training loop
that has checked its whole data set once (fit, evaluate) passes its batches as
CheckedLabels, which carry the data set's bound: the loss then compares that
bound with the number of classes and reads nothing back.
"""
from .. import validate
from .. import backend
from ..backend import get_array_module
from ..function import Function
from ..tensor import Tensor
from .reduction import wide_mean, wide_sum


class SoftmaxCrossEntropy(Function):
    """mean_n [ logsumexp(z_n) - z_n[y_n] ] over the N rows of z, with labels y.

    BEGIN DERIVATION engine_softmax_ce
    Backward: dL/dz = (softmax(z) - onehot(y)) / N.
    END DERIVATION engine_softmax_ce
    """

    def __init__(self, labels, high=None):
        self.labels, self.high = labels, high

    def forward(self, z):
        xp = get_array_module(z)
        _check_labels(self.labels, z, self.high)
        shifted = z - z.max(axis=1, keepdims=True)  # stable: exp never overflows
        e = xp.exp(shifted)
        s = wide_sum(e, 1, keepdims=True)  # float32 added up in float64 (ops/reduction.py)
        self.softmax = e / s
        n = z.shape[0]
        picked = shifted[xp.arange(n), self.labels]
        return wide_mean(xp.log(s[:, 0]) - picked)

    def backward(self, g):
        # BEGIN SOLUTION engine_softmax_ce
        xp = get_array_module(g)
        n = self.softmax.shape[0]
        dz = self.softmax.copy()
        dz[xp.arange(n), self.labels] -= 1
        return (dz * (g / n),)
        # END SOLUTION engine_softmax_ce


class CheckedLabels(Tensor):
    """Integer labels from a data set whose labels were all checked, once, to lie in
    [0, high): cross_entropy trusts the bound instead of reading these back."""

    __slots__ = ("high",)

    def __init__(self, data, high: int):
        super().__init__(data)
        self.high = high


def label_range(labels):
    """(min, max) of integer labels as Python ints: one read-back from the device."""
    return labels.min().item(), labels.max().item()


def _check_labels(labels, z, high=None):
    if z.ndim != 2:
        raise ValueError(f"cross_entropy: expected logits (N, classes), got {z.shape}")
    if labels.shape != z.shape[:1]:
        raise ValueError(f"cross_entropy: expected labels ({z.shape[0]},) for logits "
                         f"{z.shape}, got {labels.shape}")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: expected integer labels, got {labels.dtype}")
    if high is not None:  # checked once for the whole data set: no read-back
        if high > z.shape[1]:
            raise ValueError(f"cross_entropy: labels must lie in [0, {z.shape[1]}), got a "
                             f"data set whose labels reach {high - 1}")
    elif labels.size:
        low, top = label_range(labels)
        if low < 0 or top >= z.shape[1]:
            raise ValueError(f"cross_entropy: labels must lie in [0, {z.shape[1]}), got "
                             f"[{low}, {top}]")


class MSE(Function):
    """mean((pred - target)^2) over every element."""

    def forward(self, pred, target):
        if pred.shape != target.shape:
            raise ValueError(f"mse_loss: pred {pred.shape} and target {target.shape} "
                             "differ (no silent broadcasting in a loss)")
        self.diff = pred - target
        return wide_mean(self.diff * self.diff)

    def backward(self, g):
        gd = self.diff * (2 * g / self.diff.size)
        return gd, -gd


def cross_entropy(logits, labels):
    high = labels.high if isinstance(labels, CheckedLabels) else None
    labels = labels.data if isinstance(labels, Tensor) else labels
    if not backend.is_array(labels):
        validate.fail("cross_entropy", "labels", "a Tensor or an array of class indices",
                      labels, TypeError)
    # a copy: the labels are not an input of the graph, so a change to them before
    # backward would go unseen by the version counters (and give another loss's gradient)
    return SoftmaxCrossEntropy(labels.copy(), high)(logits)


def mse_loss(pred, target):
    return MSE()(pred, target)
