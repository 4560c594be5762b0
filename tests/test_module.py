"""The Module system (tinyunits/module.py): registration in order, shared parameters
listed once, modes, state dicts and repr; over every Module of nn: what a module
registers and what it refuses in its place (a tensor or None for a parameter, a list
that would hide parameters, a non-array for a buffer), train/eval and astype, the changes
a module makes that backward then refuses, and state_dict / load_state_dict (a dtype round
trip keeps what float32 holds, a non-finite or misshapen entry is refused)."""
import inspect
import re

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, optim
from layers_support import LAYERS
from ops_support import sgd_step

host = tu.backend.to_host


# ------------------------------------------------------------- registration, modes, state
def test_parameters_are_registered_in_order_and_counted():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2, bias=False))
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight"]
    assert model.num_parameters() == 4 * 3 + 3 + 3 * 2


def test_shared_parameter_listed_once():
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.Tanh(), shared)
    assert len(model.parameters()) == 2 and model.num_parameters() == 12


def test_train_eval_reaches_every_submodule():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    model.eval()
    assert all(not m.training for _, m in model.named_modules())
    model.train()
    assert all(m.training for _, m in model.named_modules())


def test_forgetting_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.zeros(2))
    with pytest.raises(RuntimeError, match=re.escape("call super().__init__()")):
        Broken()


def test_state_dict_round_trip_includes_buffers():
    a, b = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    a(tu.tensor(np.random.default_rng(0).normal(size=(8, 3))))
    b.load_state_dict(a.state_dict())
    assert set(a.state_dict()) == {"weight", "bias", "running_mean", "running_var"}
    np.testing.assert_array_equal(tu.backend.to_host(b.running_mean), tu.backend.to_host(a.running_mean))


def test_load_state_dict_names_missing_keys_and_wrong_shapes():
    model = nn.Linear(3, 2)
    with pytest.raises(KeyError, match="missing keys \\['bias'\\]"):
        model.load_state_dict({"weight": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"weight has shape \(3, 3\).*\(2, 3\)"):
        model.load_state_dict({"weight": np.zeros((3, 3)), "bias": np.zeros(2)})


def test_astype_casts_parameters_and_buffers():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).astype("float64")
    assert all(a.dtype == np.float64 for a in model.state_dict().values())


def test_repr_is_nested_and_readable():
    text = repr(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU()))
    assert "(0): Conv2d(1, 4, kernel_size=3, stride=1, padding=1)" in text and "(1): ReLU()" in text


# -------------------------------------------------------------------------- every Module of nn
# every Module in nn: name -> (make, input shape)
MODULES = {
    "Linear": (lambda: nn.Linear(3, 2), (4, 3)),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), (2, 2, 4, 4)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3), (4, 3)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), (2, 3, 2, 2)),
    "LayerNorm": (lambda: nn.LayerNorm(4), (2, 4)),
    "Dropout": (lambda: nn.Dropout(0.5), (4, 3)),
    "Flatten": (lambda: nn.Flatten(), (2, 3, 2)),
    "ReLU": (lambda: nn.ReLU(), (4, 3)),
    "Abs": (lambda: nn.Abs(), (4, 3)),
    "Tanh": (lambda: nn.Tanh(), (4, 3)),
    "Sigmoid": (lambda: nn.Sigmoid(), (4, 3)),
    "GELU": (lambda: nn.GELU(), (4, 3)),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.1), (4, 3)),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), (1, 2, 4, 4)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2), (1, 2, 4, 4)),
    "GlobalAvgPool2d": (lambda: nn.GlobalAvgPool2d(), (1, 2, 4, 4)),
    "DACLinear": (lambda: nn.DACLinear(3, 2), (4, 3)),
    "DACConv2d": (lambda: nn.DACConv2d(2, 3, 3), (1, 2, 5, 5)),
    "InnerNet": (lambda: nn.InnerNet(2, (4,)), (5, 2)),
    "MultiArgActivation": (lambda: nn.MultiArgActivation(nn.InnerNet(2, (4,))), (4, 6)),
    "TMAF": (lambda: nn.TMAF(3, [0.0]), (4, 3)),
    "TMAF-tridiagonal": (lambda: nn.TMAF(3, [0.0], kind="tridiagonal"), (4, 3)),
    "HanLayer": (lambda: nn.HanLayer(4), (2, 4)),
    "HanMixerBlock": (lambda: nn.HanMixerBlock(3, 4), (2, 3, 4)),
    "FocusingLinear": (lambda: nn.FocusingLinear(5, 2), (3, 5)),
    "Sequential": (lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)),
                   (4, 3)),
}


