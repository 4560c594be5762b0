"""Deprecated: Module and Parameter live in tinyunits/module.py (below nn and the units,
so that imports run one way), Sequential in nn/layers.py; import them from tinyunits.nn.

Importing this warns, then gives the same objects.
"""
import warnings

from ..module import Module, Parameter  # noqa: F401
from .layers import Sequential  # noqa: F401

warnings.warn("tinyunits.nn.module is deprecated: import Module, Parameter and Sequential "
              "from tinyunits.nn (they live in tinyunits/module.py and nn/layers.py)",
              DeprecationWarning, stacklevel=2)
