"""What a model is built from, PyTorch's nn: the Module system (tinyunits/module.py), the
standard layers, the five paper units (tinyunits/units/), functional and init."""
from .. import init
from ..module import Module, Parameter
from ..units import *  # noqa: F401,F403  (DACLinear, InnerNet, TMAF, HanLayer, ...)
from . import functional
from .layers import (GELU, Abs, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, Dropout,
                     Flatten, GlobalAvgPool2d, LayerNorm, LeakyReLU, Linear, MaxPool2d,
                     ReLU, Sequential, Sigmoid, Tanh)