WITH_PARAMETERS = {name: case for name, case in MODULES.items() if case[0]().parameters()}


def test_every_module_is_in_the_lists():
    exported = {c for c in vars(nn).values()
                if inspect.isclass(c) and issubclass(c, nn.Module) and c is not nn.Module}
    assert exported == {type(make()) for make, _ in MODULES.values()}


# ------------------------------------- a change a module makes after forward: backward refuses
def _forward(make, shape, seed=0):
    model = make()
    x = tu.tensor(np.random.default_rng(seed).normal(size=shape), requires_grad=True)
    y = model(x)
    return model, x, (y * y).sum()


def _module_changes(model):
    changes = {"input data +=": None}
    if model.parameters():
        changes.update({
            "optimiser step": lambda m: [sgd_step(p) for p in m.parameters()],
            "load_state_dict": lambda m: m.load_state_dict(
                {k: v.copy() for k, v in m.state_dict().items()}),
            "astype": lambda m: m.astype("float64"),
        })
    if hasattr(model, "constrain"):
        changes["constrain"] = lambda m: m.constrain()
    return changes


def _module_cases():
    for name, (make, shape) in MODULES.items():
        for change in _module_changes(make()):
            yield pytest.param(make, shape, change, id=f"{name}-{change}")


@pytest.mark.parametrize("make, shape, change", list(_module_cases()))
def test_every_module_refuses_backward_after_a_change(make, shape, change):
    model, x, loss = _forward(make, shape)
    if change == "input data +=":
        x.data += 1
    else:
        _module_changes(model)[change](model)
    with pytest.raises(RuntimeError, match="was changed after"):
        loss.backward()


@pytest.mark.parametrize("make, shape", WITH_PARAMETERS.values(), ids=WITH_PARAMETERS)
def test_every_module_trains_without_a_false_alarm(make, shape):
    model, x, loss = _forward(make, shape)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    for seed in range(3):
        loss.backward()
        opt.step()
        if hasattr(model, "constrain"):
            model.constrain()
        opt.zero_grad()
        y = model(tu.tensor(np.random.default_rng(seed + 1).normal(size=shape)))
        loss = (y * y).sum()
    loss.backward()


# --------------------------------------- parameters, sub-modules, buffers and plain attributes
@pytest.mark.parametrize("value", [lambda layer: tu.tensor(layer.bias.numpy()),
                                   lambda layer: None])
