"""Optimisers, learning-rate schedules and gradient clipping.

Every optimiser takes either a list of parameters or a list of parameter groups,
dicts with "params" and any hyper-parameters that differ from the defaults:

    optim.SGD([{"params": layer.weight_parameters()},
               {"params": [layer.mu, layer.sigma], "lr": 1e-4}], lr=1e-3, momentum=0.9)

Parameters without a gradient (frozen, or unused in this step) are skipped.
Updates are in place on each parameter's array, inside no_grad, and count as a
change of its version: a graph recorded before the step refuses to backward. The
last line of each, p -= lr * direction, is `descend`; tinyunits.fast.optim's drop-ins
make it BLAS's axpy (one pass, no temporary).

An optimiser's and a scheduler's state_dict() is a flat dict that tu.save writes and
load_state_dict() takes back (fit's backups hold both): the learning rates and the
buffers (momentum, Adam's moments and step count), named by the position of their
parameter, so they load into an optimiser made the same way over a fresh model.

The names are PyTorch's, with PyTorch's meaning: the same hyper-parameters, defaults
and positional order, zero_grad(set_to_none=True), step(closure=None), a scheduler's
get_last_lr(). PyTorch's arguments implemented nowhere here (amsgrad, dampening,
maximize, foreach, ...) are accepted at their defaults only (nn/torch_args.py). The
state_dict's format is tinyunits' own (above), not PyTorch's.
"""
from __future__ import annotations

import math

from . import validate
from . import backend
from .backend import get_array_module
from .function import Replaceable
from .nn.torch_args import defaults_only
from .tensor import Tensor, no_grad


def _parameter_groups(where, params) -> list:
    """A list of groups {"params": [Tensor, ...], ...} from a list of Tensors or of groups."""
    if isinstance(params, (Tensor, dict)):
        validate.fail(where, "params", "a list of parameters or of parameter groups",
                      f"a single {type(params).__name__}", TypeError)
    try:
        params = list(params)
    except TypeError:
        validate.fail(where, "params", "a list of parameters or of parameter groups",
                      params, TypeError)
    if not params:
        validate.fail(where, "params", "a non-empty list", params)
    groups = []
    for g in params if isinstance(params[0], dict) else [{"params": params}]:
        if not isinstance(g, dict) or "params" not in g:
            validate.fail(where, "params", "all parameters or all groups (dicts with "
                       "'params')", g, TypeError)
        if isinstance(g["params"], Tensor):
            validate.fail(where, "a group's params", "a list of parameters",
                          "a single Tensor", TypeError)
        groups.append({**g, "params": list(g["params"])})
        for p in groups[-1]["params"]:
            if not isinstance(p, Tensor):
                validate.fail(where, "params", "Tensors (e.g. model.parameters())",
                              type(p).__name__, TypeError)
    return groups


def _implemented(where, given: dict, pytorch_only: dict) -> dict:
    """`given` without PyTorch's arguments that are not implemented here, each checked to
    hold PyTorch's default."""
    defaults_only(where, **{k: (v, pytorch_only[k]) for k, v in given.items()
                            if k in pytorch_only})
    return {k: v for k, v in given.items() if k not in pytorch_only}


