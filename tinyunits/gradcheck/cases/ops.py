"""Gradcheck cases for every primitive op but the engine exercises' (Mul, Div, Sigmoid,
MatMul, SoftmaxCrossEntropy: engine.py checks those over their spaces)."""
from ... import backend, ops
from . import data, register


def _unary(name, fn, **kw):
    register(name)(lambda: (fn, [data(3, 4, **kw)]))


_unary("exp", ops.exp)
_unary("log", ops.log, low=0.5, high=2.0)
_unary("abs", ops.abs, margin=0.1)
_unary("relu", ops.relu, margin=0.1)
_unary("leaky_relu", lambda x: ops.leaky_relu(x, 0.1), margin=0.1)
_unary("tanh", ops.tanh)
_unary("gelu", ops.gelu, low=-3, high=3)
_unary("neg", ops.neg)
_unary("pow", lambda x: ops.pow(x, 3))
_unary("sum_axis", lambda x: ops.sum(x, axis=1))
_unary("sum_keepdims", lambda x: ops.sum(x, axis=0, keepdims=True))
_unary("mean_all", ops.mean)
_unary("max_axis", lambda x: ops.max(x, axis=1))
_unary("max_all", ops.max)
_unary("sum_axis_list", lambda x: ops.sum(x, axis=[-1, 0]))
_unary("mean_axis_tuple_keepdims", lambda x: ops.mean(x, axis=(-2,), keepdims=True))
_unary("max_axis_list", lambda x: ops.max(x, axis=[1, 0], keepdims=True))
_unary("reshape", lambda x: ops.reshape(x, (2, 6)))
_unary("transpose", ops.transpose)
_unary("getitem_slice", lambda x: x[1:, ::2])
_unary("getitem_repeated", lambda x: x[backend.asarray([0, 2, 0])])
_unary("pad", lambda x: ops.pad(x, ((1, 0), (2, 1))))


def _binary(name, fn, b_shape=(3, 4), **kw):
    register(name)(lambda: (fn, [data(3, 4), data(*b_shape, **kw)]))


_binary("add_broadcast", ops.add, b_shape=(4,))
_binary("sub_broadcast", ops.sub, b_shape=(3, 1))
_binary("concatenate", lambda a, b: ops.concatenate([a, b], axis=0), b_shape=(2, 4))


@register("linear")
def _():
    return ops.linear, [data(5, 4), data(3, 4), data(3)]


@register("conv2d")
def _():
    return lambda x, W, b: ops.conv2d(x, W, b), [data(2, 3, 5, 5), data(4, 3, 3, 3), data(4)]


@register("conv2d_stride2_pad1")
def _():
    return (lambda x, W, b: ops.conv2d(x, W, b, stride=2, padding=1),
            [data(2, 2, 5, 6), data(3, 2, 3, 3), data(3)])


@register("max_pool2d")
def _():
    # distinct values: a tie inside a window would make the maximum non-differentiable
    x = backend.host_rng().permutation(2 * 2 * 5 * 4).reshape(2, 2, 5, 4) / 10.0
    return lambda x: ops.max_pool2d(x, 2), [backend.asarray(x)]


@register("avg_pool2d")
def _():
    return lambda x: ops.avg_pool2d(x, 2), [data(2, 2, 5, 4)]


@register("global_avg_pool2d")
def _():
    return ops.global_avg_pool2d, [data(2, 3, 4, 4)]


@register("batch_norm_train")
def _():
    rm, rv = backend.asarray([0.0] * 3), backend.asarray([1.0] * 3)
    return (lambda x, g, b: ops.batch_norm(x, g, b, rm, rv, training=True),
            [data(6, 3), data(3, low=0.5, high=1.5), data(3)])


@register("batch_norm2d_noshift")
def _():
    rm, rv = backend.asarray([0.0] * 2), backend.asarray([1.0] * 2)
    return (lambda x, g: ops.batch_norm(x, g, None, rm, rv, training=True),
            [data(3, 2, 3, 3), data(2, low=0.5, high=1.5)])


@register("batch_norm_eval")
def _():
    rm, rv = backend.asarray([0.1, -0.2, 0.3]), backend.asarray([0.5, 1.5, 2.0])
    return (lambda x, g, b: ops.batch_norm(x, g, b, rm, rv, training=False),
            [data(4, 3), data(3), data(3)])


@register("layer_norm_affine")
def _():
    return (lambda x, g, b: ops.layer_norm(x, 2, g, b),
            [data(3, 2, 4), data(2, 4, low=0.5, high=1.5), data(2, 4)])


@register("layer_norm_plain")
def _():
    return lambda x: ops.layer_norm(x, 1), [data(4, 6)]


@register("dropout")
def _():
    def fn(x):
        backend.manual_seed(3)  # the same mask on every evaluation
        return ops.dropout(x, 0.3)
    return fn, [data(4, 5)]


@register("cross_entropy")
def _():
    labels = backend.asarray([0, 2, 1, 2])
    return lambda z: ops.cross_entropy(z, labels), [data(4, 3, low=-3, high=3)]


@register("mse_loss")
def _():
    return ops.mse_loss, [data(4, 3), data(4, 3)]
