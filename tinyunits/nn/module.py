"""Moved: Module and Parameter live in tinyunits/module.py, Sequential in nn/layers.py."""
from ..module import Module, Parameter  # noqa: F401
from .layers import Sequential  # noqa: F401