class Optimizer(Replaceable):
    defaults: dict = {}
    positional: tuple = ()  # PyTorch's order of the hyper-parameters after params
    pytorch_only: dict = {}  # PyTorch's arguments not implemented here: their defaults

    def __init__(self, params, *args, **hyper):
        where = type(self).__name__
        if len(args) > len(self.positional):
            raise TypeError(f"{where}: takes params and at most {len(self.positional)} more "
                            f"positional arguments {self.positional}, got {len(args)}")
        for name, value in zip(self.positional, args):
            if name in hyper:
                raise TypeError(f"{where}: got two values for argument {name!r}")
            hyper[name] = value
        hyper = _implemented(where, hyper, self.pytorch_only)
        validate.unknown_keywords(where, hyper, self.defaults)
        groups = _parameter_groups(where, params)
        self.param_groups = [{**self.defaults, **hyper,
                              **_implemented(f"{where} parameter group", g, self.pytorch_only)}
                             for g in groups]
        seen = set()
        for g in self.param_groups:
            validate.unknown_keywords(f"{where} parameter group", g,
                                      {"params", "initial_lr", *self.defaults})
            self.check_hyper(g)
            for p in g["params"]:
                if p.creator is not None:  # a step would change a copy the model never reads
                    validate.fail(where, "params", "leaf tensors (model.parameters(), or tensors "
                               "made with tu.tensor)", f"a tensor computed by "
                               f"{type(p.creator).__name__}", ValueError)
                if id(p) in seen:  # it would be updated twice per step
                    validate.fail(where, "params", "each parameter once (across all groups)",
                                  f"{type(p).__name__} of shape {tuple(p.shape)} listed twice")
                seen.add(id(p))
            g.setdefault("initial_lr", g["lr"])
        self.state: dict = {}  # id(param) -> that parameter's buffers

    def check_hyper(self, group) -> None:
        """Finite, non-negative hyper-parameters (each optimiser adds its own rules)."""
        where = type(self).__name__
        for name in ("lr", "momentum", "weight_decay"):
            if name in group:
                validate.number(where, name, group[name], low=0)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Gradients to None, as PyTorch's default; set_to_none=False: to zeros instead."""
        validate.flag(f"{type(self).__name__}.zero_grad", "set_to_none", set_to_none)
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = get_array_module(p.data).zeros_like(p.data)

    def step(self, closure=None):
        """One update of every parameter with a gradient. closure, as PyTorch's: a function
        that computes the loss again (and its gradients); step calls it first and returns
        its loss (None without one)."""
        validate.callables(f"{type(self).__name__}.step", closure=closure)
        loss = closure() if closure is not None else None
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None and p.requires_grad:
                        self.update(p, p.grad, group, self.state.setdefault(id(p), {}))
        return loss

    def update(self, p, grad, group, state):
        raise NotImplementedError

    def descend(self, p, lr, direction) -> None:
        """p -= lr * direction, in place: the last line of every update."""
        p -= lr * direction

    def state_dict(self) -> dict:
        """'lr.{g}': group g's learning rate; 'state.{g}.{i}.{name}': buffer `name` of the
        i-th parameter of group g (an array, or a number such as Adam's step count)."""
        state = {}
        for g, group in enumerate(self.param_groups):
            state[f"lr.{g}"] = group["lr"]
            for i, p in enumerate(group["params"]):
                for name, value in self.state.get(id(p), {}).items():
                    state[f"state.{g}.{i}.{name}"] = value
        return state

    def load_state_dict(self, state: dict) -> None:
        """Take state_dict()'s dict (or tu.load's of it) back: every key, shape and value is
        checked before anything changes, and the buffers get their parameter's dtype."""
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict):
            validate.fail(where, "state", "a dict (state_dict()'s)", state, TypeError)
        params = {f"{g}.{i}": p for g, group in enumerate(self.param_groups)
                  for i, p in enumerate(group["params"])}
        lrs, buffers = {}, {}
        for key, value in state.items():
            kind, _, rest = str(key).partition(".")
            owner, _, name = rest.rpartition(".")
            if kind == "lr" and rest in {str(g) for g in range(len(self.param_groups))}:
                lrs[int(rest)] = validate.number(where, key, _number(value), low=0)
            elif kind == "state" and owner in params and name:
                buffers[owner, name] = self._buffer(where, key, value, params[owner])
            else:
                raise KeyError(f"{where}: unexpected key {key!r} (a state of an optimiser "
                               f"over other parameters? this one has {len(self.param_groups)} "
                               f"groups of {[len(g['params']) for g in self.param_groups]})")
        missing = [f"lr.{g}" for g in range(len(self.param_groups)) if g not in lrs]
        if missing:
            raise KeyError(f"{where}: missing keys {missing}")
        for g, lr in lrs.items():  # all checked: now write
            self.param_groups[g]["lr"] = lr
        self.state = {}
        for (owner, name), value in buffers.items():
            self.state.setdefault(id(params[owner]), {})[name] = value

    @staticmethod
    def _buffer(where, key, value, p):
        """A buffer of p as the optimiser keeps it: a number, or an array of p's shape."""
        if not backend.is_array(value) or value.ndim == 0:
            validate.number(where, key, _number(value))
            return _number(value)  # an int stays one (Adam's step count)
        if value.dtype.kind not in "fiu" or tuple(value.shape) != tuple(p.shape):
            validate.fail(where, key, f"a number or a numeric array of its parameter's shape "
                          f"{tuple(p.shape)}", f"{value.dtype} of shape {tuple(value.shape)}")
        value = backend.asarray(value, dtype=p.dtype)
        if not get_array_module(value).isfinite(value).all().item():
            validate.fail(where, key, "finite values", "NaN or inf")
        return value.copy()


