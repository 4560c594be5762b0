"""Layers and the Module system; the five paper units are re-exported here."""
from . import functional, init
from .layers import (GELU, Abs, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, Dropout,
                     Flatten, GlobalAvgPool2d, LayerNorm, LeakyReLU, Linear, MaxPool2d,
                     ReLU, Sigmoid, Tanh)
from .module import Module, Parameter, Sequential
from ..units import *  # noqa: F401,F403  (DACLinear, InnerNet, TMAF, HanLayer, ...)
