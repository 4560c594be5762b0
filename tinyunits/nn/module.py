"""Moved: Module, Parameter and Sequential live in tinyunits/module.py."""
from ..module import Module, Parameter, Sequential  # noqa: F401
