"""The benchmark models: each case builds one training step in tinyunits and the same
step in a reference (PyTorch, or our own baseline layer for the overhead rows).

A step is forward + backward + optimiser step (plain SGD unless said otherwise),
in float32. The PyTorch model is built from *our* initial arrays, so both sides
do the same arithmetic on the same numbers; run.py checks that the first losses
agree before it times anything.

Each builder returns a Case: `ours` and `ref` are zero-argument step functions
that return the step's loss (ref is None when PyTorch is missing), `ref_name` says
what the reference is.
Our side runs on tinyunits' current backend; PyTorch's tensors go to DEVICE
("cpu", or "cuda" when run.py is given --device cuda). Labels reach our loss as
fit passes them (CheckedLabels: checked once, not read back every step).
A unit that has not landed yet raises UnitMissing, and its row says so.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import numpy as np

import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.ops.loss import CheckedLabels

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the table is still printed, without the PyTorch column
    torch = None


DEVICE = "cpu"  # PyTorch's device; run.py sets it


class UnitMissing(Exception):
    pass


@dataclasses.dataclass
class Case:
    """Each side is built when first asked for (run.py runs each side in a process of
    its own: the other side's model is never made there)."""
    build_ours: Callable
    build_ref: Callable | None
    ref_name: str  # "torch" or the name of our own baseline

    @functools.cached_property
    def ours(self):
        return self.build_ours()

    @functools.cached_property
    def ref(self):
        return self.build_ref() if self.build_ref is not None else None


def unit(name):
    layer = getattr(nn, name, None)
    if layer is None:
        raise UnitMissing(f"nn.{name} not available")
    return layer


# ----------------------------------------------------------------------------- helpers
def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _labels(n, classes, seed):
    return np.random.default_rng(seed).integers(0, classes, n)


def _ours_step(model, loss_of, lr=0.01, momentum=0.0):
    """One SGD step of a tinyunits model (step.zero_grad frees the gradients)."""
    opt = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

    def step():
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        opt.step()
        return loss

    step.zero_grad, step.loss_of, step.params = opt.zero_grad, loss_of, model.parameters()
    return step


def _torch_step(params, loss_of, lr=0.01, momentum=0.0):
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        opt.step()
        return loss

    step.zero_grad = lambda: opt.zero_grad(set_to_none=True)
    return step


def _t(array, grad=False):
    """A torch tensor on DEVICE with a copy of our array (host numpy or backend array)."""
    out = torch.from_numpy(np.array(tu.backend.to_host(array), dtype="float32")).to(DEVICE)
    return out.requires_grad_(grad)


def _on_device(array):
    """A host data array as a torch tensor on DEVICE (dtype kept: labels stay int64)."""
    return torch.from_numpy(array).to(DEVICE)


def _checked(labels, classes):
    """Our labels as fit passes them to the loss."""
    return CheckedLabels(tu.backend.asarray(labels), classes)


def _case(build_ours, build_ref, ref_name="torch"):
    """build_* return fresh step functions (a step returns its loss)."""
    return Case(build_ours, build_ref, ref_name)


# ----------------------------------------------------------------------------- B1, B7
def _mlp(activation=nn.ReLU, seed=0):
    tu.manual_seed(seed)
    return nn.Sequential(nn.Linear(784, 800), activation(), nn.Linear(800, 800),
                         activation(), nn.Linear(800, 10))


def _torch_mlp(ours):
    W = [_t(m.weight.data, True) for m in ours if isinstance(m, nn.Linear)]
    b = [_t(m.bias.data, True) for m in ours if isinstance(m, nn.Linear)]

    def forward(x):
        h = F.relu(F.linear(x, W[0], b[0]))
        h = F.relu(F.linear(h, W[1], b[1]))
        return F.linear(h, W[2], b[2])

    return forward, W + b


def mlp(batch=128):
    """B1: MLP 784-800-800-10, softmax cross-entropy, SGD."""
    x, y = _data((batch, 784), 1), _labels(batch, 10, 2)

    def ours():
        model = _mlp()
        X, Y = tu.tensor(x), _checked(y, 10)
        return _ours_step(model, lambda: nn.functional.cross_entropy(model(X), Y))

    def ref():
        forward, params = _torch_mlp(_mlp())
        X, Y = _on_device(x), _on_device(y)
        return _torch_step(params, lambda: F.cross_entropy(forward(X), Y))

    return _case(ours, ref if torch else None)


BREAKPOINTS = [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5]  # 8 intervals, ReLU at init


def _tmaf_mlp():
    TMAF = unit("TMAF")
    tu.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 800), TMAF(800, BREAKPOINTS),
                         nn.Linear(800, 800), TMAF(800, BREAKPOINTS), nn.Linear(800, 10))


