"""What the tests that run one property over every op share: each op of tinyunits.ops as
a small case (OPS), each way of handing an op two operands (BINARY), the leaves they are
built from, and an optimiser's step. A new op missing from OPS fails test_tensor.py's
coverage test."""
import numpy as np

import tinyunits as tu
from tinyunits import ops, optim


def leaf(shape, seed=0, dtype=None):
    """A leaf requiring grad with values in [0.5, 1.5): positive, off every kink and tie."""
    values = np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)
    return tu.tensor(values, requires_grad=True, dtype=dtype)


def device(values, dtype=None):
    """values as an array of the backend (on strict and CuPy, a device array)."""
    return tu.backend.asarray(np.asarray(values, dtype=dtype))


def bn_stats(n=3):
    return device(np.zeros(n), "float32"), device(np.ones(n), "float32")


# every op: (build from leaves, input shapes, the op that must name the change)
OPS = {
    "add": (lambda a, b: ops.add(a, b), [(2, 3), (2, 3)], "Add"),
    "sub": (lambda a, b: ops.sub(a, b), [(2, 3), (3,)], "Sub"),
    "mul": (lambda a, b: ops.mul(a, b), [(2, 3), (2, 3)], "Mul"),
    "div": (lambda a, b: ops.div(a, b), [(2, 3), (2, 3)], "Div"),
    "neg": (lambda a: ops.neg(a), [(2, 3)], "Neg"),
    "pow": (lambda a: ops.pow(a, 3), [(2, 3)], "Pow"),
    "matmul": (lambda a, b: ops.matmul(a, b), [(2, 3), (3, 4)], "MatMul"),
    "linear": (lambda x, W, b: ops.linear(x, W, b), [(4, 3), (2, 3), (2,)], "Linear"),
    "exp": (lambda a: ops.exp(a), [(2, 3)], "Exp"),
    "log": (lambda a: ops.log(a), [(2, 3)], "Log"),
    "abs": (lambda a: ops.abs(a), [(2, 3)], "Abs"),
    "relu": (lambda a: ops.relu(a), [(2, 3)], "ReLU"),
    "leaky_relu": (lambda a: ops.leaky_relu(a), [(2, 3)], "LeakyReLU"),
    "tanh": (lambda a: ops.tanh(a), [(2, 3)], "Tanh"),
    "sigmoid": (lambda a: ops.sigmoid(a), [(2, 3)], "Sigmoid"),
    "gelu": (lambda a: ops.gelu(a), [(2, 3)], "GELU"),
    "sum": (lambda a: ops.sum(a, axis=1), [(2, 3)], "Sum"),
    "mean": (lambda a: ops.mean(a, axis=0), [(2, 3)], "Mean"),
    "max": (lambda a: ops.max(a, axis=1), [(2, 3)], "Max"),
    # views: the op that reads the view (the closing sum) sees a change made in place
    # first; after `data =` the view no longer shares the array, and the op sees it
    "reshape": (lambda a: ops.reshape(a, (3, 2)), [(2, 3)], "(?:Sum|Reshape)"),
    "transpose": (lambda a: ops.transpose(a), [(2, 3)], "(?:Sum|Transpose)"),
    "getitem": (lambda a: ops.getitem(a, (slice(None), [0, 2])), [(2, 3)], "GetItem"),
    "concatenate": (lambda a, b: ops.concatenate([a, b], axis=0), [(2, 3), (1, 3)],
                    "Concatenate"),
    "pad": (lambda a: ops.pad(a, ((1, 1), (0, 2))), [(2, 3)], "Pad"),
    "conv2d": (lambda x, W, b: ops.conv2d(x, W, b, padding=1), [(2, 2, 4, 4), (3, 2, 3, 3),
                                                                 (3,)], "Conv2d"),
    "max_pool2d": (lambda a: ops.max_pool2d(a, 2), [(1, 2, 4, 4)], "MaxPool2d"),
    "avg_pool2d": (lambda a: ops.avg_pool2d(a, 2), [(1, 2, 4, 4)], "AvgPool2d"),
    "global_avg_pool2d": (lambda a: ops.global_avg_pool2d(a), [(1, 2, 4, 4)], "Mean"),
    "batch_norm": (lambda x, g, b: ops.batch_norm(x, g, b, *bn_stats()),
                   [(4, 3), (3,), (3,)], "BatchNorm"),
    "layer_norm": (lambda x, g, b: ops.layer_norm(x, 1, g, b), [(4, 3), (3,), (3,)],
                   "LayerNorm"),
    "dropout": (lambda a: ops.dropout(a, 0.5), [(2, 3)], "Dropout"),
    "cross_entropy": (lambda z: ops.cross_entropy(z, tu.tensor([0, 2, 1, 0])), [(4, 3)],
                      "SoftmaxCrossEntropy"),
    "mse_loss": (lambda p, t: ops.mse_loss(p, t), [(2, 3), (2, 3)], "MSE"),
}


def sgd_step(t):
    """One SGD step on t alone, from a gradient of ones: a change to t, as training makes."""
    t.grad = tu.backend.get_array_module(t.data).ones_like(t.data)
    optim.SGD([t], lr=0.1).step()


# every op that takes two operands, as operators (both orders) and as functions
BINARY = {
    "a + b": (lambda a, b: a + b, "Add"), "b + a": (lambda a, b: b + a, "Add"),
    "a - b": (lambda a, b: a - b, "Sub"), "b - a": (lambda a, b: b - a, "Sub"),
    "a * b": (lambda a, b: a * b, "Mul"), "b * a": (lambda a, b: b * a, "Mul"),
    "a / b": (lambda a, b: a / b, "Div"), "b / a": (lambda a, b: b / a, "Div"),
    "a @ b": (lambda a, b: a @ b, "MatMul"), "b @ a": (lambda a, b: b @ a, "MatMul"),
    "ops.add": (lambda a, b: ops.add(a, b), "Add"), "ops.sub": (lambda a, b: ops.sub(b, a), "Sub"),
    "ops.mul": (lambda a, b: ops.mul(a, b), "Mul"), "ops.div": (lambda a, b: ops.div(b, a), "Div"),
    "ops.matmul": (lambda a, b: ops.matmul(a, b), "MatMul"),
    "ops.linear": (lambda a, b: ops.linear(a, b), "Linear"),
    "ops.linear bias": (lambda a, b: ops.linear(a, a, _row(b)), "Linear"),
    "ops.mse_loss": (lambda a, b: ops.mse_loss(a, b), "MSE"),
    "ops.concatenate": (lambda a, b: ops.concatenate([a, b]), "Concatenate"),
    "ops.conv2d": (lambda a, b: ops.conv2d(a.reshape(1, 1, 2, 2), _square(b)), "Conv2d"),
    "ops.batch_norm": (lambda a, b: ops.batch_norm(a, _row(b), None, *bn_stats(2)),
                       "BatchNorm"),
    "ops.layer_norm": (lambda a, b: ops.layer_norm(a, 1, _row(b), _row(b)), "LayerNorm"),
}


def _square(b):  # a (2, 2) operand as a 1-channel 2x2 kernel; anything else as it is
    return b.reshape(1, 1, 2, 2) if isinstance(b, tu.Tensor) else b


def _row(b):  # a (2, 2) operand's first row: a (2,) scale
    return b[0] if isinstance(b, tu.Tensor) else b