def _number(value):
    """A 0-d array (as tu.load gives numbers back) as the Python number it holds."""
    return value.item() if backend.is_array(value) and value.ndim == 0 else value


class SGD(Optimizer):
    """v = momentum v + g (+ weight_decay p);  p -= lr (g + momentum v if nesterov else v)."""

    defaults = dict(lr=1e-3, momentum=0.0, nesterov=False, weight_decay=0.0)
    positional = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
    pytorch_only = dict(dampening=0, maximize=False, foreach=None, differentiable=False,
                        fused=None)

    def check_hyper(self, group):
        super().check_hyper(group)
        validate.flag("SGD", "nesterov", group["nesterov"])
        if group["nesterov"] and not group["momentum"]:
            validate.fail("SGD", "momentum", "> 0 with nesterov=True", group["momentum"])

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
        self.descend(p.data, group["lr"], grad)  # p -= lr * grad
        p.mark_changed()


class Adam(Optimizer):
    """Adam, Algorithm 1 of Kingma & Ba, as torch.optim.Adam computes it:

        m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
        p -= lr * m_hat / (sqrt(v_hat) + eps)
        m_hat = m / (1 - beta1^t),   v_hat = v / (1 - beta2^t)

    eps is added after the bias correction: added to sqrt(v) before it (the paper's
    "efficient" form), it would make steps up to 1 / sqrt(1 - beta2^t) times smaller
    than PyTorch's when gradients are near eps. weight_decay here is L2 added to g.
    """

    defaults = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    positional = ("lr", "betas", "eps", "weight_decay", "amsgrad")
    pytorch_only = dict(amsgrad=False, foreach=None, maximize=False, capturable=False,
                        differentiable=False, fused=None, decoupled_weight_decay=False)
    decoupled = False

    def check_hyper(self, group):
        super().check_hyper(group)
        where = type(self).__name__
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            validate.fail(where, "betas", "a pair (beta1, beta2)", betas, TypeError)
        for beta in betas:
            validate.number(where, "betas", beta, low=0, high=1, high_open=True)
        validate.number(where, "eps", group["eps"], low=0, low_open=True)

    def update(self, p, grad, group, state):
        b1, b2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        if wd and self.decoupled:
            p.data *= 1 - lr * wd  # AdamW: the weights decay, the gradient is left alone
        elif wd:
            grad = grad + wd * p.data
        if not state:
            xp = get_array_module(p.data)
            state.update(t=0, m=xp.zeros_like(p.data), v=xp.zeros_like(p.data))
        state["t"] += 1
        m, v, t = state["m"], state["v"], state["t"]
        m *= b1
        m += (1 - b1) * grad
        v *= b2
        v += (1 - b2) * grad * grad
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        self.descend(p.data, lr, m_hat / (get_array_module(v).sqrt(v_hat) + group["eps"]))
        p.mark_changed()


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW:
    p *= 1 - lr wd before Adam's step, whose gradient carries no L2 term."""

    defaults = dict(Adam.defaults, weight_decay=0.01)
    pytorch_only = {k: v for k, v in Adam.pytorch_only.items() if k != "decoupled_weight_decay"}
    decoupled = True