def _torch_tmaf(x, levels, s):
    """y_i = t[i, bin(x_i)] x_i, bin(x) = #{s_k <= x}: bucketize and a gather (autograd)."""
    index = torch.bucketize(x, s, right=True) + torch.arange(
        x.shape[1], device=x.device)[None, :] * levels.shape[1]
    return levels.reshape(-1)[index] * x


def mlp_tmaf(batch=128, reference="torch"):
    """B7: the B1 network with diagonal TMAF (8 intervals) in place of ReLU.

    PyTorch: the same network, TMAF composed (bucketize, gather), autograd backward.
    reference="relu": our own B1 network instead (TMAF's overhead over ReLU)."""
    x, y = _data((batch, 784), 1), _labels(batch, 10, 2)

    def build(make):
        def steps():
            model = make()
            X, Y = tu.tensor(x), _checked(y, 10)
            return _ours_step(model, lambda: nn.functional.cross_entropy(model(X), Y))
        return steps

    def ref():
        model = _tmaf_mlp()
        lin = [m for m in model if isinstance(m, nn.Linear)]
        W = [_t(m.weight.data, True) for m in lin]
        b = [_t(m.bias.data, True) for m in lin]
        T = [_t(m.levels.data, True) for m in model if isinstance(m, unit("TMAF"))]
        s = torch.tensor(BREAKPOINTS, dtype=torch.float32, device=DEVICE)
        X, Y = _on_device(x), _on_device(y)

        def forward():
            h = _torch_tmaf(F.linear(X, W[0], b[0]), T[0], s)
            h = _torch_tmaf(F.linear(h, W[1], b[1]), T[1], s)
            return F.linear(h, W[2], b[2])

        return _torch_step(W + b + T, lambda: F.cross_entropy(forward(), Y))

    if reference == "relu":
        return _case(build(_tmaf_mlp), build(_mlp), ref_name="ours, ReLU")
    return _case(build(_tmaf_mlp), ref if torch else None)


# ----------------------------------------------------------------------------- B2
def cnn(batch=128):
    """B2: conv(32)-ReLU-conv(32)-ReLU-maxpool 2-dense(256)-ReLU-dense(10) on 1x28x28."""
    x, y = _data((batch, 1, 28, 28), 3), _labels(batch, 10, 4)

    def build():
        tu.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 12 * 12, 256),
                             nn.ReLU(), nn.Linear(256, 10))

    def ours():
        model = build()
        X, Y = tu.tensor(x), _checked(y, 10)
        return _ours_step(model, lambda: nn.functional.cross_entropy(model(X), Y))

    def ref():
        m = build()
        c1, c2, l1, l2 = (m[i] for i in (0, 2, 6, 8))
        P = [_t(p.data, True) for p in (c1.weight, c1.bias, c2.weight, c2.bias,
                                         l1.weight, l1.bias, l2.weight, l2.bias)]
        X, Y = _on_device(x), _on_device(y)

        def loss():
            h = F.relu(F.conv2d(X, P[0], P[1]))
            h = F.max_pool2d(F.relu(F.conv2d(h, P[2], P[3])), 2).flatten(1)
            return F.cross_entropy(F.linear(F.relu(F.linear(h, P[4], P[5])), P[6], P[7]), Y)

        return _torch_step(P, loss)

    return _case(ours, ref if torch else None)


