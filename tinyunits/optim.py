"""Optimisers, learning-rate schedules and gradient clipping.

Every optimiser takes either a list of parameters or a list of parameter groups,
dicts with "params" and any hyper-parameters that differ from the defaults:

    optim.SGD([{"params": layer.weight_parameters()},
               {"params": [layer.mu, layer.sigma], "lr": 1e-4}], lr=1e-3, momentum=0.9)

Parameters without a gradient (frozen, or unused in this step) are skipped.
Updates are in place on each parameter's array, inside no_grad.
"""
from __future__ import annotations

import math

from .backend import get_array_module
from .tensor import no_grad


class Optimizer:
    defaults: dict = {}

    def __init__(self, params, **hyper):
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = [{**self.defaults, **hyper, **g, "params": list(g["params"])}
                             for g in groups]
        for g in self.param_groups:
            if g["lr"] < 0:
                raise ValueError(f"{type(self).__name__}: learning rate must be >= 0, got {g['lr']}")
            g.setdefault("initial_lr", g["lr"])
        self.state: dict = {}  # id(param) -> that parameter's buffers

    def zero_grad(self) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None

    def step(self) -> None:
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None and p.requires_grad:
                        self.update(p, p.grad, group, self.state.setdefault(id(p), {}))

    def update(self, p, grad, group, state):
        raise NotImplementedError


class SGD(Optimizer):
    """v = momentum v + g (+ weight_decay p);  p -= lr (g + momentum v if nesterov else v)."""

    defaults = dict(lr=0.01, momentum=0.0, nesterov=False, weight_decay=0.0)

    def update(self, p, grad, group, state):
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * p.data
        if group["momentum"]:
            v = state.get("velocity")
            if v is None:
                v = state["velocity"] = grad.copy()
            else:
                v *= group["momentum"]
                v += grad
            grad = grad + group["momentum"] * v if group["nesterov"] else v
        p.data -= group["lr"] * grad


class Adam(Optimizer):
    """Adam (Kingma & Ba); weight_decay here is L2 added to the gradient."""

    defaults = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    decoupled = False

    def update(self, p, grad, group, state):
        b1, b2 = group["betas"]
        if group["weight_decay"] and not self.decoupled:
            grad = grad + group["weight_decay"] * p.data
        if not state:
            xp = get_array_module(p.data)
            state.update(t=0, m=xp.zeros_like(p.data), v=xp.zeros_like(p.data))
        state["t"] += 1
        m, v, t = state["m"], state["v"], state["t"]
        m *= b1
        m += (1 - b1) * grad
        v *= b2
        v += (1 - b2) * grad * grad
        step = group["lr"] * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        if group["weight_decay"] and self.decoupled:
            p.data *= 1 - group["lr"] * group["weight_decay"]
        p.data -= step * m / (get_array_module(v).sqrt(v) + group["eps"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr wd."""

    defaults = dict(Adam.defaults, weight_decay=0.01)
    decoupled = True


# ---------------------------------------------------------------------- schedules
class _Scheduler:
    """Call step() once per epoch (or per iteration, as you count milestones)."""

    def __init__(self, optimizer):
        self.optimizer, self.count = optimizer, 0

    def step(self) -> None:
        self.count += 1
        factor = self.factor(self.count)
        for g in self.optimizer.param_groups:
            g["lr"] = g["initial_lr"] * factor

    def get_lr(self) -> list:
        return [g["lr"] for g in self.optimizer.param_groups]


class StepLR(_Scheduler):
    """lr = initial_lr * gamma ** (count // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1):
        super().__init__(optimizer)
        self.step_size, self.gamma = step_size, gamma

    def factor(self, count):
        return self.gamma ** (count // self.step_size)


class MultiStepLR(_Scheduler):
    """lr = initial_lr * gamma ** (number of milestones passed)."""

    def __init__(self, optimizer, milestones, gamma=0.1):
        super().__init__(optimizer)
        self.milestones, self.gamma = sorted(milestones), gamma

    def factor(self, count):
        return self.gamma ** sum(count >= m for m in self.milestones)


def clip_grad_norm(params, max_norm: float) -> float:
    """Scale all gradients together so their global L2 norm is at most max_norm."""
    grads = [p.grad for p in params if p.grad is not None]
    total = math.sqrt(sum((g * g).sum().item() for g in grads))
    if total > max_norm:
        for g in grads:
            g *= max_norm / (total + 1e-12)
    return total