# ---------------------------------------------------------------------- schedules
class _Scheduler:
    """Call step() once per epoch (or per iteration, as you count milestones)."""

    def __init__(self, optimizer, gamma, last_epoch):
        defaults_only(type(self).__name__, last_epoch=(last_epoch, -1))
        if not isinstance(optimizer, Optimizer):
            validate.fail(type(self).__name__, "optimizer", "an optimiser (SGD, Adam, AdamW)",
                          optimizer, TypeError)
        self.optimizer, self.count = optimizer, 0
        self.gamma = validate.number(type(self).__name__, "gamma", gamma, low=0, low_open=True)

    def step(self) -> None:
        self.count += 1
        factor = self.factor(self.count)
        for g in self.optimizer.param_groups:
            g["lr"] = g["initial_lr"] * factor

    def get_last_lr(self) -> list:
        """The learning rate of each group, as the last step() set it."""
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"count": self.count}

    def load_state_dict(self, state: dict) -> None:
        """Take state_dict()'s count back (the optimiser's state holds the rates)."""
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict) or set(state) != {"count"}:
            validate.fail(where, "state", "a dict with the one key 'count'", state, TypeError)
        self.count = validate.integer(where, "count", _number(state["count"]), low=0)


class StepLR(_Scheduler):
    """lr = initial_lr * gamma ** (count // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        super().__init__(optimizer, gamma, last_epoch)
        self.step_size = validate.integer("StepLR", "step_size", step_size)

    def factor(self, count):
        return self.gamma ** (count // self.step_size)


class MultiStepLR(_Scheduler):
    """lr = initial_lr * gamma ** (number of milestones passed)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        super().__init__(optimizer, gamma, last_epoch)
        if isinstance(milestones, (str, bytes)) or not hasattr(milestones, "__iter__"):
            validate.fail("MultiStepLR", "milestones", "a list of ints >= 1", milestones,
                          TypeError)
        self.milestones = sorted(validate.integer("MultiStepLR", "milestones", m)
                                 for m in milestones)

    def factor(self, count):
        return self.gamma ** sum(count >= m for m in self.milestones)


def clip_grad_norm(params, max_norm: float, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None) -> float:
    """Scale all gradients together so their global L2 norm is at most max_norm, as
    PyTorch's clip_grad_norm_: by max_norm / (norm + 1e-6) where that is below 1 (a NaN or
    inf norm makes every gradient NaN, or raises with error_if_nonfinite=True). params: a
    Tensor or a list of them (or of groups). Returns the norm before clipping."""
    defaults_only("clip_grad_norm", norm_type=(norm_type, 2.0), foreach=(foreach, None))
    max_norm = validate.number("clip_grad_norm", "max_norm", max_norm, low=0, low_open=True)
    validate.flag("clip_grad_norm", "error_if_nonfinite", error_if_nonfinite)
    groups = _parameter_groups("clip_grad_norm", [params] if isinstance(params, Tensor)
                               else params)
    # a gradient is scaled once, even if its parameter is listed twice
    grads = list({id(p.grad): p.grad for g in groups for p in g["params"]
                  if p.grad is not None}.values())
    total = math.sqrt(sum((g * g).sum().item() for g in grads))
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm: the gradients' total norm is {total}, so it "
                           "cannot be clipped (error_if_nonfinite=True)")
    scale = max_norm / (total + 1e-6)
    if not scale >= 1:  # NaN too: every gradient becomes NaN, as PyTorch's
        for g in grads:
            g *= scale
    return total