# ----------------------------------------------------------------------------- B3, B4
def _dac_case(make_layer, x, target, torch_forward):
    """One DAC layer's step (MSE to a fixed target) against PyTorch computing
    torch_forward(W, B, X), the same formula composed, from the same initial arrays."""
    def build():
        tu.manual_seed(0)
        return make_layer()

    def ours():
        layer = build()
        X, T = tu.tensor(x), tu.tensor(target)
        return _ours_step(layer, lambda: nn.functional.mse_loss(layer(X), T))

    def ref():
        layer = build()
        W, B = _t(layer.weight.data, True), _t(layer.bias.data, True)
        X, T = _on_device(x), _on_device(target)
        return _torch_step([W, B], lambda: F.mse_loss(torch_forward(W, B, X), T))

    return _case(ours, ref if torch else None)


def dac_linear(batch=512, n_in=256, n_out=256):
    """B3: DACLinear, y[b,i] = sum_j W[i,j] relu(B[i,j] + x[b,j]).

    PyTorch: the same formula composed from broadcasting ops (autograd backward).
    """
    DACLinear = unit("DACLinear")
    return _dac_case(lambda: DACLinear(n_in, n_out),
                     _data((batch, n_in), 5), _data((batch, n_out), 6),
                     lambda W, B, X: (W * torch.relu(B + X[:, None, :])).sum(-1))


def dac_conv(batch=64, channels=16, size=32):
    """B4: DACConv2d 16->16, 3x3, padding 1, on 16x32x32.

    PyTorch: the same formula as one grouped convolution: channel i*in + j of the
    activated input is relu(B[i,j] + x[:, j]); group i of the conv sums it with
    weight[i] (groups = out_channels).
    """
    DACConv2d = unit("DACConv2d")

    def grouped(W, B, X):
        A = torch.relu(B[None, :, :, None, None] + X[:, None])  # (b, out, in, H, W)
        A = A.reshape(batch, channels * channels, size, size)
        return F.conv2d(A, W, padding=1, groups=channels)

    return _dac_case(lambda: DACConv2d(channels, channels, 3, padding=1),
                     _data((batch, channels, size, size), 7),
                     _data((batch, channels, size, size), 8), grouped)


# ----------------------------------------------------------------------------- B5, H1
def _torch_han(x, u, b):
    u_hat = u / (u.norm() + 1e-14)
    return (x - 2 * (x @ u_hat)[:, None] * u_hat + b).abs()


def han_net(batch=512, width=256, depth=20):
    """B5: 20 HanLayers of width 256 (nothing else); MSE to a fixed target.

    PyTorch: y = |x - 2 (x . u_hat) u_hat + b| composed, u_hat = u / (||u|| + 1e-14).
    """
    HanLayer = unit("HanLayer")
    x, target = _data((batch, width), 9), _data((batch, width), 10)

    def build():
        tu.manual_seed(0)
        return nn.Sequential(*[HanLayer(width) for _ in range(depth)])

    def ours():
        model = build()
        X, T = tu.tensor(x), tu.tensor(target)
        return _ours_step(model, lambda: nn.functional.mse_loss(model(X), T))

    def ref():
        model = build()
        U = [_t(m.u.data, True) for m in model]
        B = [_t(m.bias.data, True) for m in model]
        X, T = _on_device(x), _on_device(target)

        def loss():
            h = X
            for u, b in zip(U, B):
                h = _torch_han(h, u, b)
            return F.mse_loss(h, T)

        return _torch_step(U + B, loss)

    return _case(ours, ref if torch else None)


