"""The engine exercises' Functions over their spaces (space.py): Mul, Div, Sigmoid,
BroadcastTo (whose backward is sum_to), MatMul and SoftmaxCrossEntropy.

A binary op's operands take every broadcast in turn: neither, the first, the
second, both (each missing what the other has); a broadcast operand has a size-1
axis, or has lost its leading axes. Sigmoid also meets a whole case of extreme
inputs, 6 <= |x| <= 14, so that a derivative clipped "for stability" shows in the
normwise error. Not beyond: the forward's tanh form, 0.5 tanh(x/2) + 0.5, holds
sigmoid(x) to an absolute 1e-16 only, so past |x| ~ 15 its central differences
are rounding noise (and below x ~ -19 it is 0).
"""
from ... import backend
from .broadcast import BroadcastTo
from ...ops.arithmetic import Div, Mul
from ...ops.elementwise import Sigmoid
from ...ops.loss import SoftmaxCrossEntropy
from ...ops.matmul import MatMul
from . import data
from .space import Call, Space, register_calls


def host(x):
    return backend.host_module().asarray(backend.to_host(x), dtype="float64")


def _full(point):
    shape = (3, 4) if point["rank"] == 2 else (2, 3, 4)
    return ((1,) + shape[1:]) if point["batch"] == "of 1" else shape


def _broadcast(shape, how, axis):
    """shape with a size-1 axis at `axis`, or (how "leading axes missing") only its last axis."""
    if how == "leading axes missing":
        return shape[-1:]
    return shape[:axis % len(shape)] + (1,) + shape[axis % len(shape) + 1:]


def operand_shapes(point):
    """(a's shape, b's shape) of a binary elementwise op at `point`."""
    full, which, how = _full(point), point["broadcast"], point["broadcast by"]
    if which == "both":  # each operand lacks what the other has
        return full[:-1] + (1,), _broadcast(full, how, -2)
    a = _broadcast(full, how, -2) if which == "first" else full
    b = _broadcast(full, how, -2) if which == "second" else full
    return a, b


BINARY = {"broadcast": ("neither", "first", "second", "both"),
          "broadcast by": ("a size-1 axis", "leading axes missing"),
          "rank": (2, 3), "batch": ("many", "of 1")}


def _binary_allowed(point):
    return point["broadcast"] != "neither" or point["broadcast by"] == "a size-1 axis"


MUL = Space(BINARY, _binary_allowed)
DIV = Space({**BINARY, "divisor": ("|b| >= 0.5", "b in [0.5, 2]")}, _binary_allowed)


def _binary_label(op, a, b, point):
    which = point["broadcast"]
    said = {"neither": "", "first": ", a broadcast", "second": ", b broadcast",
            "both": ", both broadcast"}[which]
    return f"{a} {op} {b}{said}" + (", batch of 1" if point["batch"] == "of 1" else "")


def build_mul(point):
    a, b = operand_shapes(point)
    return Call(_binary_label("*", a, b, point), Mul, [host(data(*a)), host(data(*b))],
                ("da", "db"), (0, 1), point)


def build_div(point):
    a, b = operand_shapes(point)
    divisor = (dict(margin=0.5) if point["divisor"] == "|b| >= 0.5" else dict(low=0.5, high=2.0))
    label = _binary_label("/", a, b, point) + (f", {point['divisor']}"
                                                if point["divisor"] != "|b| >= 0.5" else "")
    return Call(label, Div, [host(data(*a)), host(data(*b, **divisor))], ("da", "db"), (0, 1),
                point)


SIGMOID = Space({"shape": ((3, 4), (1, 1), (2, 3, 5)),
                 "x": ("in [-4, 4]", "with 6 <= |x| <= 14 (extreme)")})


def build_sigmoid(point):
    values = (dict(low=-4, high=4) if point["x"] == "in [-4, 4]" else
              dict(low=-8, high=8, margin=6))
    return Call(f"x {point['shape']} {point['x']}", Sigmoid,
                [host(data(*point["shape"], **values))], ("dx",), (0,), point)


SUM_TO = Space({"output": ((3, 4), (2, 3, 4), (6,)),
                "a": ("a size-1 axis", "leading axes missing", "both", "all size 1", "the same"),
                "batch": ("many", "of 1")},
               lambda p: len(p["output"]) > 1 or p["a"] in ("leading axes missing", "the same"))


def _summed_shape(out, how):
    if how == "the same":
        return out
    if how == "all size 1":
        return (1,) * len(out)
    if how == "leading axes missing":
        return out[1:] or (1,)
    one = out[:-2] + (1,) + out[-1:] if len(out) > 1 else out
    return one[1:] if how == "both" else one


def build_sum_to(point):
    out = point["output"]
    out = ((1,) + out[1:]) if point["batch"] == "of 1" and len(out) > 1 else out
    a = _summed_shape(out, point["a"])
    return Call(f"{a} broadcast to {out}", lambda: BroadcastTo(out), [host(data(*a))], ("da",),
                (0,), point)


MATMUL = Space({"batch axes": ("none", "on A only", "on B only", "on both",
                               "broadcast both ways"),
                "rows of A": (3, 1, 4), "columns of B": (5, 1, 4), "inner": (4, 1)})
# 4 rows or columns with an inner 4: a square A or B, where a transposed gradient has
# the right shape and only its values are wrong


def build_matmul(point):
    m, k, n = point["rows of A"], point["inner"], point["columns of B"]
    batch_a, batch_b = {"none": ((), ()), "on A only": ((2,), ()), "on B only": ((), (2,)),
                        "on both": ((2,), (2,)),
                        "broadcast both ways": ((2, 1), (3,))}[point["batch axes"]]
    a, b = batch_a + (m, k), batch_b + (k, n)
    said = "" if point["batch axes"] == "none" else f", batch axes {point['batch axes']}"
    return Call(f"{a} @ {b}{said}", MatMul, [host(data(*a)), host(data(*b))], ("da", "db"),
                (0, 1), point)


SOFTMAX_CE = Space({"logits": ((4, 3), (1, 5), (6, 2)),
                    "labels": ("each class in turn", "all class 0"),
                    "offset": (0, 1000), "spread": (3, 30)})


def build_softmax_ce(point):
    n, c = point["logits"]
    np = backend.host_module()
    labels = np.arange(n) % c if point["labels"] == "each class in turn" else np.zeros(n, int)
    spread, offset = point["spread"], point["offset"]
    z = offset + host(data(n, c, low=-spread, high=spread))
    # near 1000, exp overflows: a softmax recomputed without the forward's shift is NaN
    near = f", near {offset} (exp({offset}) overflows)" if offset else ""
    device_labels = backend.asarray(labels)
    return Call(f"logits ({n}, {c}) in +-{spread}{near}, labels {labels.tolist()}",
                lambda: SoftmaxCrossEntropy(device_labels), [z], ("dz",), (0,), point)


SPACES = {"mul": (MUL, build_mul), "div": (DIV, build_div), "sigmoid": (SIGMOID, build_sigmoid),
          "sum_to": (SUM_TO, build_sum_to), "matmul": (MATMUL, build_matmul),
          "softmax_ce": (SOFTMAX_CE, build_softmax_ce)}
for _name, (_space, _build) in SPACES.items():
    register_calls(f"engine_{_name}", _space, _build)
