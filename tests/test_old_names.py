"""Old names of moved modules: the units' (tinyunits/units/multiarg.py, focus.py, han.py,
han_measures.py), nn.module, and tinyunits.threads/buffers/blas/checks. Each warns that
it is deprecated, naming the new module, and gives that module's objects, so user code
written against the old names runs on."""
import importlib
import sys

import pytest

import tinyunits as tu
import tinyunits.units
from tinyunits import nn

# old module -> (new module, a name user code imported from it)
RENAMED = {"multiarg": ("two_argument", "MultiArgActivation"),
           "focus": ("focusing", "FocusingLinear"),
           "han": ("hannet", "HanLayer"),
           "han_measures": ("hannet_measures", "landscape")}


@pytest.mark.parametrize("old", RENAMED)
def test_an_old_module_name_warns_and_gives_the_new_modules_objects(old, monkeypatch):
    new, name = RENAMED[old]
    # imported afresh, whatever ran before; the test's end puts both entries back
    monkeypatch.delitem(sys.modules, f"tinyunits.units.{old}", raising=False)
    monkeypatch.delattr(tinyunits.units, old, raising=False)
    warning = rf"tinyunits\.units\.{old} is deprecated: import tinyunits\.units\.{new}\b"
    with pytest.warns(DeprecationWarning, match=warning):
        namespace = {}
        exec(f"from tinyunits.units.{old} import {name}", namespace)
    current = importlib.import_module(f"tinyunits.units.{new}")
    assert namespace[name] is getattr(current, name)
    assert sys.modules[f"tinyunits.units.{old}"] is current  # every other name too
    if hasattr(nn, name):
        assert namespace[name] is getattr(nn, name)


def test_nn_module_warns_and_gives_the_same_classes(monkeypatch):
    """Module and Parameter moved to tinyunits/module.py (below nn and the units)."""
    monkeypatch.delitem(sys.modules, "tinyunits.nn.module", raising=False)
    monkeypatch.delattr(nn, "module", raising=False)
    with pytest.warns(DeprecationWarning, match=r"tinyunits\.nn\.module is deprecated"):
        from tinyunits.nn.module import Module, Parameter, Sequential
    assert (Module, Parameter, Sequential) == (nn.Module, nn.Parameter, nn.Sequential)


@pytest.mark.parametrize("old,new", [("threads", "tinyunits.fast.threads"),
                                     ("buffers", "tinyunits.fast.buffers"),
                                     ("blas", "tinyunits.fast.blas"),
                                     ("checks", "tinyunits.gradcheck.cases")])
def test_a_moved_module_answers_under_its_old_name_with_a_warning(old, new):
    with pytest.warns(DeprecationWarning, match=rf"tinyunits\.{old} is deprecated: it is {new}"):
        module = getattr(tu, old)
    assert module is importlib.import_module(new)


def test_an_unknown_attribute_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'threadz'"):
        tu.threadz