def han_lesson_net(batch=100, width=30, n_han=17):
    """H1: the HanNet lesson's checkerboard net, one of its 40,000 steps.

    Linear(2,30)+Abs, Linear(30,30)+Abs, 17 HanLayers, Linear(30,30)+Abs,
    Linear(30,2), MSE; SGD momentum 0.9 (the paper's recipe). Tiny arrays:
    this row measures the engine's per-op and per-parameter overhead.
    """
    HanLayer = unit("HanLayer")
    x, target = _data((batch, 2), 11), _data((batch, 2), 12)

    def build():
        tu.manual_seed(0)
        return nn.Sequential(nn.Linear(2, width), nn.Abs(), nn.Linear(width, width), nn.Abs(),
                             *[HanLayer(width) for _ in range(n_han)],
                             nn.Linear(width, width), nn.Abs(), nn.Linear(width, 2))

    def ours():
        model = build()
        X, T = tu.tensor(x), tu.tensor(target)
        return _ours_step(model, lambda: nn.functional.mse_loss(model(X), T),
                          lr=0.01, momentum=0.9)

    def ref():
        model = build()
        lin = [m for m in model if isinstance(m, nn.Linear)]
        han = [m for m in model if isinstance(m, HanLayer)]
        LW = [_t(m.weight.data, True) for m in lin]
        LB = [_t(m.bias.data, True) for m in lin]
        HU = [_t(m.u.data, True) for m in han]
        HB = [_t(m.bias.data, True) for m in han]
        X, T = _on_device(x), _on_device(target)

        def loss():
            h = F.linear(X, LW[0], LB[0]).abs()
            h = F.linear(h, LW[1], LB[1]).abs()
            for u, b in zip(HU, HB):
                h = _torch_han(h, u, b)
            h = F.linear(h, LW[2], LB[2]).abs()
            return F.mse_loss(F.linear(h, LW[3], LB[3]), T)

        return _torch_step(LW + LB + HU + HB, loss, lr=0.01, momentum=0.9)

    return _case(ours, ref if torch else None)


# ----------------------------------------------------------------------------- B6
def _torch_focusing(x, W, b, mu, sigma):
    """FocusingLinear composed as ours computes it (eqs. 6-7: the exponent measured from
    the grid point nearest mu, floored at -30), autograd backward."""
    m = x.shape[-1]
    p = torch.linspace(0.0, 1.0, m, dtype=x.dtype, device=x.device)
    nearest = p[torch.round(mu.detach() * (m - 1)).clamp(0, m - 1).long()]
    d = p - mu[:, None]
    exponent = (((nearest - mu) ** 2)[:, None] - d * d) / (2 * sigma * sigma)[:, None]
    phi = torch.exp(exponent.clamp(min=-30.0))
    u = math.sqrt(m) * phi / phi.norm(dim=1, keepdim=True)
    return F.linear(x, W * u, b)


def focusing(batch=512, n_in=784, n_out=800, reference="torch"):
    """B6: FocusingLinear 784->800; MSE, SGD.

    As a hidden layer (its input wants a gradient too), at the paper's MNIST batch
    of 512: the focus costs O(out x in) elementwise work per step whatever the
    batch, the products O(batch x out x in), so the overhead shrinks with batch.
    PyTorch: the same layer composed (`_torch_focusing`), autograd backward.
    reference="linear": our own Linear 784->800 instead (the focus's overhead).
    """
    FocusingLinear = unit("FocusingLinear")
    x, target = _data((batch, n_in), 13), _data((batch, n_out), 14)

    def build(make):
        def steps():
            tu.manual_seed(0)
            layer = make(n_in, n_out)
            X, T = tu.tensor(x, requires_grad=True), tu.tensor(target)
            return _ours_step(layer, lambda: nn.functional.mse_loss(layer(X), T))
        return steps

    def ref():
        tu.manual_seed(0)
        layer = FocusingLinear(n_in, n_out)
        P = [_t(a.data, True) for a in (layer.weight, layer.bias, layer.mu, layer.sigma)]
        X, T = _on_device(x).requires_grad_(True), _on_device(target)
        return _torch_step(P, lambda: F.mse_loss(_torch_focusing(X, *P), T))

    if reference == "linear":
        return _case(build(FocusingLinear), build(nn.Linear), ref_name="ours, Linear")
    return _case(build(FocusingLinear), ref if torch else None)