def test_assigning_a_tensor_or_none_to_a_parameter_is_refused(value):
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="Linear.bias: the new value must be an nn.Parameter"):
        layer.bias = value(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"]  # was: bias dropped silently


def _owner(model, dotted):
    *path, name = dotted.split(".")
    for part in path:
        model = getattr(model, part)
    return model, name


def _parameter_cases():
    for mod, (make, _) in WITH_PARAMETERS.items():
        for name, _ in make().named_parameters():
            yield pytest.param(make, name, id=f"{mod}-{name}")


@pytest.mark.parametrize("make, dotted", list(_parameter_cases()))
def test_every_parameter_refuses_what_is_not_a_parameter(make, dotted):
    model = make()
    keys = sorted(model.state_dict())
    owner, name = _owner(model, dotted)
    p = getattr(owner, name)
    for bad in [tu.tensor(p.numpy()), None, p.numpy(), nn.ReLU()]:
        with pytest.raises(TypeError, match=f"{type(owner).__name__}.{name}: the new value "
                                            "must be an nn.Parameter"):
            setattr(owner, name, bad)
        assert getattr(owner, name) is p and sorted(model.state_dict()) == keys
    replacement = nn.Parameter(np.zeros(p.shape), dtype=str(p.dtype))
    setattr(owner, name, replacement)  # a Parameter is still welcome, and saved
    np.testing.assert_array_equal(host(model.state_dict()[dotted]), np.zeros(p.shape))


def _sub_module_cases():
    for mod, (make, _) in MODULES.items():
        for dotted, _ in list(make().named_modules())[1:]:
            yield pytest.param(make, dotted, id=f"{mod}-{dotted}")


@pytest.mark.parametrize("make, dotted", list(_sub_module_cases()))
def test_every_sub_module_refuses_what_is_not_a_module(make, dotted):
    model = make()
    keys = sorted(model.state_dict())
    owner, name = _owner(model, dotted)
    for bad in [None, tu.tensor([1.0]), nn.Parameter(np.ones(2))]:
        with pytest.raises(TypeError, match=f"{name}: the new value must be a Module"):
            setattr(owner, name, bad)
    assert sorted(model.state_dict()) == keys


def _buffer_cases():
    for mod, (make, _) in MODULES.items():
        model = make()
        names = {n for n, _ in model.named_parameters()}
        for key in sorted(set(model.state_dict()) - names):
            yield pytest.param(make, key, id=f"{mod}-{key}")


@pytest.mark.parametrize("make, dotted", list(_buffer_cases()))
def test_every_buffer_refuses_what_is_not_an_array(make, dotted):
    model = make()
    owner, name = _owner(model, dotted)
    old = getattr(owner, name)
    for bad in [None, tu.tensor(host(old)), host(old).tolist()]:
        with pytest.raises(TypeError, match=f"{name}: the new value must be an array"):
            setattr(owner, name, bad)
    setattr(owner, name, old * 1)  # a new array stays a buffer, saved
    assert dotted in model.state_dict()


def test_an_optional_buffer_may_be_none():
    layer = nn.FocusingLinear(6, 2)
    layer.prune(0.5)
    layer.mask = None  # optional: the layer is unpruned, and the checkpoint says so
    assert "mask" not in layer.state_dict()


@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, "a", None, tu.tensor([1.0])], ids=repr)
def test_a_buffer_must_be_an_array(value):
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Linear.register_buffer: extra must be an array"):
        layer.register_buffer("extra", value)  # was: kept, then save or load failed on it
    assert "extra" not in layer.state_dict()


def test_a_parameter_is_floating():
    with pytest.raises(TypeError, match="Parameter: dtype must be floating"):
        nn.Parameter(np.ones(3), dtype="int64")


class _Holder(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.held = value


HIDDEN = {
    "list of modules": lambda: [nn.Linear(2, 2), nn.Linear(2, 2)],
    "tuple of modules": lambda: (nn.Linear(2, 2),),
    "dict of modules": lambda: {"a": nn.Linear(2, 2)},
    "list of parameters": lambda: [nn.Parameter(np.ones(2))],
    "dict of parameters": lambda: {"w": nn.Parameter(np.ones(2))},
    "set of parameters": lambda: {nn.Parameter(np.ones(2))},
    "nested list": lambda: [[nn.Linear(2, 2)]],
    "list of grad tensors": lambda: [tu.tensor([1.0], requires_grad=True)],
    "grad tensor": lambda: tu.tensor([1.0, 2.0], requires_grad=True),
}


@pytest.mark.parametrize("when", ["constructor", "later"])
@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_a_module_refuses_parameters_it_could_not_register(name, when):
    with pytest.raises(TypeError, match=r"_Holder.held: the value must be what a Module "
                                        r"registers .*nn.Sequential\(\*modules\)"):
        if when == "constructor":
            _Holder(HIDDEN[name]())  # was: accepted, parameters() and state_dict() empty
        else:
            _Holder(None).held = HIDDEN[name]()


@pytest.mark.parametrize("value", [[1, 2], (3.0, "a"), {"k": [1]}, tu.tensor([1.0]), "name",
                                   [tu.tensor([1.0])], np.ones(2)], ids=repr)
def test_a_module_keeps_plain_attributes(value):
    assert _Holder(value).held is value


@pytest.mark.parametrize("make, shape", MODULES.values(), ids=MODULES)
def test_every_module_refuses_a_list_of_modules_as_a_new_attribute(make, shape):
    module = make()
    with pytest.raises(TypeError, match=f"{type(module).__name__}.extra: the value must be"):
        module.extra = [nn.Linear(2, 2)]
    assert not hasattr(module, "extra")


# ----------------------------------------------------------------------- train/eval and astype
def test_train_takes_a_bool():
    with pytest.raises(TypeError, match="Linear.train: mode must be True or False"):
        nn.Linear(2, 2).train("False")  # was: training mode, since "False" is truthy


@pytest.mark.parametrize("make, shape", MODULES.values(), ids=MODULES)
@pytest.mark.parametrize("mode", ["False", 0, 1, None, np.bool_(False)], ids=repr)
def test_every_module_train_takes_a_bool(make, shape, mode):
    model = make()
    with pytest.raises(TypeError, match=f"{type(model).__name__}.train: mode must be True "
                                        "or False"):
        model.train(mode)
    assert all(m.training for _, m in model.named_modules())
    model.eval()
    assert not any(m.training for _, m in model.named_modules())


def test_setting_training_takes_true_or_false_only():
    """`model.training = "False"` is truthy: dropout and batch norm would go on training
    where the user meant to evaluate. It is refused, naming the attribute; a bool is kept."""
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    for value in ("False", 0, None, np.bool_(False)):
        with pytest.raises(TypeError, match="Sequential.training"):
            model.training = value
        assert model.training is True
    model.training = False
    assert model.training is False
    assert model.eval().training is False and model.train().training is True


def test_module_astype_to_an_integer_dtype_is_refused():
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="Linear.astype: dtype must be a floating dtype"):
        layer.astype("int32")  # was: every weight truncated to 0
    assert layer.weight.dtype == np.float32


@pytest.mark.parametrize("make, shape", WITH_PARAMETERS.values(), ids=WITH_PARAMETERS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool", "complex128", "floot64",
                                   None, 3])
def test_every_module_astype_refuses_what_is_not_a_floating_dtype(make, shape, dtype):
    model = make()
    before = {k: host(v).copy() for k, v in model.state_dict().items()}
    with pytest.raises(TypeError, match=f"{type(model).__name__}.astype: dtype must be a "
                                        "floating dtype"):
        model.astype(dtype)
    for k, v in model.state_dict().items():
        assert v.dtype == before[k].dtype
        np.testing.assert_array_equal(host(v), before[k])
    model.astype("float64")
    assert all(p.dtype == np.float64 for p in model.parameters())


# -------------------------------------------------------------- state_dict and load_state_dict
def test_a_buffer_assigned_anew_is_still_saved():
    bn = nn.BatchNorm1d(2)
    bn.running_mean = tu.backend.asarray(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(host(bn.state_dict()["running_mean"]), [1.0, 2.0])


def test_mask_of_wrong_shape_is_refused_before_anything_changes(tmp_path):
    layer = nn.FocusingLinear(6, 2)
    state = {k: host(v) for k, v in layer.state_dict().items()}
    state["weight"] = state["weight"] + 1
    state["mask"] = np.ones((2, 5), np.float32)
    before = host(layer.weight.data).copy()
    with pytest.raises(ValueError, match="mask has shape"):
        layer.load_state_dict(state)
    np.testing.assert_array_equal(host(layer.weight.data), before)
    assert layer.mask is None


@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in LAYERS]
                         + [pytest.param(lambda: _pruned(), (3, 6), id="FocusingLinear-pruned")])
def test_float64_float32_float64_keeps_what_float32_holds_and_every_breakpoint(make, shape,
                                                                               float64):
    layer = make()
    x = tu.tensor(np.random.default_rng(10).normal(size=shape))
    layer(x)  # running statistics move
    for name, a in layer.state_dict().items():  # every value a float32 number, but breakpoints
        if name != "breakpoints":
            a[...] = a.astype("float32")
    before = {k: host(v).copy() for k, v in layer.state_dict().items()}
    y = host(layer.eval()(x).data)
    layer.astype("float32").astype("float64")
    after = {k: host(v) for k, v in layer.state_dict().items()}
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
        assert after[k].dtype == before[k].dtype, k
    np.testing.assert_array_equal(host(layer(x).data), y)


def _pruned():
    layer = nn.FocusingLinear(6, 2, sigma_init=0.1)
    layer.prune(0.5)
    return layer


@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in LAYERS])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_every_unit_refuses_to_load_a_non_finite_parameter(make, shape, value):
    layer = make()
    name = next(iter(dict(layer.named_parameters())))
    state = {k: host(v).copy() for k, v in layer.state_dict().items()}
    state[name].flat[0] = value
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        layer.load_state_dict(state)  # was loaded: the model then computed NaN
    assert np.isfinite(host(dict(layer.named_parameters())[name].data)).all()