# ----------------------------------------------------------------------------- memory
def dac_linear_big(batch=4096, n=512):
    """M1: one DACLinear 512->512 step at batch 4096 (the chunking check)."""
    return dac_linear(batch, n, n)


# ----------------------------------------------------------------------------- E1, E2
class DataMissing(UnitMissing):
    pass


def _epoch_case(model_of, loss_fn, data, batch, torch_model_of, optimizer_of, after_step=None):
    """One epoch of fit() on `data` = (x, y) against one epoch of the same model in a
    PyTorch loop over the same batches (shuffled once per epoch, as fit does)."""
    from tinyunits.train import fit
    x, y = data

    def ours():
        model = model_of()
        opt = optimizer_of(model)

        def epoch():
            h = fit(model, loss_fn, opt, (x, y), epochs=1, batch_size=batch, progress=False,
                    seed=0, after_step=after_step)
            return tu.tensor(h["train_loss"][-1])
        epoch.zero_grad, epoch.loss_of, epoch.params = opt.zero_grad, None, model.parameters()
        return epoch

    def ref():
        forward, groups, after = torch_model_of(model_of())
        opt = torch.optim.SGD(groups, lr=0.1, momentum=0.9)
        X, Y = _on_device(x), _on_device(y)
        rng = np.random.default_rng(0)

        def epoch():
            order = torch.from_numpy(rng.permutation(len(x))).to(DEVICE)
            total = 0.0
            for start in range(0, len(x), batch):
                rows = order[start:start + batch]
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(forward(X[rows]), Y[rows])
                loss.backward()
                opt.step()
                after()
                total += loss.detach()
            return total / -(-len(x) // batch)
        epoch.zero_grad = lambda: opt.zero_grad(set_to_none=True)
        return epoch

    return _case(ours, ref if torch else None)


def _lessons():
    """lessons.trials (the checkout's root is on sys.path: run.py puts it there)."""
    try:
        from lessons.trials import dac as dac_trials, focusing as focus_trials
        return dac_trials, focus_trials
    except ImportError as err:
        raise UnitMissing(f"lessons.trials not importable: {err}") from err


def _torch_batch_norm(bn):
    """Our BatchNorm (training mode) as F.batch_norm with its own running statistics."""
    weight = _t(bn.weight.data, True)
    bias = _t(bn.bias.data, True) if bn.bias is not None else None
    mean, var = _t(bn.running_mean), _t(bn.running_var)
    return (lambda h: F.batch_norm(h, mean, var, weight, bias, True, bn.momentum, bn.eps),
            [p for p in (weight, bias) if p is not None])


def vgg_epoch():
    """E1: one epoch of lesson 1's VGG (vgg_trial's --quick model: stages 8-16-32, one
    conv each, Conv-BN-ReLU, on 6000 Fashion-MNIST images pooled to 14x14, batch 64,
    SGD momentum 0.9, L2 2e-4 on kernels). PyTorch: the same layers (F.conv2d,
    F.batch_norm, F.relu), from our initial weights."""
    dac_trials, _ = _lessons()
    quick = dac_trials.SIZES["quick"]["vgg"]
    try:
        x, y = dac_trials.fashion_mnist(quick["n_train"], quick["n_val"], quick["n_test"],
                                        quick["pool"])[:2]
    except (FileNotFoundError, OSError) as err:
        raise DataMissing(f"Fashion-MNIST: {err}") from err
    x = x.astype("float32")

    def model_of():
        tu.manual_seed(0)
        return dac_trials.vgg(quick["stages"], quick["per_stage"], dac=False)[0]

    def torch_model_of(model):
        layers, decayed, rest = [], [], []
        for m in model:
            if isinstance(m, nn.Conv2d):
                W = _t(m.weight.data, True)
                decayed.append(W)
                layers.append(lambda h, W=W, s=m.stride: F.conv2d(h, W, stride=s, padding=1))
            elif isinstance(m, nn.BatchNorm2d):
                bn, params = _torch_batch_norm(m)
                layers.append(bn)
                rest += params
            elif isinstance(m, nn.ReLU):
                layers.append(F.relu)
            elif isinstance(m, nn.GlobalAvgPool2d):
                layers.append(lambda h: h.mean(dim=(2, 3)))
            else:  # the head
                W, b = _t(m.weight.data, True), _t(m.bias.data, True)
                decayed.append(W)
                rest.append(b)
                layers.append(lambda h, W=W, b=b: F.linear(h, W, b))

        def forward(h):
            for layer in layers:
                h = layer(h)
            return h
        groups = [{"params": decayed, "weight_decay": 2e-4}, {"params": rest}]
        return forward, groups, lambda: None

    return _epoch_case(model_of, nn.functional.cross_entropy, (x, y), quick["batch"],
                       torch_model_of, lambda model: optim.SGD(
                           dac_trials.weights_only(model, 2e-4), lr=0.1, momentum=0.9))


def fashion_epoch():
    """E2: one epoch of lesson 5's Fashion-MNIST net at --quick size (Focus-s: Dropout,
    FocusingLinear 784->128, BatchNorm, ReLU, twice, then Linear 128->10; 30000
    images, batch 512, SGD momentum 0.9, lr 0.1 / 0.01 for mu / 0.0005 for sigma,
    mu and sigma clipped after every step). PyTorch: the same net, the focus composed
    (`_torch_focusing`). The dropout masks differ (each library draws its own)."""
    import datasets
    _, focus_trials = _lessons()
    n_train, _, hidden = focus_trials.SIZES["quick"]["fashion"][:3]
    try:
        x, y = datasets.load_fashion_mnist()[:2]
    except (FileNotFoundError, OSError) as err:
        raise DataMissing(f"Fashion-MNIST: {err}") from err
    x, y = x.reshape(len(x), -1)[:n_train].astype("float32"), y[:n_train]

    def model_of():
        tu.manual_seed(0)
        return focus_trials.fashion_net("Focus-s", hidden)

    def torch_model_of(model):
        layers, groups = [], [{"params": []}, {"params": [], "lr": 0.01},
                              {"params": [], "lr": 0.0005}]
        focus = []
        for m in model:
            if isinstance(m, nn.Dropout):
                layers.append(lambda h, p=m.p: F.dropout(h, p, training=True))
            elif isinstance(m, nn.FocusingLinear):
                W, b, mu, sigma = (_t(a.data, True) for a in (m.weight, m.bias, m.mu, m.sigma))
                groups[0]["params"] += [W, b]
                groups[1]["params"].append(mu)
                groups[2]["params"].append(sigma)
                focus.append((mu, sigma))
                layers.append(lambda h, P=(W, b, mu, sigma): _torch_focusing(h, *P))
            elif isinstance(m, nn.BatchNorm1d):
                bn, params = _torch_batch_norm(m)
                layers.append(bn)
                groups[0]["params"] += params
            elif isinstance(m, nn.ReLU):
                layers.append(F.relu)
            else:
                W, b = _t(m.weight.data, True), _t(m.bias.data, True)
                groups[0]["params"] += [W, b]
                layers.append(lambda h, W=W, b=b: F.linear(h, W, b))

        def forward(h):
            for layer in layers:
                h = layer(h)
            return h

        def constrain():
            with torch.no_grad():
                for mu, sigma in focus:
                    mu.clamp_(0.0, 1.0)
                    sigma.clamp_(0.01, 1.0)
        return forward, groups, constrain

    return _epoch_case(model_of, nn.functional.cross_entropy, (x, y), 512, torch_model_of,
                       lambda model: focus_trials.sgd_groups(model, 0.1, 0.01, 0.0005),
                       after_step=focus_trials.constrain_all)
